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

package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/pkg/sim/sweep"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

type sweepOptions struct {
	workloads  []string
	nodes      int
	duration   time.Duration
	trainSeed  int64
	testSeeds  []int64
	throttles  []int32
	thresholds []int32
	budget     float64
	parallel   int
	output     string
	jsonOut    string
	progress   bool
}

func newSimSweepCommand() *cobra.Command {
	o := sweepOptions{
		workloads:  slices.Clone(workload.Kinds),
		nodes:      100,
		duration:   24 * time.Hour,
		trainSeed:  1,
		testSeeds:  []int64{1, 2, 3},
		throttles:  []int32{70, 75, 80, 90},
		thresholds: []int32{65, 75, 85, 95},
		budget:     0.1,
		output:     "markdown",
	}
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Choose Waterline's CPU lines and thresholds on half a workload, report them on the other half beside the oracle bounds",
		Long: `sweep asks whether any setting -- or any policy -- reaches the stronger
plain baseline's Batch + Mid CPU at a tenth of its Prod harm
(docs/design/simulator.md). For each workload it builds --nodes nodes and
splits them (and the jobs) into even and odd halves. On the even half of
--train-seed it runs the baselines and Waterline at every setting of the
grid -- throttle (= forbid) line L with restore at L-10 and evict at L+10,
and the Batch tier threshold with LoadAware's CPU threshold at T -- and
chooses the setting with the most work within the budget. On the odd
half of each --test-seeds seed it reports the baselines, the any-policy
headroom bound, the oracle policy, Waterline at the defaults and at the
chosen setting.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSweep(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.workloads, "workloads", o.workloads, "workloads: synthetic, alibaba, openb, bitbrains, or paths")
	f.IntVar(&o.nodes, "nodes", o.nodes, "nodes of each workload before the split into two halves (≥ 4)")
	f.DurationVar(&o.duration, "duration", o.duration, "simulated time, a multiple of 10s")
	f.Int64Var(&o.trainSeed, "train-seed", o.trainSeed, "seed of the workload whose even half the setting is chosen on")
	f.Int64SliceVar(&o.testSeeds, "test-seeds", o.testSeeds, "seeds of the workloads whose odd halves the choice is reported on")
	f.Int32SliceVar(&o.throttles, "throttle-lines", o.throttles, "CPU throttle (and forbid-scheduling) lines of the grid, percent")
	f.Int32SliceVar(&o.thresholds, "thresholds", o.thresholds, "Batch tier and LoadAware CPU thresholds of the grid, percent")
	f.Float64Var(&o.budget, "budget-fraction", o.budget, "harm budget as a share of the stronger baseline's harm, (0, 1]")
	f.IntVar(&o.parallel, "parallel", 0, "simulations at once (0: GOMAXPROCS)")
	f.StringVarP(&o.output, "output", "o", o.output, "stdout format: markdown or json")
	f.StringVar(&o.jsonOut, "json-out", "", "also write the result as JSON to this file")
	f.BoolVar(&o.progress, "progress", false, "report each simulation on stderr as it finishes")
	return cmd
}

func (o sweepOptions) validate() field.ErrorList {
	var errs field.ErrorList
	if !slices.Contains([]string{"markdown", "json"}, o.output) {
		errs = append(errs, field.NotSupported(field.NewPath("--output"), o.output, []string{"markdown", "json"}))
	}
	if o.duration%(10*time.Second) != 0 {
		errs = append(errs, field.Invalid(field.NewPath("--duration"), o.duration.String(), "must be a multiple of 10s"))
	}
	if len(o.throttles) == 0 {
		errs = append(errs, field.Required(field.NewPath("--throttle-lines"), "at least one line"))
	}
	if len(o.thresholds) == 0 {
		errs = append(errs, field.Required(field.NewPath("--thresholds"), "at least one threshold"))
	}
	if o.nodes < 4 || o.nodes > workload.MaxNodes {
		errs = append(errs, field.Invalid(field.NewPath("--nodes"), o.nodes, fmt.Sprintf("must be in [4, %d] (two halves of at least two)", workload.MaxNodes)))
	}
	if o.duration <= 0 || o.duration > workload.MaxDuration {
		errs = append(errs, field.Invalid(field.NewPath("--duration"), o.duration.String(), fmt.Sprintf("must be positive and at most %s (90 days)", workload.MaxDuration)))
	}
	for i, l := range o.throttles {
		// Restore sits 10 below, evict 10 above (at most 100, and above
		// the throttle line).
		if l < 11 || l > 99 {
			errs = append(errs, field.Invalid(field.NewPath("--throttle-lines").Index(i), l, "must be in [11, 99]"))
		}
	}
	for i, v := range o.thresholds {
		if v < 1 || v > 100 {
			errs = append(errs, field.Invalid(field.NewPath("--thresholds").Index(i), v, "must be in [1, 100]"))
		}
	}
	if !(o.budget > 0 && o.budget <= 1) {
		errs = append(errs, field.Invalid(field.NewPath("--budget-fraction"), o.budget, "must be in (0, 1]"))
	}
	seen := map[int64]bool{}
	for i, s := range o.testSeeds {
		if seen[s] {
			errs = append(errs, field.Duplicate(field.NewPath("--test-seeds").Index(i), s))
		}
		seen[s] = true
	}
	if len(o.testSeeds) == 0 {
		errs = append(errs, field.Required(field.NewPath("--test-seeds"), "at least one seed"))
	}
	if o.parallel < 0 {
		errs = append(errs, field.Invalid(field.NewPath("--parallel"), o.parallel, "must be at least 0"))
	}
	for i, w := range o.workloads {
		if slices.Contains(o.workloads[:i], w) {
			errs = append(errs, field.Duplicate(field.NewPath("--workloads").Index(i), w))
			continue
		}
		if slices.Contains(workload.Kinds, w) {
			continue
		}
		if _, _, err := workload.Detect(w); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("--workloads").Index(i), w, err.Error()))
		}
	}
	return errs
}

func runSweep(ctx context.Context, stdout, stderr io.Writer, o sweepOptions) error {
	if errs := o.validate(); len(errs) > 0 {
		return fmt.Errorf("invalid flags: %w", errs.ToAggregate())
	}
	// --json-out is written to a file created beside it before the sweep
	// runs, so that a path it cannot be written to stops the command
	// before minutes of work, and renamed over it once written: a sweep
	// that fails leaves a file already there as it was.
	var jsonOut *os.File
	if o.jsonOut != "" {
		if fi, err := os.Stat(o.jsonOut); err == nil && fi.IsDir() {
			return fmt.Errorf("--json-out: %s is a directory", o.jsonOut)
		}
		f, err := os.CreateTemp(filepath.Dir(o.jsonOut), filepath.Base(o.jsonOut)+".*")
		if err != nil {
			return fmt.Errorf("--json-out: %w", err)
		}
		jsonOut = f
		defer func() {
			if jsonOut != nil {
				_ = jsonOut.Close()
				_ = os.Remove(jsonOut.Name())
			}
		}()
	}
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("finding the working directory: %w", err)
	}
	so := sweep.Options{
		Workloads:      o.workloads,
		Nodes:          o.nodes,
		Duration:       o.duration,
		TrainSeed:      o.trainSeed,
		TestSeeds:      o.testSeeds,
		Grid:           sweep.Grid(o.throttles, o.thresholds),
		BudgetFraction: o.budget,
		Parallel:       o.parallel,
		SearchFrom:     wd,
	}
	if o.progress {
		start := time.Now()
		so.Progress = func(done, total int, what string) {
			fmt.Fprintf(stderr, "[%d/%d %s] %s\n", done, total, time.Since(start).Round(time.Second), what)
		}
	}
	res, err := sweep.Run(ctx, so)
	if err != nil {
		return err
	}
	if jsonOut != nil {
		err := sweep.WriteJSON(jsonOut, res)
		if err == nil {
			err = jsonOut.Chmod(0o644) // as os.Create's 0666 under the usual umask, not CreateTemp's 0600
		}
		if cerr := jsonOut.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(jsonOut.Name(), o.jsonOut)
		}
		if err != nil {
			return fmt.Errorf("writing --json-out %s: %w", o.jsonOut, err)
		}
		jsonOut = nil // written: kept
	}
	if o.output == "json" {
		return sweep.WriteJSON(stdout, res)
	}
	return sweep.WriteMarkdown(stdout, res)
}
