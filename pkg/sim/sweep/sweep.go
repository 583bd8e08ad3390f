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

// Package sweep asks whether any setting of Waterline's knobs -- or any
// policy at all -- can meet issue 15's bar on a workload: at least the
// stronger plain baseline's Batch + Mid CPU, at most a tenth of its Prod
// harm. It chooses a setting of the CPU waterlines, the Batch threshold
// and LoadAware's CPU threshold on one half of a workload (Split) and
// reports it on the other half over several seeds, beside the two
// baselines, Waterline's defaults, the oracle policy and the Headroom
// bound (docs/design/simulator.md). It simulates; it decides nothing for
// the components.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/pkg/sim"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// Options say what to sweep. Every field is documented with its range and
// default; WithDefaults fills unset fields and Validate lists every bad
// one.
type Options struct {
	// Workloads are workload.Load specs (a kind or a path). Default the
	// four shipped kinds.
	Workloads []string `json:"workloads"`
	// Nodes is the size of the whole workload, split into two halves of
	// about Nodes ÷ 2 (≥ 4). Default 100.
	Nodes int `json:"nodes"`
	// Duration is the simulated time (≥ the step). Default 24h.
	Duration time.Duration `json:"duration"`
	// TrainSeed is the seed of the workload whose even half the setting is
	// chosen on. Default 1.
	TrainSeed int64 `json:"trainSeed"`
	// TestSeeds are the seeds of the workloads whose odd halves the choice
	// is reported on (the train seed may be one: its odd half shares no
	// node or job with its even half). Default 1, 2, 3.
	TestSeeds []int64 `json:"testSeeds"`
	// Grid are the settings tried on the train half. The defaults
	// (DefaultSetting) are always tried too. Default Grid({70, 75, 80,
	// 90}, {65, 75, 85, 95}).
	Grid []Setting `json:"grid"`
	// BudgetFraction is the harm budget as a share of the stronger
	// baseline's Prod SLO-violation time, (0, 1]. Default 0.1 (issue 15).
	BudgetFraction float64 `json:"budgetFraction"`
	// Parallel is how many simulations run at once (≥ 1). Default
	// GOMAXPROCS.
	Parallel int `json:"-"`
	// SearchFrom is where shared/traces is looked up from (upwards).
	SearchFrom string `json:"-"`
	// Progress, when set, is told each simulation as it finishes.
	Progress func(done, total int, what string) `json:"-"`
}

// WithDefaults returns o with every unset field at its default.
func (o Options) WithDefaults() Options {
	if len(o.Workloads) == 0 {
		o.Workloads = slices.Clone(workload.Kinds)
	}
	if o.Nodes == 0 {
		o.Nodes = 100
	}
	if o.Duration == 0 {
		o.Duration = 24 * time.Hour
	}
	if o.TrainSeed == 0 {
		o.TrainSeed = 1
	}
	if len(o.TestSeeds) == 0 {
		o.TestSeeds = []int64{1, 2, 3}
	}
	if len(o.Grid) == 0 {
		o.Grid = Grid([]int32{70, 75, 80, 90}, []int32{65, 75, 85, 95})
	}
	if o.BudgetFraction == 0 {
		o.BudgetFraction = 0.1
	}
	if o.Parallel == 0 {
		o.Parallel = runtime.GOMAXPROCS(0)
	}
	return o
}

// Validate returns every bad field.
func (o *Options) Validate() field.ErrorList {
	var errs field.ErrorList
	root := field.NewPath("sweep")
	if o.Nodes < 4 {
		errs = append(errs, field.Invalid(root.Child("nodes"), o.Nodes, "must be at least 4 (two halves of two)"))
	}
	if o.Duration < 10*time.Second {
		errs = append(errs, field.Invalid(root.Child("duration"), o.Duration.String(), "must be at least one 10s step"))
	}
	for i, s := range o.Grid {
		errs = append(errs, s.Validate(root.Child("grid").Index(i))...)
	}
	if !(o.BudgetFraction > 0 && o.BudgetFraction <= 1) {
		errs = append(errs, field.Invalid(root.Child("budgetFraction"), o.BudgetFraction, "must be in (0, 1]"))
	}
	if o.Parallel < 1 {
		errs = append(errs, field.Invalid(root.Child("parallel"), o.Parallel, "must be at least 1"))
	}
	seen := map[int64]bool{}
	for i, s := range o.TestSeeds {
		if seen[s] {
			errs = append(errs, field.Duplicate(root.Child("testSeeds").Index(i), s))
		}
		seen[s] = true
	}
	return errs
}

