/*
Copyright The Waterline Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package bandpreemption

import (
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	frameworkpreemption "k8s.io/kubernetes/pkg/scheduler/framework/preemption"
)

// pluginInterfaces are every interface the framework calls a plugin
// through (k8s.io/kube-scheduler/framework and the in-tree framework
// package), by name.
var pluginInterfaces = map[string]reflect.Type{
	"PreEnqueuePlugin":         reflect.TypeFor[fwk.PreEnqueuePlugin](),
	"QueueSortPlugin":          reflect.TypeFor[fwk.QueueSortPlugin](),
	"EnqueueExtensions":        reflect.TypeFor[fwk.EnqueueExtensions](),
	"PreFilterPlugin":          reflect.TypeFor[fwk.PreFilterPlugin](),
	"FilterPlugin":             reflect.TypeFor[fwk.FilterPlugin](),
	"PostFilterPlugin":         reflect.TypeFor[fwk.PostFilterPlugin](),
	"PreScorePlugin":           reflect.TypeFor[fwk.PreScorePlugin](),
	"ScorePlugin":              reflect.TypeFor[fwk.ScorePlugin](),
	"ReservePlugin":            reflect.TypeFor[fwk.ReservePlugin](),
	"PreBindPlugin":            reflect.TypeFor[fwk.PreBindPlugin](),
	"PostBindPlugin":           reflect.TypeFor[fwk.PostBindPlugin](),
	"PermitPlugin":             reflect.TypeFor[fwk.PermitPlugin](),
	"BindPlugin":               reflect.TypeFor[fwk.BindPlugin](),
	"SignPlugin":               reflect.TypeFor[fwk.SignPlugin](),
	"PlacementGeneratePlugin":  reflect.TypeFor[fwk.PlacementGeneratePlugin](),
	"PlacementScorePlugin":     reflect.TypeFor[fwk.PlacementScorePlugin](),
	"PodGroupPostFilterPlugin": reflect.TypeFor[framework.PodGroupPostFilterPlugin](),
}

func methods(t reflect.Type) []string {
	var names []string
	for i := range t.NumMethod() {
		names = append(names, t.Method(i).Name)
	}
	return names
}

// TestUpstreamSurface fails when a Kubernetes bump changes what
// DefaultPreemption offers, so that BandPreemption, which wraps it, is
// reviewed instead of silently missing a new extension point or hook.
func TestUpstreamSurface(t *testing.T) {
	dp := reflect.TypeFor[*defaultpreemption.DefaultPreemption]()
	bp := reflect.TypeFor[*BandPreemption]()
	hooks := reflect.TypeFor[*evaluatorHooks]()

	t.Run("extension points: forwarded or rejected", func(t *testing.T) {
		for name, iface := range pluginInterfaces {
			upstream, ours := dp.Implements(iface), bp.Implements(iface)
			var rejected bool
			for i := range iface.NumMethod() {
				if _, ok := rejectedUpstream[iface.Method(i).Name]; ok {
					rejected = true
				}
			}
			switch {
			case upstream && rejected && ours:
				t.Errorf("BandPreemption implements %s, which rejectedUpstream says it must not", name)
			case upstream && !rejected && !ours:
				t.Errorf("DefaultPreemption implements %s and BandPreemption neither forwards nor rejects it: forward it or add it to rejectedUpstream with why", name)
			case !upstream && ours:
				t.Errorf("BandPreemption implements %s, which DefaultPreemption no longer does", name)
			}
		}
	})

	t.Run("methods: each forwarded, a preemption hook or rejected", func(t *testing.T) {
		// Every exported method of DefaultPreemption is either an extension
		// point BandPreemption forwards, a hook evaluatorHooks forwards to
		// (frameworkpreemption.Interface), or rejected with a reason. A new
		// method -- a new hook, a new extension point -- fails here.
		hookMethods := methods(reflect.TypeFor[frameworkpreemption.Interface]())
		for _, m := range methods(dp) {
			_, rejected := rejectedUpstream[m]
			_, forwarded := bp.MethodByName(m)
			_, hooked := hooks.MethodByName(m)
			switch {
			case rejected && (forwarded || hooked):
				t.Errorf("%s is both rejected and implemented", m)
			case rejected:
			case forwarded:
			case hooked && slices.Contains(hookMethods, m):
			default:
				t.Errorf("DefaultPreemption.%s is new or changed: BandPreemption neither forwards nor rejects it", m)
			}
		}
		for m := range rejectedUpstream {
			if _, ok := dp.MethodByName(m); !ok {
				t.Errorf("rejectedUpstream names %s, which DefaultPreemption no longer has: drop it", m)
			}
		}
	})

	t.Run("exported fields", func(t *testing.T) {
		// BandPreemption sets Evaluator (our hooks) and IsEligiblePod, and
		// hands Executor to its evaluator; MoreImportantPod stays upstream's.
		// A new exported field is a new hook to decide about.
		var got []string
		st := dp.Elem()
		for i := range st.NumField() {
			if f := st.Field(i); f.IsExported() {
				got = append(got, f.Name+" "+f.Type.String())
			}
		}
		want := []string{
			"Executor *preemption.Executor",
			"Evaluator *preemption.Evaluator",
			"IsEligiblePod defaultpreemption.IsEligiblePodFunc",
			"MoreImportantPod defaultpreemption.MoreImportantPodFunc",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("DefaultPreemption's exported fields changed (-want +got): review what BandPreemption sets:\n%s", diff)
		}
	})
}
