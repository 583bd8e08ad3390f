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
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
)

// TestSampleConfigs loads the shipped scheduler configurations the way
// kube-scheduler does, builds the real framework from them with the
// in-tree plugins and BandPreemption, and checks which PostFilter runs.
func TestSampleConfigs(t *testing.T) {
	tests := []struct {
		file           string
		wantPostFilter []string
		wantArgs       *config.BandPreemptionArgs
	}{
		// DynamicResources' PostFilter only releases claims it allocated; it
		// preempts nobody.
		{file: "bandpreemption-disabled.yaml", wantPostFilter: []string{"DynamicResources"}},
		{
			file:           "bandpreemption-enabled.yaml",
			wantPostFilter: []string{"DynamicResources", Name},
			wantArgs:       &config.BandPreemptionArgs{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			logger, ctx := ktesting.NewTestContext(t)
			cfg, err := options.LoadConfigFromFile(logger, filepath.Join("..", "..", "..", "..", "config", "scheduler", tt.file))
			if err != nil {
				t.Fatalf("Loading %s: %v", tt.file, err)
			}
			if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
				t.Fatalf("Validating %s: %v", tt.file, err)
			}
			if len(cfg.Profiles) != 1 {
				t.Fatalf("%s has %d profiles, want 1", tt.file, len(cfg.Profiles))
			}
			profile := &cfg.Profiles[0]
			var gotArgs *config.BandPreemptionArgs
			for _, pc := range profile.PluginConfig {
				if pc.Name == Name {
					a, ok := pc.Args.(*config.BandPreemptionArgs)
					if !ok {
						t.Fatalf("BandPreemption args decoded as %T", pc.Args)
					}
					gotArgs = a
				}
			}
			if diff := cmp.Diff(tt.wantArgs, gotArgs, cmpIgnoreTypeMeta); diff != "" {
				t.Errorf("BandPreemption args (-want +got):\n%s", diff)
			}

			registry := plugins.NewInTreeRegistry()
			if err := registry.Register(Name, New); err != nil {
				t.Fatal(err)
			}
			client := clientsetfake.NewClientset()
			factory := informers.NewSharedInformerFactory(client, 0)
			fw, err := frameworkruntime.NewFramework(ctx, registry, profile,
				frameworkruntime.WithClientSet(client),
				frameworkruntime.WithInformerFactory(factory),
				frameworkruntime.WithEventRecorder(events.NewFakeRecorder(10)),
				frameworkruntime.WithLogger(logger),
				frameworkruntime.WithSnapshotSharedLister(internalcache.NewEmptySnapshot()),
			)
			if err != nil {
				t.Fatalf("Building the framework of %s: %v", tt.file, err)
			}
			var gotPostFilter []string
			for _, p := range fw.ListPlugins().PostFilter.Enabled {
				gotPostFilter = append(gotPostFilter, p.Name)
			}
			if diff := cmp.Diff(tt.wantPostFilter, gotPostFilter); diff != "" {
				t.Errorf("PostFilter plugins of %s (-want +got):\n%s", tt.file, diff)
			}
		})
	}
}

var cmpIgnoreTypeMeta = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".TypeMeta" }, cmp.Ignore())