// Figures are one policy's outcome on one half.
type Figures struct {
	// WorkCoreHours is Batch + Mid CPU used, core-hours.
	WorkCoreHours float64 `json:"workCoreHours"`
	// HarmPercent is Prod SLO-violation time, percent of Prod pod-time.
	HarmPercent float64 `json:"harmPercent"`
}

func figures(s *sim.Summary) Figures {
	return Figures{WorkCoreHours: s.Batch.CoreHours + s.Mid.CoreHours, HarmPercent: s.ProdSLOViolationPercent}
}

// Point is one setting on the train half.
type Point struct {
	Setting Setting `json:"setting"`
	Figures
	// WithinBudget: HarmPercent ≤ the train half's budget.
	WithinBudget bool `json:"withinBudget"`
}

// Train is the choice made on the train half.
type Train struct {
	Seed int64 `json:"seed"`
	// Stronger is the baseline with more work; BudgetPercent the harm
	// budget it sets.
	K8sDefault    Figures    `json:"k8sDefault"`
	K8sBestEffort Figures    `json:"k8sBestEffort"`
	Stronger      sim.Policy `json:"stronger"`
	BudgetPercent float64    `json:"budgetPercent"`
	// Points are the grid, the defaults first.
	Points []Point `json:"points"`
	// Chosen is the index in Points of the setting with the most work
	// within the budget (the least harm when none is).
	Chosen int `json:"chosen"`
}

// Test is one seed's odd half.
type Test struct {
	Seed          int64      `json:"seed"`
	K8sDefault    Figures    `json:"k8sDefault"`
	K8sBestEffort Figures    `json:"k8sBestEffort"`
	Stronger      sim.Policy `json:"stronger"`
	BudgetPercent float64    `json:"budgetPercent"`
	// Oracle is the oracle policy's run (its harm is what Prod does to
	// itself); OracleBudgetWork its work plus what the harm budget buys
	// (sim.OracleResult.Budget), at most OfferedWork.
	Oracle           Figures `json:"oracle"`
	OracleBudgetWork float64 `json:"oracleBudgetWork"`
	// Headroom are the any-policy bounds (Prod served in full) with no
	// harm and within the budget; HeadroomStarving within the budget when
	// Prod may be starved where the SLO is given up anyway.
	HeadroomZero float64 `json:"headroomZero"`
	// HeadroomCapacity is the no-harm bound before it is held to the
	// work the jobs offer (OfferedWork): which of the two binds.
	HeadroomCapacity float64 `json:"headroomCapacity"`
	HeadroomBudget   float64 `json:"headroomBudget"`
	HeadroomStarving float64 `json:"headroomStarving"`
	OfferedWork      float64 `json:"offeredWork"`
	WaterlineDefault Figures `json:"waterlineDefault"`
	WaterlineChosen  Figures `json:"waterlineChosen"`
}

// WorkloadResult is the sweep of one workload.
type WorkloadResult struct {
	Workload string `json:"workload"`
	// Name is the workload's own name (where it came from).
	Name  string `json:"name"`
	Train Train  `json:"train"`
	Tests []Test `json:"tests"`
}

// Result is the whole sweep.
type Result struct {
	Options   Options          `json:"options"`
	Workloads []WorkloadResult `json:"workloads"`
}

// Run sweeps every workload of o.
func Run(ctx context.Context, o Options) (*Result, error) {
	o = o.WithDefaults()
	if errs := o.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("invalid sweep options: %w", errs.ToAggregate())
	}
	grid := []Setting{DefaultSetting()}
	for _, s := range o.Grid {
		if !slices.Contains(grid, s) {
			grid = append(grid, s)
		}
	}
	o.Grid = grid[1:]
	res := &Result{Options: o}
	pool := newPool(ctx, o.Parallel, o.Progress, len(o.Workloads)*(len(grid)+1+len(o.TestSeeds)*5))
	for _, spec := range o.Workloads {
		wr, err := sweepOne(pool, o, spec, grid)
		if err != nil {
			return nil, err
		}
		res.Workloads = append(res.Workloads, *wr)
	}
	return res, nil
}

