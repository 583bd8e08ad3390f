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
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// spread is the mean, minimum and maximum of values over test seeds.
type spread struct{ mean, lo, hi float64 }

func over(tests []Test, f func(*Test) float64) spread {
	var s spread
	for i := range tests {
		v := f(&tests[i])
		if i == 0 || v < s.lo {
			s.lo = v
		}
		if i == 0 || v > s.hi {
			s.hi = v
		}
		s.mean += v
	}
	if len(tests) > 0 {
		s.mean /= float64(len(tests))
	}
	return s
}

func (s spread) format(unit string, prec int) string {
	if s.lo == s.hi {
		return fmt.Sprintf("%.*f%s", prec, s.mean, unit)
	}
	return fmt.Sprintf("%.*f%s (%.*f–%.*f)", prec, s.mean, unit, prec, s.lo, prec, s.hi)
}

// stronger is the test's stronger baseline's figures.
func (t *Test) stronger() Figures {
	if t.Stronger == "k8s-default" {
		return t.K8sDefault
	}
	return t.K8sBestEffort
}

// ratio is v ÷ the stronger baseline's work of the same seed.
func ratio(tests []Test, v func(*Test) float64) spread {
	return over(tests, func(t *Test) float64 {
		base := t.stronger().WorkCoreHours
		if base == 0 {
			return 0
		}
		return v(t) / base
	})
}

