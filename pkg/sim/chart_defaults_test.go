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

package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"sigs.k8s.io/yaml"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// TestDefaultsAreTheChartDefaults holds the simulator to what a user
// installs: `make demo` reports Waterline "with the chart's defaults", so
// the NodeQOS lines and the LoadAware weight it simulates must be the
// chart's values (only dryRun differs: the chart installs in dry run, the
// simulation acts).
func TestDefaultsAreTheChartDefaults(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "charts", "waterline", "values.yaml"))
	if err != nil {
		t.Fatalf("reading the chart's values: %v", err)
	}
	var values struct {
		NodeQOS struct {
			Spec v1alpha1.NodeQOSSpec `json:"spec"`
		} `json:"nodeQOS"`
		Scheduler struct {
			LoadAwareWeight int `json:"loadAwareWeight"`
		} `json:"scheduler"`
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatalf("parsing the chart's values: %v", err)
	}
	chart := values.NodeQOS.Spec
	chart.DryRun = false
	sim := DefaultNodeQOS()[0].Spec
	if diff := cmp.Diff(chart, sim); diff != "" {
		t.Errorf("the simulator's NodeQOS is not the chart's nodeQOS.spec (-chart +sim):\n%s", diff)
	}
	if values.Scheduler.LoadAwareWeight != DefaultLoadAwareWeight {
		t.Errorf("DefaultLoadAwareWeight = %d, the chart's scheduler.loadAwareWeight is %d", DefaultLoadAwareWeight, values.Scheduler.LoadAwareWeight)
	}
}

// TestDefaultPriorityClassesAreShipped holds DefaultPriorityClasses to the
// classes config/priorityclasses ships: what preemption reads of them
// (value, preemptionPolicy, the Waterline annotations).
func TestDefaultPriorityClassesAreShipped(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "priorityclasses", "priorityclasses.yaml"))
	if err != nil {
		t.Fatalf("reading the shipped PriorityClasses: %v", err)
	}
	type class struct {
		Name             string
		Value            int32
		PreemptionPolicy string
		Annotations      map[string]string
	}
	of := func(pc *schedulingv1.PriorityClass) class {
		c := class{Name: pc.Name, Value: pc.Value}
		if pc.PreemptionPolicy != nil {
			c.PreemptionPolicy = string(*pc.PreemptionPolicy)
		}
		for k, v := range pc.Annotations {
			if strings.HasPrefix(k, "waterline.dev/") {
				if c.Annotations == nil {
					c.Annotations = map[string]string{}
				}
				c.Annotations[k] = v
			}
		}
		return c
	}
	var shipped []class
	for doc := range strings.SplitSeq(string(raw), "\n---\n") {
		var pc schedulingv1.PriorityClass
		if err := yaml.Unmarshal([]byte(doc), &pc); err != nil {
			t.Fatalf("parsing a shipped PriorityClass: %v", err)
		}
		if pc.Name != "" {
			shipped = append(shipped, of(&pc))
		}
	}
	var sim []class
	for _, pc := range DefaultPriorityClasses() {
		sim = append(sim, of(&pc))
	}
	if diff := cmp.Diff(shipped, sim); diff != "" {
		t.Errorf("DefaultPriorityClasses are not config/priorityclasses (-shipped +sim):\n%s", diff)
	}
}