func sweepOne(pool *pool, o Options, spec string, grid []Setting) (*WorkloadResult, error) {
	load := func(seed int64, h Half) (*workload.Workload, error) {
		w, err := workload.Load(spec, o.SearchFrom, workload.SyntheticParams{Seed: seed, Nodes: o.Nodes, Duration: o.Duration})
		if err != nil {
			return nil, err
		}
		return Split(w, h)
	}
	train, err := load(o.TrainSeed, Even)
	if err != nil {
		return nil, err
	}
	wr := &WorkloadResult{Workload: spec, Name: train.Name, Train: Train{Seed: o.TrainSeed, Points: make([]Point, len(grid))}}

	// The train half: the baselines and every setting.
	var baselines *sim.Result
	pool.start(spec+" train baselines", func(ctx context.Context) error {
		r, err := sim.Run(ctx, sim.Config{Seed: o.TrainSeed, Policies: []sim.Policy{sim.PolicyK8sDefault, sim.PolicyK8sBestEffort}}, train)
		baselines = r
		return err
	})
	for i, s := range grid {
		pool.start(fmt.Sprintf("%s train %s", spec, s), func(ctx context.Context) error {
			cfg := sim.Config{Seed: o.TrainSeed, Policies: []sim.Policy{sim.PolicyWaterline}}
			s.Apply(&cfg)
			r, err := sim.Run(ctx, cfg, train)
			if err != nil {
				return err
			}
			wr.Train.Points[i] = Point{Setting: s, Figures: figures(&r.Policies[0].Summary)}
			return nil
		})
	}
	if err := pool.wait(); err != nil {
		return nil, err
	}
	t := &wr.Train
	t.K8sDefault, t.K8sBestEffort = figures(&baselines.Policies[0].Summary), figures(&baselines.Policies[1].Summary)
	t.Stronger, t.BudgetPercent = budget(t.K8sDefault, t.K8sBestEffort, o.BudgetFraction)
	t.Chosen = 0
	for i := range t.Points {
		p := &t.Points[i]
		p.WithinBudget = p.HarmPercent <= t.BudgetPercent
		c := &t.Points[t.Chosen]
		switch {
		case p.WithinBudget && (!c.WithinBudget || p.WorkCoreHours > c.WorkCoreHours):
			t.Chosen = i
		case !p.WithinBudget && !c.WithinBudget && p.HarmPercent < c.HarmPercent:
			t.Chosen = i
		}
	}
	chosen := t.Points[t.Chosen].Setting

	// The test halves: the baselines, the bound and Waterline first, then
	// the oracle, whose budget figure spends a share of the stronger
	// baseline's harm.
	wr.Tests = make([]Test, len(o.TestSeeds))
	halves := make([]*workload.Workload, len(o.TestSeeds))
	plain := make([]*sim.Result, len(o.TestSeeds))
	headroom := make([]*sim.Headroom, len(o.TestSeeds))
	for k, seed := range o.TestSeeds {
		w, err := load(seed, Odd)
		if err != nil {
			return nil, err
		}
		halves[k] = w
		ts := &wr.Tests[k]
		ts.Seed = seed
		pool.start(fmt.Sprintf("%s test seed %d: baselines", spec, seed), func(ctx context.Context) error {
			r, err := sim.Run(ctx, sim.Config{Seed: seed, Policies: []sim.Policy{sim.PolicyK8sDefault, sim.PolicyK8sBestEffort}}, w)
			plain[k] = r
			return err
		})
		pool.start(fmt.Sprintf("%s test seed %d: headroom", spec, seed), func(context.Context) error {
			h, err := sim.NewHeadroom(w, sim.Config{Seed: seed})
			headroom[k] = h
			return err
		})
		runs := []struct {
			s   Setting
			out *Figures
		}{{grid[0], &ts.WaterlineDefault}}
		if chosen != grid[0] {
			runs = append(runs, struct {
				s   Setting
				out *Figures
			}{chosen, &ts.WaterlineChosen})
		}
		for _, c := range runs {
			pool.start(fmt.Sprintf("%s test seed %d: waterline %s", spec, seed, c.s), func(ctx context.Context) error {
				cfg := sim.Config{Seed: seed, Policies: []sim.Policy{sim.PolicyWaterline}}
				c.s.Apply(&cfg)
				r, err := sim.Run(ctx, cfg, w)
				if err != nil {
					return err
				}
				*c.out = figures(&r.Policies[0].Summary)
				return nil
			})
		}
	}
	if err := pool.wait(); err != nil {
		return nil, err
	}
	for k := range wr.Tests {
		ts := &wr.Tests[k]
		if chosen == grid[0] {
			ts.WaterlineChosen = ts.WaterlineDefault
		}
		ts.K8sDefault, ts.K8sBestEffort = figures(&plain[k].Policies[0].Summary), figures(&plain[k].Policies[1].Summary)
		ts.Stronger, ts.BudgetPercent = budget(ts.K8sDefault, ts.K8sBestEffort, o.BudgetFraction)
		zero, err := headroom[k].Bound(0)
		if err != nil {
			return nil, err
		}
		within, err := headroom[k].Bound(ts.BudgetPercent)
		if err != nil {
			return nil, err
		}
		ts.HeadroomZero, ts.HeadroomBudget, ts.HeadroomStarving = zero.ServedCoreHours, within.ServedCoreHours, within.StarvingCoreHours
		ts.OfferedWork, ts.HeadroomCapacity = headroom[k].OfferedCoreHours, headroom[k].ZeroHarmCoreHours
		pool.start(fmt.Sprintf("%s test seed %d: oracle", spec, ts.Seed), func(ctx context.Context) error {
			r, err := sim.Run(ctx, sim.Config{Seed: ts.Seed, Policies: []sim.Policy{sim.PolicyOracle}, OracleHarmBudgetPercent: ts.BudgetPercent}, halves[k])
			if err != nil {
				return err
			}
			or := &r.Policies[0]
			ts.Oracle = figures(&or.Summary)
			// The budget's CPU is counted step by step; no policy runs
			// more than the jobs offer.
			ts.OracleBudgetWork = ts.Oracle.WorkCoreHours
			if b := or.Oracle.Budget; b != nil {
				ts.OracleBudgetWork = min(ts.Oracle.WorkCoreHours+b.ExtraCoreHours, ts.OfferedWork)
			}
			return nil
		})
	}
	if err := pool.wait(); err != nil {
		return nil, err
	}
	return wr, nil
}

