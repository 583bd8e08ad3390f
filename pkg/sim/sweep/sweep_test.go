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

package sweep

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/pkg/sim"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

func synthetic(t *testing.T, nodes int, d time.Duration) *workload.Workload {
	t.Helper()
	w, err := workload.Synthetic(workload.SyntheticParams{Seed: 2, Nodes: nodes, Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestSplit: the halves partition the nodes, the services (each still on
// its node) and the jobs, and keep the jobs in arrival order.
func TestSplit(t *testing.T) {
	w := synthetic(t, 7, 2*time.Hour)
	even, err := Split(w, Even)
	if err != nil {
		t.Fatal(err)
	}
	odd, err := Split(w, Odd)
	if err != nil {
		t.Fatal(err)
	}
	if len(even.Nodes) != 4 || len(odd.Nodes) != 3 {
		t.Errorf("halves of 7 nodes: %d and %d, want 4 and 3", len(even.Nodes), len(odd.Nodes))
	}
	for _, h := range []*workload.Workload{even, odd} {
		for _, s := range h.Services {
			if !strings.HasPrefix(s.Name, "svc-"+h.Nodes[s.Node].Name+"-") {
				t.Errorf("%s: service %s is on %s", h.Name, s.Name, h.Nodes[s.Node].Name)
			}
		}
		if !slices.IsSortedFunc(h.Jobs, func(a, b workload.Job) int { return int(a.Arrival - b.Arrival) }) {
			t.Errorf("%s: jobs out of arrival order", h.Name)
		}
	}
	if got, want := len(even.Services)+len(odd.Services), len(w.Services); got != want {
		t.Errorf("services in the halves: %d, want %d", got, want)
	}
	names := map[string]bool{}
	for _, h := range []*workload.Workload{even, odd} {
		for _, j := range h.Jobs {
			if names[j.Name] {
				t.Errorf("job %s in both halves", j.Name)
			}
			names[j.Name] = true
		}
	}
	if len(names) != len(w.Jobs) {
		t.Errorf("jobs in the halves: %d, want %d", len(names), len(w.Jobs))
	}
	if _, err := Split(w, Half(2)); err == nil || !strings.Contains(err.Error(), "half 2") {
		t.Errorf("half 2: error %v, want one naming it", err)
	}
	if _, err := Split(synthetic(t, 1, time.Hour), Even); err == nil {
		t.Error("splitting one node: want an error")
	}
}

// TestDefaultSettingIsTheDefaults: Waterline at DefaultSetting runs
// exactly as Waterline at the simulation's defaults, so the sweep's
// "defaults" row is what `waterline sim` reports.
func TestDefaultSettingIsTheDefaults(t *testing.T) {
	w := synthetic(t, 6, 3*time.Hour)
	plain, err := sim.Run(t.Context(), sim.Config{Policies: []sim.Policy{sim.PolicyWaterline}, Seed: 2}, w)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{Policies: []sim.Policy{sim.PolicyWaterline}, Seed: 2}
	DefaultSetting().Apply(&cfg)
	set, err := sim.Run(t.Context(), cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(plain.Policies[0].Summary, set.Policies[0].Summary); diff != "" {
		t.Errorf("summary (-defaults +DefaultSetting):\n%s", diff)
	}
	// And a setting does change the run.
	cfg = sim.Config{Policies: []sim.Policy{sim.PolicyWaterline}, Seed: 2}
	Grid([]int32{90}, []int32{95})[0].Apply(&cfg)
	raised, err := sim.Run(t.Context(), cfg, w)
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Equal(raised.Policies[0].Summary, plain.Policies[0].Summary) {
		t.Error("lines 90/100 and thresholds 95 ran exactly as the defaults")
	}
}

func TestSettingValidate(t *testing.T) {
	bad := Setting{ForbidPercent: 80, ThrottlePercent: 70, RestorePercent: 75, EvictPercent: 70, BatchPercent: 101, LoadAwarePercent: 0}
	errs := bad.Validate(field.NewPath("s"))
	for _, want := range []string{"s.forbidPercent", "s.evictPercent", "s.restorePercent", "s.batchPercent", "s.loadAwarePercent"} {
		if !strings.Contains(errs.ToAggregate().Error(), want) {
			t.Errorf("errors %v do not name %s", errs, want)
		}
	}
	if errs := DefaultSetting().Validate(field.NewPath("s")); len(errs) > 0 {
		t.Errorf("the defaults are invalid: %v", errs)
	}
	for _, s := range Grid([]int32{70, 99}, []int32{65, 100}) {
		if errs := s.Validate(field.NewPath("s")); len(errs) > 0 {
			t.Errorf("grid point %s is invalid: %v", s, errs)
		}
	}
}

// TestRunChooses: the chosen setting is the one with the most work among
// those within the train half's budget, and the test halves report it.
func TestRunChooses(t *testing.T) {
	res, err := Run(t.Context(), Options{
		Workloads: []string{workload.KindSynthetic}, Nodes: 8, Duration: 3 * time.Hour,
		TestSeeds: []int64{1}, Grid: Grid([]int32{80, 90}, []int32{85, 95}),
	})
	if err != nil {
		t.Fatal(err)
	}
	tr := res.Workloads[0].Train
	if len(tr.Points) != 5 || tr.Points[0].Setting != DefaultSetting() {
		t.Fatalf("train points %+v: want the defaults then 4 settings", tr.Points)
	}
	c := tr.Points[tr.Chosen]
	for _, p := range tr.Points {
		if p.WithinBudget != (p.HarmPercent <= tr.BudgetPercent) {
			t.Errorf("%s: within budget %v at %.3f %% harm, budget %.3f %%", p.Setting, p.WithinBudget, p.HarmPercent, tr.BudgetPercent)
		}
		if p.WithinBudget && c.WithinBudget && p.WorkCoreHours > c.WorkCoreHours {
			t.Errorf("chose %s (%.1f core-h) over %s (%.1f core-h), both within budget", c.Setting, c.WorkCoreHours, p.Setting, p.WorkCoreHours)
		}
		if p.WithinBudget && !c.WithinBudget {
			t.Errorf("chose %s, over budget, while %s is within", c.Setting, p.Setting)
		}
	}
	ts := res.Workloads[0].Tests[0]
	if ts.K8sBestEffort.WorkCoreHours == 0 || ts.Oracle.WorkCoreHours == 0 || ts.WaterlineChosen.WorkCoreHours == 0 {
		t.Errorf("empty test figures: %+v", ts)
	}
	if ts.HeadroomZero > ts.OfferedWork || ts.HeadroomBudget < ts.HeadroomZero {
		t.Errorf("headroom %.1f (budget %.1f) against offered %.1f: the no-harm bound must be at most the offered work and at most the budget's", ts.HeadroomZero, ts.HeadroomBudget, ts.OfferedWork)
	}
	if ts.OracleBudgetWork < ts.Oracle.WorkCoreHours {
		t.Errorf("oracle within the budget %.1f < at no harm %.1f", ts.OracleBudgetWork, ts.Oracle.WorkCoreHours)
	}
}
