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

package qos

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

func TestReportNodeQOS(t *testing.T) {
	sel := func(pool string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}}
	}
	all := []v1alpha1.NodeQOS{
		*nodeQOS("throttle-colo", func(s *v1alpha1.NodeQOSSpec) {
			s.NodeSelector = sel("colo")
			s.CPU = &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To[int32](70)}
		}),
		*nodeQOS("evict-all", func(s *v1alpha1.NodeQOSSpec) {
			s.CPU = &v1alpha1.CPUWaterlines{EvictPercent: ptr.To[int32](50)}
		}),
		*nodeQOS("bad", func(s *v1alpha1.NodeQOSSpec) {
			s.NodeSelector = sel("web")
			s.Eviction = &v1alpha1.EvictionPolicy{MaxPerMinute: ptr.To[int32](0)}
		}),
		*nodeQOS("nobody", func(s *v1alpha1.NodeQOSSpec) { s.NodeSelector = sel("none") }),
	}
	nodes := []NodeView{
		{Name: "c2", Labels: map[string]string{"pool": "colo"}, Capacity: node10},
		{Name: "c1", Labels: map[string]string{"pool": "colo"}, Capacity: node10},
		{Name: "w1", Labels: map[string]string{"pool": "web"}, Capacity: node10},
	}
	got := ReportNodeQOS(all, nodes)
	type short struct {
		Matched      int32
		InvalidNodes int
		Overlaps     []string
		Refused      []string
	}
	summary := map[string]short{}
	for name, r := range got {
		summary[name] = short{r.MatchedNodes, r.InvalidNodes, r.OverlapsWith, r.RefusedNodes}
	}
	want := map[string]short{
		"throttle-colo": {2, 0, []string{"evict-all"}, []string{"c1", "c2"}},
		"evict-all":     {3, 0, []string{"bad", "throttle-colo"}, []string{"c1", "c2"}},
		"bad":           {1, 1, []string{"evict-all"}, nil},
		"nobody":        {0, 0, nil, nil},
	}
	if diff := cmp.Diff(want, summary); diff != "" {
		t.Errorf("reports (-want +got):\n%s", diff)
	}
	now := metav1.Now()
	conds := got["throttle-colo"].Conditions(nil, 3, now)
	var refused *metav1.Condition
	for i := range conds {
		if conds[i].Type == ConditionMergeRefused {
			refused = &conds[i]
		}
	}
	if refused == nil || refused.Status != metav1.ConditionTrue || !strings.Contains(refused.Message, "c1, c2") || refused.ObservedGeneration != 3 {
		t.Errorf("MergeRefused condition = %+v", refused)
	}
	if !strings.Contains(got["bad"].Invalid, "maxPerMinute") {
		t.Errorf("bad's Invalid = %q, want it to name maxPerMinute", got["bad"].Invalid)
	}
}