// budget returns the stronger baseline (more work) and the harm budget it
// sets.
func budget(def, be Figures, fraction float64) (sim.Policy, float64) {
	if def.WorkCoreHours > be.WorkCoreHours {
		return sim.PolicyK8sDefault, fraction * def.HarmPercent
	}
	return sim.PolicyK8sBestEffort, fraction * be.HarmPercent
}

// pool runs simulations at most n at a time.
type pool struct {
	ctx      context.Context
	sem      chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	errs     []error
	progress func(done, total int, what string)
	done     int
	total    int
}

func newPool(ctx context.Context, n int, progress func(int, int, string), total int) *pool {
	return &pool{ctx: ctx, sem: make(chan struct{}, n), progress: progress, total: total}
}

// start runs f in the pool.
func (p *pool) start(what string, f func(context.Context) error) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		select {
		case p.sem <- struct{}{}:
		case <-p.ctx.Done():
			p.fail(p.ctx.Err())
			return
		}
		defer func() { <-p.sem }()
		if err := f(p.ctx); err != nil {
			p.fail(fmt.Errorf("%s: %w", what, err))
			return
		}
		p.mu.Lock()
		p.done++
		if p.progress != nil {
			p.progress(p.done, p.total, what)
		}
		p.mu.Unlock()
	}()
}

func (p *pool) fail(err error) {
	p.mu.Lock()
	p.errs = append(p.errs, err)
	p.mu.Unlock()
}

// wait waits for everything started and returns their errors.
func (p *pool) wait() error {
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	err := errors.Join(p.errs...)
	p.errs = nil
	return err
}
