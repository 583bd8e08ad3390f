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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/predict"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
	"github.com/waterline-dev/waterline/pkg/trace"
)

// Evaluations `waterline predict` runs.
const (
	evalHorizon    = "horizon"
	evalNextBucket = "next-bucket"
)

// Trace kinds `waterline predict` reads.
const (
	traceAlibabaV2018 = "alibaba-v2018"
	traceBitbrains    = "bitbrains"
)

// bitbrainsStep is the Bitbrains sampling interval: VMs are put on this
// grid so that their usage adds up into a node's.
const bitbrainsStep = 300

type predictOptions struct {
	trace       string
	path        string
	models      []string
	n           []float64
	percentiles []float64
	resources   []string
	step        time.Duration
	horizon     time.Duration
	warmup      time.Duration
	halfLife    time.Duration
	coldStart   time.Duration
	margin      float64
	bucketRatio float64
	peakWindow  time.Duration
	vmsPerNode  int
	maxOf       []string
	output      string

	// Next-bucket evaluation (--eval next-bucket).
	eval       string
	bucket     time.Duration
	window     int
	baselineN  float64
	contiguous int
	curve      []string // mean peaks in %; strings so that --curve= can empty it
	nodes      []string
}

func newPredictCommand() *cobra.Command {
	d := v1alpha1.PredictPolicyWithDefaults(nil)
	o := predictOptions{
		trace:       traceAlibabaV2018,
		models:      allModels(),
		n:           []float64{3, float64(*d.NSigma)},
		percentiles: []float64{95, float64(*d.Percentile)},
		resources:   []string{"cpu", "memory"},
		step:        5 * time.Minute,
		horizon:     time.Hour,
		warmup:      24 * time.Hour,
		halfLife:    time.Duration(*d.HalfLifeSeconds) * time.Second,
		coldStart:   time.Duration(*d.ColdStartSeconds) * time.Second,
		bucketRatio: 1.05,
		vmsPerNode:  10,
		maxOf:       modelNames(v1alpha1.DefaultMaxOf),
		output:      "table",
		eval:        evalHorizon,
		bucket:      5 * time.Minute,
		window:      24,
		baselineN:   5,
		curve:       []string{"60", "65", "70", "75", "80", "85", "90"},
	}
	cmd := &cobra.Command{
		Use:   "predict",
		Short: "Evaluate the peak predictors on a usage trace",
		Long: `predict replays a usage trace and scores every peak-prediction model the
agent can run, the way Bashir et al. (EuroSys'21) do: every --step it predicts
the peak of the next --horizon from the history so far, and reports

  violation rate  share of predictions the real peak of the horizon exceeded
  savings         mean of 1 − prediction ÷ Σ limits (÷ capacity without limits):
                  the reclaimable share max(0, Σ limits − prediction) ÷ Σ limits
                  with the limits as requests, at a reclaim ratio of 100 % (the
                  ColocationPolicy's default spec.tiers.reclaimRatioPercent):
                  the share a NodeMetric's status.prodReclaimable reports and
                  the manager sells Mid from (before the Mid threshold and the
                  unused-capacity cap). At a ratio r both report
                  max(0, r × requests − prediction): per interval savings
                  − (100 − r) %, or 0, so the mean is at least savings − (100 − r) %

and the same for the peak oracle (the real peak: the most any model can save
without violations).

Traces (see shared/traces/README.md):
  alibaba-v2018  machine_usage.csv: one node per machine, usage in % of the
                 machine; the machine counts as one pod with a request and
                 limit of 100 %, so per-pod models see the machine as a whole.
  bitbrains      one file per VM: VMs are pods (request = limit = provisioned
                 capacity), grouped --vms-per-node to a node in file order.

--eval next-bucket asks a narrower question, bucket by bucket: will the
maximum of the next --bucket (5m) exceed the prediction made at its start? It
scores the agent's predictor (--models, --n, --percentile, --half-life,
--safety-margin default to the predict policy's defaults) and a sliding-window
baseline that keeps no histogram -- mean + --baseline-n population standard
deviations of the last --window bucket maxima, capped at the node -- on the
same buckets: those whose --contiguous (default --window) buckets before all
hold samples. It reports each at its own parameters and at the baseline's mean
predicted peak (N, or the margin for models without N, set to the smallest
value that reaches it), then violations against mean peak for both at every
--curve target.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.eval == evalNextBucket {
				o.agentDefaults(cmd.Flags().Changed)
				return runNextBucket(cmd.Context(), cmd.OutOrStdout(), o)
			}
			return runPredict(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.trace, "trace", o.trace, "trace format: alibaba-v2018 or bitbrains")
	f.StringVar(&o.path, "path", "", "the trace: machine_usage.csv (or its folder) for alibaba-v2018, the folder of VM files for bitbrains; default: the shared sample found in shared/traces beside the working directory or one of its parents")
	f.StringSliceVar(&o.models, "models", o.models, "models to evaluate: "+strings.Join(allModels(), ", "))
	f.Float64SliceVar(&o.n, "n", o.n, "N values (standard deviations) for the N-sigma models and Max")
	f.Float64SliceVar(&o.percentiles, "percentile", o.percentiles, "percentiles in (0, 100] for ResourceCentral, PercentilePeak and Max")
	f.StringSliceVar(&o.resources, "resources", o.resources, "resources to evaluate: cpu, memory")
	f.DurationVar(&o.step, "step", o.step, "how often a prediction is made (whole seconds)")
	f.DurationVar(&o.horizon, "horizon", o.horizon, "how long each prediction must hold (whole seconds)")
	f.DurationVar(&o.warmup, "warmup", o.warmup, "history each node gathers before its predictions are scored")
	f.DurationVar(&o.halfLife, "half-life", o.halfLife, "half-life of the usage histograms (0 = no decay)")
	f.DurationVar(&o.coldStart, "cold-start", o.coldStart, "how long a new pod's request stands in for its usage")
	f.Float64Var(&o.margin, "safety-margin", o.margin, "percent added on top of every prediction (the agent's default policy adds 10)")
	f.Float64Var(&o.bucketRatio, "bucket-ratio", o.bucketRatio, "growth ratio of the histogram buckets (> 1; the percentile error is about ratio − 1)")
	f.DurationVar(&o.peakWindow, "peak-window", o.peakWindow, "feed the histograms the maximum of each window of this width (whole seconds, aligned on its multiples) instead of every sample (0 = every sample)")
	f.IntVar(&o.vmsPerNode, "vms-per-node", o.vmsPerNode, "bitbrains: VMs per node")
	f.StringSliceVar(&o.maxOf, "max-of", o.maxOf, "the models Max takes the largest of (as predictPolicy.maxOf does for the agent)")
	f.StringVarP(&o.output, "output", "o", o.output, "output format: table or json")
	f.StringVar(&o.eval, "eval", o.eval, "evaluation: horizon (the peak of each --horizon, every --step) or next-bucket (the maximum of each next --bucket, against a sliding-window baseline)")
	f.StringSliceVar(&o.nodes, "nodes", o.nodes, "evaluate only these nodes (alibaba-v2018: machine IDs; bitbrains: the node names, e.g. vm1-10); default: all")
	f.DurationVar(&o.bucket, "bucket", o.bucket, "next-bucket: bucket width (whole seconds)")
	f.IntVar(&o.window, "window", o.window, "next-bucket: bucket maxima the baseline's mean and deviation are taken over")
	f.Float64Var(&o.baselineN, "baseline-n", o.baselineN, "next-bucket: standard deviations the baseline adds to its mean")
	f.IntVar(&o.contiguous, "contiguous", o.contiguous, "next-bucket: buckets right before a bucket that must all hold samples for it to be scored (0 = --window)")
	f.StringSliceVar(&o.curve, "curve", o.curve, "next-bucket: mean predicted peaks, in % of the node, at which to compare violation rates (--curve= for none)")
	return cmd
}

func allModels() []string {
	return []string{
		string(v1alpha1.PredictNSigmaV1), string(v1alpha1.PredictNSigmaV2), string(v1alpha1.PredictBorgDefault),
		string(v1alpha1.PredictResourceCentral), string(v1alpha1.PredictPercentilePeak), string(v1alpha1.PredictMax),
	}
}

func (o predictOptions) validate() field.ErrorList {
	var errs field.ErrorList
	if o.trace != traceAlibabaV2018 && o.trace != traceBitbrains {
		errs = append(errs, field.NotSupported(field.NewPath("--trace"), o.trace, []string{traceAlibabaV2018, traceBitbrains}))
	}
	if o.output != "table" && o.output != "json" {
		errs = append(errs, field.NotSupported(field.NewPath("--output"), o.output, []string{"table", "json"}))
	}
	if len(o.models) == 0 {
		errs = append(errs, field.Required(field.NewPath("--models"), "at least one model"))
	}
	for i, m := range o.models {
		if _, err := predict.New(v1alpha1.PredictModel(m), predict.Params{Percentile: 100}); err != nil {
			errs = append(errs, field.NotSupported(field.NewPath("--models").Index(i), m, allModels()))
		}
	}
	for i, r := range o.resources {
		if r != "cpu" && r != "memory" {
			errs = append(errs, field.NotSupported(field.NewPath("--resources").Index(i), r, []string{"cpu", "memory"}))
		}
	}
	if len(o.resources) == 0 {
		errs = append(errs, field.Required(field.NewPath("--resources"), "at least one resource"))
	}
	for i, m := range o.maxOf {
		if _, err := predict.New(v1alpha1.PredictModel(m), predict.Params{Percentile: 100}); err != nil || m == string(v1alpha1.PredictMax) {
			errs = append(errs, field.NotSupported(field.NewPath("--max-of").Index(i), m, allModels()[:5]))
		}
	}
	if o.vmsPerNode < 1 {
		errs = append(errs, field.Invalid(field.NewPath("--vms-per-node"), o.vmsPerNode, "must be ≥ 1"))
	}
	if len(o.n) == 0 {
		errs = append(errs, field.Required(field.NewPath("--n"), "at least one value"))
	}
	if len(o.percentiles) == 0 {
		errs = append(errs, field.Required(field.NewPath("--percentile"), "at least one value"))
	}
	for i, n := range o.n {
		if !(n >= 0) || math.IsInf(n, 0) {
			errs = append(errs, field.Invalid(field.NewPath("--n").Index(i), n, "must be a finite number ≥ 0"))
		}
	}
	for i, p := range o.percentiles {
		if !(p > 0 && p <= 100) {
			errs = append(errs, field.Invalid(field.NewPath("--percentile").Index(i), p, "must be in (0, 100]"))
		}
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--step", o.step}, {"--horizon", o.horizon}} {
		if d.v < time.Second || d.v%time.Second != 0 {
			errs = append(errs, field.Invalid(field.NewPath(d.flag), d.v.String(), "must be a whole number of seconds ≥ 1s"))
		}
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--warmup", o.warmup}, {"--half-life", o.halfLife}, {"--cold-start", o.coldStart}, {"--peak-window", o.peakWindow}} {
		if d.v < 0 {
			errs = append(errs, field.Invalid(field.NewPath(d.flag), d.v.String(), "must be ≥ 0"))
		}
	}
	if !(o.margin >= 0) || math.IsInf(o.margin, 0) {
		errs = append(errs, field.Invalid(field.NewPath("--safety-margin"), o.margin, "must be a finite number ≥ 0"))
	}
	if o.peakWindow%time.Second != 0 {
		errs = append(errs, field.Invalid(field.NewPath("--peak-window"), o.peakWindow.String(), "must be 0 or a whole number of seconds"))
	}
	if !(o.bucketRatio > 1 && o.bucketRatio <= 10) {
		errs = append(errs, field.Invalid(field.NewPath("--bucket-ratio"), o.bucketRatio, "must be in (1, 10]"))
	}
	if o.eval != evalHorizon && o.eval != evalNextBucket {
		errs = append(errs, field.NotSupported(field.NewPath("--eval"), o.eval, []string{evalHorizon, evalNextBucket}))
	}
	if o.bucket < time.Second || o.bucket%time.Second != 0 {
		errs = append(errs, field.Invalid(field.NewPath("--bucket"), o.bucket.String(), "must be a whole number of seconds ≥ 1s"))
	}
	if o.window < 1 {
		errs = append(errs, field.Invalid(field.NewPath("--window"), o.window, "must be ≥ 1"))
	}
	if !(o.baselineN >= 0) || math.IsInf(o.baselineN, 0) {
		errs = append(errs, field.Invalid(field.NewPath("--baseline-n"), o.baselineN, "must be a finite number ≥ 0"))
	}
	if o.contiguous != 0 && o.contiguous < o.window {
		errs = append(errs, field.Invalid(field.NewPath("--contiguous"), o.contiguous, fmt.Sprintf("must be 0 (= --window) or ≥ --window (%d)", o.window)))
	}
	for i, c := range o.curve {
		if v, err := strconv.ParseFloat(c, 64); err != nil || !(v > 0 && v <= 100) {
			errs = append(errs, field.Invalid(field.NewPath("--curve").Index(i), c, "must be a mean peak in (0, 100] %"))
		}
	}
	return errs
}

// predictors builds every model × parameter the options ask for, each
// once.
func (o predictOptions) predictors() ([]predict.Predictor, error) {
	var out []predict.Predictor
	add := func(model string, mod func(*predict.Params)) error {
		m, err := o.build(model, mod)
		if err != nil {
			return err
		}
		out = append(out, m)
		return nil
	}
	if err := o.eachVariant(add); err != nil {
		return nil, err
	}
	return out, nil
}

// eachVariant calls add for every model × parameter the options ask for
// (N for the N-sigma models, the percentile for the percentile models, both
// for Max), each once, and stops at a model whose variants fail.
func (o predictOptions) eachVariant(add func(model string, mod func(*predict.Params)) error) error {
	for _, model := range o.models {
		var err error
		switch v1alpha1.PredictModel(model) {
		case v1alpha1.PredictNSigmaV1, v1alpha1.PredictNSigmaV2:
			for _, n := range o.n {
				err = errors.Join(err, add(model, func(p *predict.Params) { p.N = n }))
			}
		case v1alpha1.PredictResourceCentral, v1alpha1.PredictPercentilePeak:
			for _, pc := range o.percentiles {
				err = errors.Join(err, add(model, func(p *predict.Params) { p.Percentile = pc }))
			}
		case v1alpha1.PredictMax:
			for _, n := range o.n {
				for _, pc := range o.percentiles {
					err = errors.Join(err, add(model, func(p *predict.Params) { p.N, p.Percentile = n, pc }))
				}
			}
		default:
			err = add(model, func(*predict.Params) {})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// build returns one model with the options' parameters, changed by mod; Max
// combines the --max-of models, each with the same parameters.
func (o predictOptions) build(model string, mod func(*predict.Params)) (predict.Predictor, error) {
	p := predict.Params{ColdStart: o.coldStart, SafetyMarginPercent: o.margin, BorgOvercommit: predict.DefaultBorgOvercommit, Percentile: 100}
	mod(&p)
	if model != string(v1alpha1.PredictMax) {
		return predict.New(v1alpha1.PredictModel(model), p)
	}
	var m predict.Max
	for _, part := range o.maxOf {
		pm, err := predict.New(v1alpha1.PredictModel(part), p)
		if err != nil {
			return nil, err
		}
		m = append(m, pm)
	}
	return m, nil
}

// resourceTrace is one resource of every node of a trace, and the
// histogram layout that suits its unit (% for Alibaba, MHz and KB for
// Bitbrains).
type resourceTrace struct {
	resource string
	layout   predict.HistogramConfig
	nodes    []predict.NodeTrace
}

// predictResult is one row of the output.
type predictResult struct {
	Resource      string  `json:"resource"`
	Model         string  `json:"model"`
	Nodes         int     `json:"nodes"`
	Intervals     int     `json:"intervals"`
	Violations    int     `json:"violations"`
	ViolationRate float64 `json:"violationRate"`
	Savings       float64 `json:"savings"`
}

type predictReport struct {
	Trace   string          `json:"trace"`
	Path    string          `json:"path"`
	Config  predictConfig   `json:"config"`
	Results []predictResult `json:"results"`
}

type predictConfig struct {
	Step                string  `json:"step"`
	Horizon             string  `json:"horizon"`
	Warmup              string  `json:"warmup"`
	HalfLife            string  `json:"halfLife"`
	ColdStart           string  `json:"coldStart"`
	SafetyMarginPercent float64 `json:"safetyMarginPercent"`
	BucketRatio         float64 `json:"bucketRatio"`
	PeakWindow          string  `json:"peakWindow,omitempty"`
	VMsPerNode          int     `json:"vmsPerNode,omitempty"`
}

func runPredict(ctx context.Context, out io.Writer, o predictOptions) error {
	logger := klog.FromContext(ctx)
	if errs := o.validate(); len(errs) > 0 {
		return fmt.Errorf("invalid flags: %w", errs.ToAggregate())
	}
	path, err := o.tracePath()
	if err != nil {
		return err
	}
	models, err := o.predictors()
	if err != nil {
		return err
	}
	start := time.Now()
	traces, err := o.load(path)
	if err != nil {
		return err
	}
	logger.V(2).Info("Loaded trace", "trace", o.trace, "path", path, "duration", time.Since(start))

	report := predictReport{Trace: o.trace, Path: path, Config: predictConfig{
		Step: o.step.String(), Horizon: o.horizon.String(), Warmup: o.warmup.String(), HalfLife: o.halfLife.String(),
		ColdStart: o.coldStart.String(), SafetyMarginPercent: o.margin, BucketRatio: o.bucketRatio,
	}}
	if o.trace == traceBitbrains {
		report.Config.VMsPerNode = o.vmsPerNode
	}
	if o.peakWindow > 0 {
		report.Config.PeakWindow = o.peakWindow.String()
	}
	for _, rt := range traces {
		cfg := rt.layout
		cfg.Ratio, cfg.HalfLife = o.bucketRatio, o.halfLife
		layout, err := predict.NewLayout(cfg)
		if err != nil {
			return fmt.Errorf("histogram layout for %s: %w", rt.resource, err)
		}
		ec := predict.EvalConfig{Layout: layout, Step: o.step, Horizon: o.horizon, Warmup: o.warmup, PeakWindow: o.peakWindow}
		totals := make([]predict.Score, len(models))
		oracle := predict.Score{Model: predict.OracleModel}
		for _, node := range rt.nodes {
			if err := ctx.Err(); err != nil {
				return err
			}
			res, err := predict.Evaluate(node, models, ec)
			if err != nil {
				return err
			}
			for i := range totals {
				totals[i].Model = res.Scores[i].Model
				totals[i].Add(res.Scores[i])
			}
			oracle.Add(res.Oracle)
			logger.V(4).Info("Evaluated node", "resource", rt.resource, "node", node.Name, "intervals", res.Oracle.Intervals)
		}
		if oracle.Intervals == 0 {
			// A table of zero intervals reads as 0 % violations.
			return fmt.Errorf("%s trace %s: no %s interval was scored: the longest node's samples span %s, want at least --step + --warmup + --horizon (%s)",
				o.trace, path, rt.resource, longestSpan(rt.nodes), o.step+o.warmup+o.horizon)
		}
		for _, s := range append([]predict.Score{oracle}, totals...) {
			report.Results = append(report.Results, predictResult{
				Resource: rt.resource, Model: s.Model, Nodes: len(rt.nodes), Intervals: s.Intervals,
				Violations: s.Violations, ViolationRate: s.ViolationRate(), Savings: s.Savings(),
			})
		}
	}
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	return writePredictTable(out, report)
}

func writePredictTable(out io.Writer, r predictReport) error {
	c := r.Config
	fmt.Fprintf(out, "trace %s (%s)\nstep %s, horizon %s, warm-up %s, half-life %s, cold start %s, safety margin %g%%, bucket ratio %g",
		r.Trace, r.Path, c.Step, c.Horizon, c.Warmup, c.HalfLife, c.ColdStart, c.SafetyMarginPercent, c.BucketRatio)
	if c.PeakWindow != "" {
		fmt.Fprintf(out, ", histograms fed %s maxima", c.PeakWindow)
	}
	fmt.Fprint(out, "\n\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "RESOURCE\tMODEL\tNODES\tINTERVALS\tVIOLATIONS\tVIOLATION RATE\tSAVINGS\t")
	for _, x := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.3f%%\t%.1f%%\t\n",
			x.Resource, x.Model, x.Nodes, x.Intervals, x.Violations, 100*x.ViolationRate, 100*x.Savings)
	}
	return tw.Flush()
}

// tracePath returns --path, or the shared sample of the trace.
func (o predictOptions) tracePath() (string, error) {
	if o.path != "" {
		return o.path, nil
	}
	folder := trace.AlibabaV2018Folder
	if o.trace == traceBitbrains {
		folder = trace.BitbrainsFolder
	}
	starts := []string{"."}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	var errs []error
	for _, s := range starts {
		dir, err := trace.FindShared(s, folder)
		if err == nil {
			return relativeToWorkingDir(dir), nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("no --path given and %w", errors.Join(errs...))
}

// relativeToWorkingDir returns dir relative to the working directory when
// it can (the trace's path as the user would type it, not an absolute path
// that names where this machine keeps it), else dir.
func relativeToWorkingDir(dir string) string {
	wd, err := os.Getwd()
	if err != nil {
		return dir
	}
	if rel, err := filepath.Rel(wd, dir); err == nil {
		return rel
	}
	return dir
}

func (o predictOptions) load(path string) ([]resourceTrace, error) {
	var (
		traces []resourceTrace
		err    error
	)
	switch o.trace {
	case traceAlibabaV2018:
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			// Name the file, not its folder, in what follows.
			path = filepath.Join(path, trace.MachineUsageFile)
		}
		traces, err = loadAlibaba(path)
	case traceBitbrains:
		traces, err = loadBitbrains(path, o.vmsPerNode)
	}
	if err != nil {
		return nil, err
	}
	var keep []resourceTrace
	nodes := 0
	for _, rt := range traces {
		if !slices.Contains(o.resources, rt.resource) {
			// Not asked for: a node with no samples of it is no error.
			continue
		}
		if len(o.nodes) > 0 {
			var err error
			if rt.nodes, err = selectNodes(rt.nodes, o.nodes); err != nil {
				return nil, fmt.Errorf("%s trace %s: %s: %w", o.trace, path, rt.resource, err)
			}
		}
		for _, r := range o.resources {
			if rt.resource == r {
				keep = append(keep, rt)
				nodes += len(rt.nodes)
			}
		}
	}
	if nodes == 0 {
		// Scoring nothing would print a table of blank model names and
		// exit 0, which reads as a result.
		return nil, fmt.Errorf("%s trace %s holds no usage samples of %s", o.trace, path, strings.Join(o.resources, " or "))
	}
	return keep, nil
}

// longestSpan is the longest time from a node's first sample to its last.
func longestSpan(nodes []predict.NodeTrace) time.Duration {
	var longest int64
	for _, n := range nodes {
		if l := n.Usage.Len(); l > 0 {
			longest = max(longest, n.Usage.Times[l-1]-n.Usage.Times[0])
		}
	}
	return time.Duration(longest) * time.Second
}

// selectNodes keeps the nodes named in names, in trace order; a name that
// is not in the trace is an error naming it.
func selectNodes(nodes []predict.NodeTrace, names []string) ([]predict.NodeTrace, error) {
	var out []predict.NodeTrace
	for _, n := range nodes {
		if slices.Contains(names, n.Name) {
			out = append(out, n)
		}
	}
	var missing []string
	for _, name := range names {
		if !slices.ContainsFunc(nodes, func(n predict.NodeTrace) bool { return n.Name == name }) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 && len(nodes) > 0 {
		return nil, fmt.Errorf("--nodes: no node %s in the trace", strings.Join(missing, ", "))
	}
	return out, nil
}

// loadAlibaba turns each machine into a node whose usage is in percent of
// the machine; the machine is also its only pod (request = limit = 100),
// so that per-pod models and Borg-default have something to work on.
func loadAlibaba(path string) ([]resourceTrace, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, trace.MachineUsageFile)
	}
	machines, err := trace.LoadMachineSeries(path)
	if err != nil {
		return nil, err
	}
	percent := predict.HistogramConfig{FirstBucketSize: 0.01, MaxValue: 1000}
	cpu := resourceTrace{resource: "cpu", layout: percent}
	mem := resourceTrace{resource: "memory", layout: percent}
	for _, m := range machines {
		for _, x := range []struct {
			rt *resourceTrace
			s  trace.Series
		}{{&cpu, m.CPUPercent}, {&mem, m.MemPercent}} {
			if x.s.Len() == 0 {
				continue
			}
			if err := checkSpan(x.s); err != nil {
				return nil, fmt.Errorf("%s: machine %s: %w", path, m.MachineID, err)
			}
			s := predict.Series(x.s)
			x.rt.nodes = append(x.rt.nodes, predict.NodeTrace{
				Name: m.MachineID, Capacity: 100, Usage: s,
				Pods: []predict.PodTrace{{Name: m.MachineID, Request: 100, Limit: 100, Usage: s}},
			})
		}
	}
	return []resourceTrace{cpu, mem}, nil
}

// checkSpan refuses a series spanning more than the longest simulated
// run: every --step of the span is evaluated, so one time stamp out of
// place would otherwise keep the command busy for days.
func checkSpan(s trace.Series) error {
	if first, last := s.Times[0], s.Times[s.Len()-1]; last-first > int64(workload.MaxDuration/time.Second) {
		return fmt.Errorf("samples from %d s to %d s span more than %s (90 days): is a time stamp out of place?", first, last, workload.MaxDuration)
	}
	return nil
}

// loadBitbrains groups VMs, in file order, into nodes of vmsPerNode: each
// VM is a pod whose request and limit are its provisioned capacity, on the
// 5-minute grid (a single missing sample holds the previous value), and
// the node's usage is the sum of its VMs'.
func loadBitbrains(dir string, vmsPerNode int) ([]resourceTrace, error) {
	vms, err := trace.LoadVMDir(dir)
	if err != nil {
		return nil, err
	}
	cpu := resourceTrace{resource: "cpu", layout: predict.HistogramConfig{FirstBucketSize: 1, MaxValue: 1e7}}
	mem := resourceTrace{resource: "memory", layout: predict.HistogramConfig{FirstBucketSize: 1024, MaxValue: 1e10}}
	for first := 0; first < len(vms); first += vmsPerNode {
		group := vms[first:min(first+vmsPerNode, len(vms))]
		name := "vm" + group[0].ID + "-" + group[len(group)-1].ID
		for _, x := range []struct {
			rt     *resourceTrace
			series func(trace.VMSeries) (trace.Series, float64)
		}{
			{&cpu, func(v trace.VMSeries) (trace.Series, float64) { return v.CPUUsageMHz, v.CPUCapacityMHz }},
			{&mem, func(v trace.VMSeries) (trace.Series, float64) { return v.MemUsageKB, v.MemCapacityKB }},
		} {
			node := predict.NodeTrace{Name: name}
			var parts []trace.Series
			for _, vm := range group {
				s, capacity := x.series(vm)
				if s.Len() == 0 {
					continue
				}
				if err := checkSpan(s); err != nil {
					return nil, fmt.Errorf("%s: VM %s: %w", dir, vm.ID, err)
				}
				grid, err := trace.Resample(s, bitbrainsStep, 1)
				if err != nil {
					return nil, fmt.Errorf("VM %s: %w", vm.ID, err)
				}
				parts = append(parts, grid)
				node.Capacity += capacity
				node.Pods = append(node.Pods, predict.PodTrace{Name: vm.ID, Request: capacity, Limit: capacity, Usage: predict.Series(grid)})
			}
			node.Usage = predict.Series(trace.Sum(parts...))
			x.rt.nodes = append(x.rt.nodes, node)
		}
	}
	return []resourceTrace{cpu, mem}, nil
}

func modelNames(models []v1alpha1.PredictModel) []string {
	out := make([]string, len(models))
	for i, m := range models {
		out[i] = string(m)
	}
	return out
}

// agentDefaults makes the flags the user did not set describe the agent's
// default predictor (the predict policy's defaults, safety margin
// included) and CPU only, the resource the next-bucket baseline is stated
// for.
func (o *predictOptions) agentDefaults(changed func(flag string) bool) {
	d := v1alpha1.PredictPolicyWithDefaults(nil)
	if !changed("models") {
		o.models = []string{string(d.Model)}
	}
	if !changed("n") {
		o.n = []float64{float64(*d.NSigma)}
	}
	if !changed("percentile") {
		o.percentiles = []float64{float64(*d.Percentile)}
	}
	if !changed("safety-margin") {
		o.margin = float64(*d.SafetyMarginPercent)
	}
	if !changed("resources") {
		o.resources = []string{"cpu"}
	}
}

// Knobs a model family is swept along to reach a mean peak.
const (
	knobN      = "n"
	knobMargin = "margin"
)

// Search ranges of the knobs: the API's range of N, and a margin up to
// 500 %. Eleven points per round make every value tried a round decimal.
const (
	matchSteps  = 11
	matchRounds = 5
	maxKnobN    = 20
	maxMargin   = 500
)

// bucketRow is one line of a next-bucket report.
type bucketRow struct {
	Resource string `json:"resource"`
	Model    string `json:"model"`
	// At is "own" (the parameters asked for), "matched" (the knob set to
	// reach the baseline's mean peak) or "curve".
	At string `json:"at"`
	// Knob and KnobValue say what was swept for matched and curve rows.
	Knob      string  `json:"knob,omitempty"`
	KnobValue float64 `json:"knobValue,omitempty"`
	// TargetMeanPeak is the mean peak searched for, a share of the node.
	TargetMeanPeak float64 `json:"targetMeanPeak,omitempty"`
	// Unreached says no knob in range reaches the target exactly: the
	// row is the end of the range nearest to it (n=0 or margin 0 already
	// above it, or the largest knob still below).
	Unreached     bool    `json:"unreached,omitempty"`
	Nodes         int     `json:"nodes"`
	Predictions   int     `json:"predictions"`
	Violations    int     `json:"violations"`
	ViolationRate float64 `json:"violationRate"`
	// MeanPeak is the mean prediction, capped at the node, as a share of
	// the node.
	MeanPeak float64 `json:"meanPeak"`
}

type bucketConfig struct {
	Bucket              string   `json:"bucket"`
	Window              int      `json:"window"`
	BaselineN           float64  `json:"baselineN"`
	Contiguous          int      `json:"contiguous"`
	HalfLife            string   `json:"halfLife"`
	ColdStart           string   `json:"coldStart"`
	SafetyMarginPercent float64  `json:"safetyMarginPercent"`
	BucketRatio         float64  `json:"bucketRatio"`
	PeakWindow          string   `json:"peakWindow,omitempty"`
	MaxOf               []string `json:"maxOf,omitempty"`
	VMsPerNode          int      `json:"vmsPerNode,omitempty"`
	Nodes               []string `json:"nodes,omitempty"`
}

type bucketReport struct {
	Trace   string       `json:"trace"`
	Path    string       `json:"path"`
	Eval    string       `json:"eval"`
	Config  bucketConfig `json:"config"`
	Results []bucketRow  `json:"results"`
	Curve   []bucketRow  `json:"curve,omitempty"`
}

// family is a model of the options with one knob left free.
type family struct {
	model string // the model's name in --models
	name  string // the model at its own parameters
	knob  string
	own   func(*predict.Params)
	build func(x float64) (predict.Predictor, error)
}

// families returns every model × parameter of the options with the knob
// that moves its peak: N for the N-sigma models and a Max holding one,
// else the safety margin. BorgDefault reads no usage and has no knob.
func (o predictOptions) families() ([]family, error) {
	var out []family
	usesN := func(model string) bool {
		switch v1alpha1.PredictModel(model) {
		case v1alpha1.PredictNSigmaV1, v1alpha1.PredictNSigmaV2:
			return true
		case v1alpha1.PredictMax:
			return slices.ContainsFunc(o.maxOf, func(m string) bool {
				return m == string(v1alpha1.PredictNSigmaV1) || m == string(v1alpha1.PredictNSigmaV2)
			})
		}
		return false
	}
	add := func(model string, own func(*predict.Params)) error {
		f := family{model: model, own: own}
		m, err := o.build(model, own)
		if err != nil {
			return err
		}
		f.name = m.String()
		switch {
		case model == string(v1alpha1.PredictBorgDefault):
		case usesN(model):
			f.knob = knobN
			f.build = func(x float64) (predict.Predictor, error) {
				return o.build(model, func(p *predict.Params) { own(p); p.N = x })
			}
		default:
			f.knob = knobMargin
			f.build = func(x float64) (predict.Predictor, error) {
				return o.build(model, func(p *predict.Params) { own(p); p.SafetyMarginPercent = x })
			}
		}
		out = append(out, f)
		return nil
	}
	if err := o.eachVariant(add); err != nil {
		return nil, err
	}
	return out, nil
}

func knobLabel(knob string, x float64) string {
	if knob == knobMargin {
		return fmt.Sprintf("%s+%s%%", knob, strconv.FormatFloat(x, 'f', -1, 64))
	}
	return fmt.Sprintf("%s=%s", knob, strconv.FormatFloat(x, 'f', -1, 64))
}

// runNextBucket is `waterline predict --eval next-bucket`.
func runNextBucket(ctx context.Context, out io.Writer, o predictOptions) error {
	logger := klog.FromContext(ctx)
	if errs := o.validate(); len(errs) > 0 {
		return fmt.Errorf("invalid flags: %w", errs.ToAggregate())
	}
	path, err := o.tracePath()
	if err != nil {
		return err
	}
	fams, err := o.families()
	if err != nil {
		return err
	}
	traces, err := o.load(path)
	if err != nil {
		return err
	}
	contiguous := o.contiguous
	if contiguous == 0 {
		contiguous = o.window
	}
	report := bucketReport{Trace: o.trace, Path: path, Eval: evalNextBucket, Config: bucketConfig{
		Bucket: o.bucket.String(), Window: o.window, BaselineN: o.baselineN, Contiguous: contiguous,
		HalfLife: o.halfLife.String(), ColdStart: o.coldStart.String(), SafetyMarginPercent: o.margin,
		BucketRatio: o.bucketRatio, Nodes: o.nodes,
	}}
	if slices.Contains(o.models, string(v1alpha1.PredictMax)) {
		report.Config.MaxOf = o.maxOf
	}
	if o.trace == traceBitbrains {
		report.Config.VMsPerNode = o.vmsPerNode
	}
	if o.peakWindow > 0 {
		report.Config.PeakWindow = o.peakWindow.String()
	}
	for _, rt := range traces {
		cfg := rt.layout
		cfg.Ratio, cfg.HalfLife = o.bucketRatio, o.halfLife
		layout, err := predict.NewLayout(cfg)
		if err != nil {
			return fmt.Errorf("histogram layout for %s: %w", rt.resource, err)
		}
		ec := predict.BucketEvalConfig{Layout: layout, Bucket: o.bucket, Contiguous: contiguous, PeakWindow: o.peakWindow}
		// score evaluates baselines and models on every node and adds up.
		score := func(baselines []predict.WindowNSigma, models []predict.Predictor) ([]predict.PeakScore, []predict.PeakScore, error) {
			bs, ms := make([]predict.PeakScore, len(baselines)), make([]predict.PeakScore, len(models))
			for _, node := range rt.nodes {
				if err := ctx.Err(); err != nil {
					return nil, nil, err
				}
				res, err := predict.EvaluateNextBucket(node, baselines, models, ec)
				if err != nil {
					return nil, nil, err
				}
				for i := range bs {
					bs[i].Model = res.Baselines[i].Model
					bs[i].Add(res.Baselines[i])
				}
				for i := range ms {
					ms[i].Model = res.Scores[i].Model
					ms[i].Add(res.Scores[i])
				}
			}
			return bs, ms, nil
		}
		row := func(s predict.PeakScore, at string) bucketRow {
			return bucketRow{Resource: rt.resource, Model: s.Model, At: at, Nodes: len(rt.nodes), Predictions: s.Predictions,
				Violations: s.Violations, ViolationRate: s.ViolationRate(), MeanPeak: s.MeanPeak()}
		}
		// Own parameters: one pass for the baseline and every model.
		baseline := predict.WindowNSigma{Window: o.window, N: o.baselineN}
		own := make([]predict.Predictor, len(fams))
		for i, f := range fams {
			if own[i], err = o.build(f.model, f.own); err != nil {
				return err
			}
		}
		bs, ms, err := score([]predict.WindowNSigma{baseline}, own)
		if err != nil {
			return err
		}
		if bs[0].Predictions == 0 {
			// A table of zero predictions reads as 0 % violations.
			return fmt.Errorf("%s trace %s: no %s bucket was scored: the longest node's samples span %s, want --contiguous (%d) buckets of --bucket (%s) with samples before a bucket",
				o.trace, path, rt.resource, longestSpan(rt.nodes), contiguous, o.bucket)
		}
		report.Results = append(report.Results, row(bs[0], "own"))
		for _, s := range ms {
			report.Results = append(report.Results, row(s, "own"))
		}
		// match finds a family's knob for a target mean peak.
		match := func(f family, target float64) (bucketRow, error) {
			hi := float64(maxKnobN)
			if f.knob == knobMargin {
				hi = maxMargin
			}
			x, s, err := predict.MatchMeanPeak(0, hi, target, matchSteps, matchRounds, func(xs []float64) ([]predict.PeakScore, error) {
				models := make([]predict.Predictor, len(xs))
				for i, x := range xs {
					var err error
					if models[i], err = f.build(x); err != nil {
						return nil, err
					}
				}
				_, ms, err := score(nil, models)
				return ms, err
			})
			r := row(s, "matched")
			r.Knob, r.KnobValue, r.TargetMeanPeak = f.knob, x, target
			if errors.Is(err, predict.ErrPeakOutOfReach) {
				r.Unreached, err = true, nil
			}
			return r, err
		}
		target := bs[0].MeanPeak()
		for _, f := range fams {
			if f.knob == "" {
				logger.Info("Model has no knob to match the baseline's mean peak", "model", f.name)
				continue
			}
			r, err := match(f, target)
			if err != nil {
				return err
			}
			report.Results = append(report.Results, r)
		}
		for _, c := range o.curve {
			pct, _ := strconv.ParseFloat(c, 64) // validated
			t := pct / 100
			x, s, err := predict.MatchMeanPeak(0, maxKnobN, t, matchSteps, matchRounds, func(xs []float64) ([]predict.PeakScore, error) {
				baselines := make([]predict.WindowNSigma, len(xs))
				for i, x := range xs {
					baselines[i] = predict.WindowNSigma{Window: o.window, N: x}
				}
				bs, _, err := score(baselines, nil)
				return bs, err
			})
			r := row(s, "curve")
			r.Knob, r.KnobValue, r.TargetMeanPeak = knobN, x, t
			if errors.Is(err, predict.ErrPeakOutOfReach) {
				r.Unreached, err = true, nil
			}
			if err != nil {
				return err
			}
			report.Curve = append(report.Curve, r)
			for _, f := range fams {
				if f.knob == "" {
					continue
				}
				r, err := match(f, t)
				if err != nil {
					return err
				}
				r.At = "curve"
				report.Curve = append(report.Curve, r)
			}
		}
	}
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	return writeBucketTable(out, report)
}

func writeBucketTable(out io.Writer, r bucketReport) error {
	c := r.Config
	fmt.Fprintf(out, "trace %s (%s)\n", r.Trace, r.Path)
	if len(c.Nodes) > 0 {
		fmt.Fprintf(out, "nodes %s\n", strings.Join(c.Nodes, ","))
	}
	fmt.Fprintf(out, "next-bucket maxima: bucket %s; scored where the %d buckets before hold samples\n", c.Bucket, c.Contiguous)
	fmt.Fprintf(out, "baseline window(w=%d,n=N): mean + N population standard deviations of the last %d bucket maxima, capped at the node\n", c.Window, c.Window)
	fmt.Fprintf(out, "models: half-life %s, cold start %s, safety margin %g%%, bucket ratio %g", c.HalfLife, c.ColdStart, c.SafetyMarginPercent, c.BucketRatio)
	if c.PeakWindow != "" {
		fmt.Fprintf(out, ", histograms fed %s maxima", c.PeakWindow)
	}
	if len(c.MaxOf) > 0 {
		fmt.Fprintf(out, ", max-of %s", strings.Join(c.MaxOf, ","))
	}
	fmt.Fprint(out, "\n\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "RESOURCE\tMODEL\tAT\tNODES\tPREDICTIONS\tVIOLATIONS\tVIOLATION RATE\tMEAN PEAK\t")
	for _, x := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%.3f%%\t%.2f%%\t\n", x.Resource, x.Model, bucketAt(x), x.Nodes, x.Predictions,
			x.Violations, 100*x.ViolationRate, 100*x.MeanPeak)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.Curve) == 0 {
		return nil
	}
	fmt.Fprint(out, "\nviolations against mean peak (each knob at the smallest value that reaches the target)\n\n")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "RESOURCE\tTARGET\tMODEL\tAT\tPREDICTIONS\tVIOLATIONS\tVIOLATION RATE\tMEAN PEAK\t")
	for _, x := range r.Curve {
		fmt.Fprintf(tw, "%s\t%.1f%%\t%s\t%s\t%d\t%d\t%.3f%%\t%.2f%%\t\n", x.Resource, 100*x.TargetMeanPeak, x.Model, bucketAt(x),
			x.Predictions, x.Violations, 100*x.ViolationRate, 100*x.MeanPeak)
	}
	return tw.Flush()
}

func bucketAt(x bucketRow) string {
	switch {
	case x.At == "own":
		return "own"
	case x.Unreached && x.MeanPeak > x.TargetMeanPeak:
		return knobLabel(x.Knob, x.KnobValue) + " (min)"
	case x.Unreached:
		return knobLabel(x.Knob, x.KnobValue) + " (max)"
	}
	return knobLabel(x.Knob, x.KnobValue)
}
