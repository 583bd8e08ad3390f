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
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/pkg/sim"
	"github.com/waterline-dev/waterline/pkg/sim/report"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

type simOptions struct {
	workload   string
	nodes      int
	duration   time.Duration
	step       time.Duration
	seed       int64
	policies   []string
	out        string
	output     string
	batchLoad  float64
	progress   bool
	noProgress bool
	// calibration is a benchmark's calibration.json that sets the harm
	// model's interference κ (sim.Harm.Calibrate).
	calibration string
	// values is a values file of charts/waterline whose NodeQOS,
	// ColocationPolicy tiers and policies and LoadAware settings the
	// waterline policies simulate.
	values string
	// preemption is sim.Config.Preemption.
	preemption bool
	// parallel is sim.Config.Parallel.
	parallel int
}

func newSimCommand() *cobra.Command {
	o := simOptions{
		workload:   workload.KindSynthetic,
		nodes:      100,
		duration:   24 * time.Hour,
		step:       10 * time.Second,
		seed:       1,
		out:        "waterline-sim",
		preemption: true,
		output:     "table",
	}
	for _, p := range sim.DefaultPolicies {
		o.policies = append(o.policies, string(p))
	}
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate a cluster with and without Waterline, on a synthetic workload or a trace",
		Long: `sim replays a workload on a simulated cluster once per policy and compares
them: utilisation gained, what it cost the online (Prod) services, what
happened to batch work. It calls the same decision code as the scheduler,
the agent and the manager.

Policies (default: k8s-default, k8s-besteffort, waterline):
  k8s-default  requests only: kube-scheduler's default profile (fit by
               requests, least-allocated and balanced-allocation scores);
               batch jobs ask for cpu and memory like everyone.
  k8s-besteffort
               the same, with batch jobs asking for no CPU (memory only):
               they fill every idle core at cpu.shares 2. The stronger
               plain baseline.
  waterline    LoadAware scheduling, Mid/Batch tiers from predictions and
               real use, priority bands, and node QoS that forbids
               scheduling, throttles and evicts Batch pods precisely.
  evict-all    waterline whose node QoS acts on every Batch pod of a node at
               a breach, as before precise action
               (docs/design/node-qos.md#precise-action).
  oracle       k8s-besteffort whose nodes' non-Prod CPU is capped each
               step, knowing that step's Prod demand, at the most that
               keeps Prod within its SLO: a reference no agent can reach
               (docs/design/simulator.md). Not run by default.

Workloads (--workload):
  synthetic    diurnal online services and bursty batch arrivals (the
               default; see pkg/sim/README.md for every parameter)
  alibaba      online load from the Alibaba v2018 machines
  openb        node shapes and request mixes from the openb lists
  bitbrains    online usage shapes from the Bitbrains VMs
  PATH         a trace folder or file of one of the above, or a JSON file
               of synthetic parameters
Traces are looked up in shared/traces in the working directory or a parent.

Writes a summary table (JSON with -o json, Markdown with -o markdown) to
stdout and, with --out (default waterline-sim), an HTML report with SVG
charts and the numbers as JSON.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSim(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, commandLine(cmd))
		},
	}
	cmd.AddCommand(newSimSweepCommand())
	f := cmd.Flags()
	f.StringVar(&o.workload, "workload", o.workload, "synthetic, alibaba, openb, bitbrains, or a path to a trace or a JSON file of synthetic parameters")
	f.IntVar(&o.nodes, "nodes", o.nodes, fmt.Sprintf("number of nodes, 1 to %d", workload.MaxNodes))
	f.DurationVar(&o.duration, "duration", o.duration, "simulated time, a multiple of --step, at most 90 days")
	f.DurationVar(&o.step, "step", o.step, "simulated time between two steps: whole seconds in [1s, 5m] dividing 10s, 60s and 5m")
	f.Int64Var(&o.seed, "seed", o.seed, "seed of the workload and of the scheduler's tie-breaking")
	f.StringSliceVar(&o.policies, "policies", o.policies, "policies to compare: "+strings.Join(policyNames(), ", "))
	f.StringVar(&o.out, "out", o.out, "directory for the HTML report, result.json and the charts (empty: none)")
	f.StringVarP(&o.output, "output", "o", o.output, "stdout format: table, json, or markdown (the summary table for a README)")
	f.Float64Var(&o.batchLoad, "batch-load", 0, "synthetic workloads: batch CPU demand offered, in percent of the cluster's CPU (0: the default, 60)")
	f.BoolVar(&o.progress, "progress", false, "show a progress bar on stderr even when it is not a terminal")
	f.BoolVar(&o.noProgress, "no-progress", false, "never show a progress bar")
	f.BoolVar(&o.preemption, "preemption", o.preemption, "the scheduler preempts lower-priority pods for a pod that fits nowhere (DefaultPreemption for the baselines, BandPreemption for waterline); false is the chart's install-time scheduler.preemption: disabled")
	f.IntVar(&o.parallel, "parallel", 0, "policies simulated at once, each with its own cluster in memory (0: GOMAXPROCS); 1 bounds memory to one cluster, results are the same")
	f.StringVar(&o.values, "values", "", "a values file of charts/waterline (as for helm install -f): simulate its nodeQOS.spec, colocationPolicy.spec tiers, collect and predict policies, and scheduler.loadAware args and weight, merged over the chart's defaults and admitted as the API server and waterline-scheduler would")
	f.StringVar(&o.calibration, "calibration", "", "calibration.json of make bench-colocation: fit the harm model's interference κ to it (default: κ of docs/design/simulator.md)")
	return cmd
}

func policyNames() []string {
	var out []string
	for _, p := range sim.Policies {
		out = append(out, string(p))
	}
	return out
}

// commandLine is how the command was invoked, for the report. An
// absolute path (a trace, the output directory, a values or calibration
// file) is shown by its last element: the report must not show the
// directories of the machine that ran it.
func commandLine(cmd *cobra.Command) string {
	args := []string{"waterline", "sim"}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		v := f.Value.String()
		if (f.Name == "workload" || f.Name == "out" || f.Name == "values" || f.Name == "calibration") && filepath.IsAbs(v) {
			v = filepath.Base(v)
		}
		args = append(args, "--"+f.Name+"="+v)
	})
	return strings.Join(args, " ")
}

// validate returns every bad flag, named.
func (o simOptions) validate() field.ErrorList {
	var errs field.ErrorList
	if o.nodes < 1 || o.nodes > workload.MaxNodes {
		errs = append(errs, field.Invalid(field.NewPath("--nodes"), o.nodes, fmt.Sprintf("must be in [1, %d]", workload.MaxNodes)))
	}
	if o.parallel < 0 {
		errs = append(errs, field.Invalid(field.NewPath("--parallel"), o.parallel, "must be 0 (GOMAXPROCS) or more"))
	}
	if o.step < time.Second || o.step > 5*time.Minute || o.step%time.Second != 0 {
		errs = append(errs, field.Invalid(field.NewPath("--step"), o.step.String(), "must be whole seconds in [1s, 5m]"))
	} else {
		// The agents' intervals (QoS 10s, reports 60s, prediction 5m)
		// must fall on steps.
		for _, every := range []time.Duration{10 * time.Second, time.Minute, 5 * time.Minute} {
			if every%o.step != 0 {
				errs = append(errs, field.Invalid(field.NewPath("--step"), o.step.String(), fmt.Sprintf("must divide %s (the agents' intervals)", every)))
				break
			}
		}
	}
	if o.duration <= 0 || o.step > 0 && o.duration%o.step != 0 {
		errs = append(errs, field.Invalid(field.NewPath("--duration"), o.duration.String(), "must be a positive multiple of --step"))
	} else if o.duration > workload.MaxDuration {
		errs = append(errs, field.Invalid(field.NewPath("--duration"), o.duration.String(), fmt.Sprintf("must be at most %s (90 days)", workload.MaxDuration)))
	}
	if len(o.policies) == 0 {
		errs = append(errs, field.Required(field.NewPath("--policies"), "at least one policy"))
	}
	seen := map[string]bool{}
	for i, p := range o.policies {
		switch {
		case !slices.Contains(policyNames(), p):
			errs = append(errs, field.NotSupported(field.NewPath("--policies").Index(i), p, policyNames()))
		case seen[p]:
			errs = append(errs, field.Duplicate(field.NewPath("--policies").Index(i), p))
		}
		seen[p] = true
	}
	if !slices.Contains([]string{"table", "json", "markdown"}, o.output) {
		errs = append(errs, field.NotSupported(field.NewPath("--output"), o.output, []string{"table", "json", "markdown"}))
	}
	if !slices.Contains(workload.Kinds, o.workload) {
		if _, _, err := workload.Detect(o.workload); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("--workload"), o.workload, err.Error()))
		}
	}
	if !(o.batchLoad >= 0 && o.batchLoad <= 500) {
		errs = append(errs, field.Invalid(field.NewPath("--batch-load"), o.batchLoad, "must be in [0, 500]"))
	}
	if o.progress && o.noProgress {
		errs = append(errs, field.Invalid(field.NewPath("--progress"), o.progress, "contradicts --no-progress"))
	}
	return errs
}

func runSim(ctx context.Context, stdout, stderr io.Writer, o simOptions, command string) error {
	if errs := o.validate(); len(errs) > 0 {
		return fmt.Errorf("invalid flags: %w", errs.ToAggregate())
	}
	if o.out != "" {
		// Refuse an unwritable --out before the simulation, not after it.
		if err := checkWritableDir(o.out); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	var settings *chartSettings
	if o.values != "" {
		var err error
		if settings, err = loadChartValues(ctx, o.values); err != nil {
			return fmt.Errorf("--values: %w", err)
		}
		for _, note := range settings.notes {
			fmt.Fprintf(stderr, "--values: %s\n", note)
		}
	}
	// The calibration is read before the workload is built, which can
	// take minutes and gigabytes.
	var harm *sim.Harm
	if o.calibration != "" {
		cal, err := sim.LoadCalibration(o.calibration)
		if err != nil {
			return fmt.Errorf("--calibration: %w", err)
		}
		h := sim.DefaultHarm()
		fit, err := h.Calibrate(cal)
		if err != nil {
			return fmt.Errorf("--calibration %s: %w", o.calibration, err)
		}
		harm = &h
		fmt.Fprintf(stderr, "Harm model calibrated from %s: %v\n", o.calibration, fit)
	}
	logger := klog.FromContext(ctx)
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("finding the working directory: %w", err)
	}
	start := time.Now()
	w, err := workload.Load(o.workload, wd, workload.SyntheticParams{
		Seed: o.seed, Nodes: o.nodes, Duration: o.duration, BatchLoadPercent: o.batchLoad,
	})
	if err != nil {
		return err
	}
	if w.Duration%o.step != 0 {
		// A JSON file of parameters sets its own duration, past the flags'
		// check; the engine runs whole steps only.
		return fmt.Errorf("workload %s lasts %s, not a multiple of --step (%s)", w.Name, w.Duration, o.step)
	}
	logger.V(1).Info("Built workload", "workload", w.Name, "nodes", len(w.Nodes), "services", len(w.Services), "jobs", len(w.Jobs), "elapsed", time.Since(start))

	cfg := sim.Config{Step: o.step, Seed: o.seed, Preemption: &o.preemption, Parallel: o.parallel}
	if settings != nil {
		settings.apply(&cfg)
	}
	cfg.Harm = harm
	for _, p := range o.policies {
		cfg.Policies = append(cfg.Policies, sim.Policy(p))
	}
	if o.progress || !o.noProgress && isTerminal(stderr) {
		bar := newProgressBar(stderr, len(cfg.Policies))
		cfg.Progress = bar.update
		defer bar.done()
	}
	res, err := sim.Run(ctx, cfg, w)
	if err != nil {
		return err
	}
	logger.V(1).Info("Simulated", "policies", len(res.Policies), "elapsed", time.Since(start))

	switch o.output {
	case "json":
		err = report.WriteJSON(stdout, res)
	case "markdown":
		err = report.WriteMarkdown(stdout, res)
	default:
		err = report.WriteTable(stdout, res)
	}
	if err != nil {
		return err
	}
	if o.out != "" {
		path, err := report.WriteDir(o.out, res, report.Options{Command: command})
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "Report: %s (numbers in %s)\n", path, strings.TrimSuffix(path, report.IndexFile)+report.ResultFile)
	}
	return nil
}

// checkWritableDir creates dir if it is missing and checks that a file can
// be written in it.
func checkWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".waterline-sim-*")
	if err != nil {
		return err
	}
	name := f.Name()
	return errors.Join(f.Close(), os.Remove(name))
}

// isTerminal reports whether w is a terminal. A character device is not
// enough: /dev/null is one too, and a bar drawn there is wasted work.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressBar draws one line on stderr: the share of steps done over all
// policies, redrawn when it moves by a percent.
type progressBar struct {
	mu       sync.Mutex
	w        io.Writer
	steps    map[sim.Policy]int // done, per policy
	total    map[sim.Policy]int
	policies int
	shown    int
	start    time.Time
}

func newProgressBar(w io.Writer, policies int) *progressBar {
	return &progressBar{w: w, steps: map[sim.Policy]int{}, total: map[sim.Policy]int{}, policies: policies, shown: -1, start: time.Now()}
}

func (b *progressBar) update(p sim.Policy, done, total int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.steps[p], b.total[p] = done, total
	var d, t int
	for k := range b.total {
		d += b.steps[k]
		t += b.total[k]
	}
	// Policies not started yet count as the same length as the others.
	if len(b.total) > 0 {
		t = t * b.policies / len(b.total)
	}
	pct := 0
	if t > 0 {
		pct = 100 * d / t
	}
	if pct == b.shown {
		return
	}
	b.shown = pct
	const width = 40
	filled := width * pct / 100
	fmt.Fprintf(b.w, "\r[%s%s] %3d%%  %s", strings.Repeat("#", filled), strings.Repeat(" ", width-filled), pct, time.Since(b.start).Round(time.Second))
}

func (b *progressBar) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.shown >= 0 {
		fmt.Fprintln(b.w)
	}
}