// WriteMarkdown writes the verdict table, then per workload the test
// halves' figures and the train half's grid.
func WriteMarkdown(w io.Writer, res *Result) error {
	o := res.Options
	var b strings.Builder
	seeds := make([]string, len(o.TestSeeds))
	for i, s := range o.TestSeeds {
		seeds[i] = fmt.Sprint(s)
	}
	fmt.Fprintf(&b, "Chosen on the even half (nodes and jobs) of seed %d, reported on the odd halves of seeds %s; %d nodes split in two, %s. "+
		"Work is batch+mid core-hours ÷ the stronger baseline's on the same half and seed; harm is Prod SLO-violation time; "+
		"the budget is %.0f %% of the stronger baseline's harm. Mean over the test seeds, (min–max).\n\n",
		o.TrainSeed, strings.Join(seeds, ", "), o.Nodes, o.Duration, 100*o.BudgetFraction)
	b.WriteString("| workload | stronger baseline: work, harm | budget | bound, any policy: no harm / within budget / within budget, Prod starved where over | oracle: no harm / within budget | waterline, defaults: work, harm | waterline, chosen: work, harm | chosen setting |\n")
	b.WriteString("|---|---|---:|---|---|---|---|---|\n")
	for i := range res.Workloads {
		wr := &res.Workloads[i]
		ts := wr.Tests
		fmt.Fprintf(&b, "| %s | %s core-h, %s | %s | ×%s / ×%s / ×%s | ×%s / ×%s | ×%s, %s | ×%s, %s | %s |\n",
			wr.Workload,
			over(ts, func(t *Test) float64 { return t.stronger().WorkCoreHours }).format("", 0),
			over(ts, func(t *Test) float64 { return t.stronger().HarmPercent }).format(" %", 2),
			over(ts, func(t *Test) float64 { return t.BudgetPercent }).format(" %", 2),
			ratio(ts, func(t *Test) float64 { return t.HeadroomZero }).format("", 2),
			ratio(ts, func(t *Test) float64 { return t.HeadroomBudget }).format("", 2),
			ratio(ts, func(t *Test) float64 { return t.HeadroomStarving }).format("", 2),
			ratio(ts, func(t *Test) float64 { return t.Oracle.WorkCoreHours }).format("", 2),
			ratio(ts, func(t *Test) float64 { return t.OracleBudgetWork }).format("", 2),
			ratio(ts, func(t *Test) float64 { return t.WaterlineDefault.WorkCoreHours }).format("", 2),
			over(ts, func(t *Test) float64 { return t.WaterlineDefault.HarmPercent }).format(" %", 3),
			ratio(ts, func(t *Test) float64 { return t.WaterlineChosen.WorkCoreHours }).format("", 2),
			over(ts, func(t *Test) float64 { return t.WaterlineChosen.HarmPercent }).format(" %", 3),
			wr.Train.Points[wr.Train.Chosen].Setting)
	}
	for i := range res.Workloads {
		writeWorkload(&b, &res.Workloads[i])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeWorkload(b *strings.Builder, wr *WorkloadResult) {
	ts := wr.Tests
	fmt.Fprintf(b, "\n#### %s\n\n", wr.Workload)
	fmt.Fprintf(b, "Test halves (%s, odd half):\n\n", strings.TrimSuffix(wr.Name, ", even half"))
	b.WriteString("| | batch+mid core-h | Prod SLO-violation time |\n|---|---:|---:|\n")
	row := func(name string, work, harm func(*Test) float64) {
		h := "-"
		if harm != nil {
			h = over(ts, harm).format(" %", 3)
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", name, over(ts, work).format("", 0), h)
	}
	row("k8s-default", func(t *Test) float64 { return t.K8sDefault.WorkCoreHours }, func(t *Test) float64 { return t.K8sDefault.HarmPercent })
	row("k8s-besteffort", func(t *Test) float64 { return t.K8sBestEffort.WorkCoreHours }, func(t *Test) float64 { return t.K8sBestEffort.HarmPercent })
	fmt.Fprintf(b, "| harm budget (%s) | | %s |\n", ts[0].Stronger, over(ts, func(t *Test) float64 { return t.BudgetPercent }).format(" %", 3))
	row("offered by the jobs (most any policy can run)", func(t *Test) float64 { return t.OfferedWork }, nil)
	row("CPU any policy can give non-Prod pods without harm (Σ node-step limits)", func(t *Test) float64 { return t.HeadroomCapacity }, nil)
	row("bound, any policy, no harm (the lesser of the two above)", func(t *Test) float64 { return t.HeadroomZero }, nil)
	row("bound, any policy, within the budget", func(t *Test) float64 { return t.HeadroomBudget }, nil)
	row("bound, any policy, within the budget, Prod starved where over", func(t *Test) float64 { return t.HeadroomStarving }, nil)
	row("oracle (k8s-besteffort's placement), no harm", func(t *Test) float64 { return t.Oracle.WorkCoreHours }, func(t *Test) float64 { return t.Oracle.HarmPercent })
	row("oracle, within the budget (step by step)", func(t *Test) float64 { return t.OracleBudgetWork }, nil)
	row("waterline, defaults", func(t *Test) float64 { return t.WaterlineDefault.WorkCoreHours }, func(t *Test) float64 { return t.WaterlineDefault.HarmPercent })
	row("waterline, chosen: "+wr.Train.Points[wr.Train.Chosen].Setting.String(), func(t *Test) float64 { return t.WaterlineChosen.WorkCoreHours }, func(t *Test) float64 { return t.WaterlineChosen.HarmPercent })

	tr := &wr.Train
	fmt.Fprintf(b, "\nTrain half (seed %d, even half): k8s-default %.0f core-h at %.3f %%, k8s-besteffort %.0f core-h at %.3f %%; budget %.3f %% (%s).\n\n",
		tr.Seed, tr.K8sDefault.WorkCoreHours, tr.K8sDefault.HarmPercent, tr.K8sBestEffort.WorkCoreHours, tr.K8sBestEffort.HarmPercent, tr.BudgetPercent, tr.Stronger)
	b.WriteString("| setting | batch+mid core-h | Prod SLO-violation time | within budget |\n|---|---:|---:|---|\n")
	for i, p := range tr.Points {
		name := p.Setting.String()
		if i == 0 {
			name += " (defaults)"
		}
		if i == tr.Chosen {
			name = "**" + name + "** (chosen)"
		}
		within := "no"
		if p.WithinBudget {
			within = "yes"
		}
		fmt.Fprintf(b, "| %s | %.0f | %.3f %% | %s |\n", name, p.WorkCoreHours, p.HarmPercent, within)
	}
}

// WriteJSON writes res as indented JSON.
func WriteJSON(w io.Writer, res *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}
