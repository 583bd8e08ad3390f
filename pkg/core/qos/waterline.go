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
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/apis/v1alpha1/validation"
)

// Action is what the planner does about a waterline.
type Action string

// Actions, in the order the planner considers them.
const (
	// ActionForbidScheduling keeps new Batch/Free pods off the node while
	// usage is over the line.
	ActionForbidScheduling Action = "ForbidScheduling"
	// ActionThrottleDown lowers the CPU quota of Batch/Free pods while usage
	// is over the line.
	ActionThrottleDown Action = "ThrottleDown"
	// ActionThrottleUp gives throttled CPU back while usage is under the
	// line (the restore line).
	ActionThrottleUp Action = "ThrottleUp"
	// ActionEvict evicts Batch/Free pods while usage is over the line.
	ActionEvict Action = "Evict"
)

func actionRank(a Action) int {
	switch a {
	case ActionForbidScheduling:
		return 0
	case ActionThrottleDown:
		return 1
	case ActionThrottleUp:
		return 2
	case ActionEvict:
		return 3
	}
	return 4
}

// Capacity is the node's capacity, which percent waterlines are relative to.
type Capacity struct {
	// CPUMilli is the node's CPU, in millicores.
	CPUMilli int64
	// MemoryBytes is the node's memory, in bytes.
	MemoryBytes int64
}

// Line is one waterline, in absolute units of its metric.
type Line struct {
	Action Action
	Metric MetricName
	// Value is the waterline: millicores for cpu_usage, bytes for
	// memory_usage, the metric's own unit for others. Usage above it is
	// over the line; usage at or below it is under.
	Value int64
	// AvoidanceCount is how many consecutive samples over the line trigger
	// the action (1 to 100).
	AvoidanceCount int32
	// RestoreCount is how many consecutive samples under the line release
	// it (1 to 100). Eviction, which cannot be undone, re-arms at the first
	// sample under its line and ignores it.
	RestoreCount int32
	// Source says where the line came from, for reasons.
	Source string
	// PriorityFirst marks the evict lines of spec.cpu and spec.memory:
	// their victims are the lowest priority first, then the pod whose
	// eviction releases the most usage (PriorityReleaseSorter). Rule lines
	// use their metric's sorter, QoS class first.
	PriorityFirst bool
}

// ThrottleParams tune throttling and restoring (NodeQOS spec.throttle).
type ThrottleParams struct {
	// StepPercent is one restore step, in percent (1-100) of the pod's CPU
	// limit, or of the node's CPU for a pod without one. Default 10.
	StepPercent int32
	// MinCPUPercent is the throttle floor, in percent (1-100) of the pod's
	// CPU request, or of one core for a pod without one. Default 10.
	MinCPUPercent int32
}

// CPUEvictionParams tune the satisfaction-based CPU eviction (NodeQOS
// spec.cpuEviction; docs/design/node-qos.md#satisfaction-based-cpu-eviction).
type CPUEvictionParams struct {
	// WindowSeconds is the window the shell averages over (CPUWindow), in
	// seconds (1-3600). Default 300.
	WindowSeconds int64
	// SatisfactionLowerPercent: Batch/Free pods whose CPU usage ÷ CPU
	// request is below it, in percent (0-100), are starved. Default 60.
	SatisfactionLowerPercent int32
	// SatisfactionUpperPercent: eviction stops once the remaining pods would
	// be satisfied this much, in percent (0-1000, not below the lower
	// bound). Default 80.
	SatisfactionUpperPercent int32
	// BEUsageThresholdPercent: Batch/Free pods count as starved only while
	// they use at least this share, in percent (0-100), of the CPU they may
	// use. Default 90.
	BEUsageThresholdPercent int32
}

// Waterlines are the waterlines of one node, per action and metric, in
// absolute units, and the tuning that goes with them. Build them with
// BuildWaterlines from NodeQOS objects, or NewWaterlines and Add.
type Waterlines struct {
	// Capacity is the node capacity percent lines were converted with.
	Capacity Capacity
	// Lines holds at most one line per action and metric, ordered by action
	// then metric.
	Lines []Line
	// Throttle tunes throttling.
	Throttle ThrottleParams
	// CPUEviction tunes CPU eviction.
	CPUEviction CPUEvictionParams
	// ProtectedNamespaces are namespaces, besides kube-system, whose pods
	// are never acted on (the union of NodeQOS spec.protectedNamespaces),
	// sorted.
	ProtectedNamespaces []string
}

// NewWaterlines returns waterlines without lines and default tuning.
func NewWaterlines(capacity Capacity) *Waterlines {
	return &Waterlines{
		Capacity: capacity,
		Throttle: ThrottleParams{
			StepPercent:   v1alpha1.DefaultThrottleStepPercent,
			MinCPUPercent: v1alpha1.DefaultThrottleMinCPUPercent,
		},
		CPUEviction: CPUEvictionParams{
			WindowSeconds:            v1alpha1.DefaultCPUEvictWindowSeconds,
			SatisfactionLowerPercent: v1alpha1.DefaultSatisfactionLowerPercent,
			SatisfactionUpperPercent: v1alpha1.DefaultSatisfactionUpperPercent,
			BEUsageThresholdPercent:  v1alpha1.DefaultBEUsageThresholdPercent,
		},
	}
}

// Add merges l in: the lowest line of an action and metric wins; on a tie
// the line already there stays. It reports whether l is now the line.
func (w *Waterlines) Add(l Line) bool {
	i, found := slices.BinarySearchFunc(w.Lines, l, compareLineKeys)
	if !found {
		w.Lines = slices.Insert(w.Lines, i, l)
		return true
	}
	if l.Value < w.Lines[i].Value {
		w.Lines[i] = l
		return true
	}
	return false
}

// Line returns the line of action a and metric m.
func (w *Waterlines) Line(a Action, m MetricName) (Line, bool) {
	i, found := slices.BinarySearchFunc(w.Lines, Line{Action: a, Metric: m}, compareLineKeys)
	if !found {
		return Line{}, false
	}
	return w.Lines[i], true
}

func compareLineKeys(a, b Line) int {
	if c := cmp.Compare(actionRank(a.Action), actionRank(b.Action)); c != 0 {
		return c
	}
	return cmp.Compare(a.Metric, b.Metric)
}

// Validate returns every reason the waterlines cannot be planned with reg.
func (w *Waterlines) Validate(reg *Registry) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("waterlines")
	if w.Capacity.CPUMilli < 0 {
		errs = append(errs, field.Invalid(path.Child("capacity", "cpuMilli"), w.Capacity.CPUMilli, "must not be negative"))
	}
	if w.Capacity.MemoryBytes < 0 {
		errs = append(errs, field.Invalid(path.Child("capacity", "memoryBytes"), w.Capacity.MemoryBytes, "must not be negative"))
	}
	for i, l := range w.Lines {
		p := path.Child("lines").Index(i)
		if actionRank(l.Action) > 3 {
			errs = append(errs, field.NotSupported(p.Child("action"), l.Action,
				[]Action{ActionForbidScheduling, ActionThrottleDown, ActionThrottleUp, ActionEvict}))
		}
		if _, ok := reg.Get(l.Metric); !ok {
			errs = append(errs, field.NotFound(p.Child("metric"), l.Metric))
		}
		if l.Value < 0 {
			errs = append(errs, field.Invalid(p.Child("value"), l.Value, "must not be negative"))
		}
		errs = append(errs, validation.ValidateSampleCount(p.Child("avoidanceCount"), l.AvoidanceCount)...)
		errs = append(errs, validation.ValidateSampleCount(p.Child("restoreCount"), l.RestoreCount)...)
		if l.Action == ActionThrottleDown {
			if up, ok := w.Line(ActionThrottleUp, l.Metric); ok && up.Value > l.Value {
				errs = append(errs, field.Invalid(p.Child("value"), l.Value,
					fmt.Sprintf("the restore line %d of %s must not be above the throttle line", up.Value, l.Metric)))
			}
		}
	}
	if err := w.CheckOrder(); err != nil {
		errs = append(errs, field.Invalid(path.Child("lines"), len(w.Lines), err.Error()))
	}
	errs = append(errs, validation.ValidateThrottleTuning(path.Child("throttle"), w.Throttle.StepPercent, w.Throttle.MinCPUPercent)...)
	e := w.CPUEviction
	errs = append(errs, validation.ValidateCPUEvictionTuning(path.Child("cpuEviction"), e.WindowSeconds,
		e.SatisfactionLowerPercent, e.SatisfactionUpperPercent, e.BEUsageThresholdPercent)...)
	return errs
}

// InvertedLinesError says a set of waterlines is out of order for some
// metric: the order must be forbid scheduling <= throttle < evict
// (docs/design/node-qos.md). Acting on such a set would evict before
// throttling, or keep scheduling pods onto a node that is evicting them.
// BuildWaterlines leaves out a NodeQOS whose own lines are inverted; when
// only the merge of several NodeQOS is, CheckOrder returns this error and
// the caller must refuse the merge (the agent keeps its last good lines).
type InvertedLinesError struct {
	// Pairs lists every inversion, one line per pair.
	Pairs []string
}

// Error lists the inverted pairs.
func (e *InvertedLinesError) Error() string {
	return "waterlines out of order: " + strings.Join(e.Pairs, "; ")
}

// CheckOrder returns an *InvertedLinesError when, for some metric, the
// forbid-scheduling line is above the throttle line or not below the evict
// line, or the evict line is not above the throttle line; nil otherwise.
func (w *Waterlines) CheckOrder() error {
	var pairs []string
	desc := func(l Line) string { return fmt.Sprintf("%s %s %d (%s)", l.Action, l.Metric, l.Value, l.Source) }
	metrics := map[MetricName]bool{}
	for _, l := range w.Lines {
		metrics[l.Metric] = true
	}
	for _, m := range slices.Sorted(maps.Keys(metrics)) {
		forbid, hasForbid := w.Line(ActionForbidScheduling, m)
		throttle, hasThrottle := w.Line(ActionThrottleDown, m)
		evict, hasEvict := w.Line(ActionEvict, m)
		if hasThrottle && hasEvict && evict.Value <= throttle.Value {
			pairs = append(pairs, fmt.Sprintf("%s must be above %s", desc(evict), desc(throttle)))
		}
		if hasForbid && hasEvict && forbid.Value >= evict.Value {
			pairs = append(pairs, fmt.Sprintf("%s must be below %s", desc(forbid), desc(evict)))
		}
		if hasForbid && hasThrottle && forbid.Value > throttle.Value {
			pairs = append(pairs, fmt.Sprintf("%s must not be above %s", desc(forbid), desc(throttle)))
		}
	}
	if len(pairs) > 0 {
		return &InvertedLinesError{Pairs: pairs}
	}
	return nil
}

// SelectNodeQOS returns the NodeQOS objects whose nodeSelector selects a
// node with the given labels (an empty selector selects every node), and an
// error for each selector that cannot be parsed.
func SelectNodeQOS(all []v1alpha1.NodeQOS, nodeLabels map[string]string) ([]*v1alpha1.NodeQOS, field.ErrorList) {
	var out []*v1alpha1.NodeQOS
	var errs field.ErrorList
	set := labels.Set(nodeLabels)
	for i := range all {
		nq := &all[i]
		if nq.Spec.NodeSelector == nil {
			out = append(out, nq)
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(nq.Spec.NodeSelector)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath("nodeQOS").Key(nq.Name).Child("spec", "nodeSelector"),
				nq.Spec.NodeSelector, err.Error()))
			continue
		}
		if sel.Matches(set) {
			out = append(out, nq)
		}
	}
	return out, errs
}

// BuildWaterlines turns the NodeQOS objects that select a node into its
// waterlines, in absolute units: percent lines and *_utilization rules are
// converted with capacity, cpu_usage thresholds (cores) to millicores.
//
// For each action and metric the lowest line wins (ties go to the NodeQOS
// whose name sorts first). Throttle tuning comes from the NodeQOS owning the
// winning cpu_usage throttle line (or, without one, the first with any
// throttle line); CPU eviction tuning from the NodeQOS owning the winning
// cpu_usage evict line.
//
// A NodeQOS with any invalid field is left out whole -- a half-applied
// policy would surprise more than a missing one -- and every error is
// returned, naming the field and the value. The waterlines of the valid
// NodeQOS are returned either way, so one bad object does not disarm the
// others.
func BuildWaterlines(nqs []*v1alpha1.NodeQOS, capacity Capacity) (*Waterlines, field.ErrorList) {
	return BuildWaterlinesWithRegistry(nqs, capacity, nil)
}

// BuildWaterlinesWithRegistry is BuildWaterlines that also accepts rules on
// the custom metrics registered in reg (nil: none): their threshold is in
// the metric's own unit (above 0, at most MaxCustomMetricThreshold), a
// Throttle rule needs a throttleable metric and an Evict rule an evictable
// one. A rule on a metric reg does not hold is an error naming it, and its
// NodeQOS is left out like any invalid one.
//
// Each NodeQOS is first validated on its own
// (validation.ValidateNodeQOSSpec: what the CRD schema also refuses, plus
// the custom metrics reg holds), then converted; the conversion adds the
// errors only this node shows (see linesOf) and those of the object's own
// lines out of order here.
func BuildWaterlinesWithRegistry(nqs []*v1alpha1.NodeQOS, capacity Capacity, reg *Registry) (*Waterlines, field.ErrorList) {
	sorted := slices.Clone(nqs)
	sorted = slices.DeleteFunc(sorted, func(nq *v1alpha1.NodeQOS) bool { return nq == nil })
	slices.SortStableFunc(sorted, func(a, b *v1alpha1.NodeQOS) int { return cmp.Compare(a.Name, b.Name) })

	w := NewWaterlines(capacity)
	opts := validationOptions(reg)
	var errs field.ErrorList
	// throttleSet: some NodeQOS with a throttle line gave the tuning; a
	// later one overrides it only by winning the cpu_usage throttle line.
	throttleSet := false
	for _, nq := range sorted {
		path := field.NewPath("nodeQOS").Key(nq.Name).Child("spec")
		if specErrs := validation.ValidateNodeQOSSpec(&nq.Spec, path, opts); len(specErrs) > 0 {
			errs = append(errs, specErrs...)
			continue
		}
		spec := v1alpha1.NodeQOSSpecWithDefaults(&nq.Spec)
		lines, lineErrs := linesOf(spec, capacity, reg, path)
		if len(lineErrs) == 0 {
			// An object whose own lines are out of order on this node (a
			// cpu_usage rule above a cpu_utilization one, two percents
			// that round to the same line) is as invalid as a bad field;
			// the validation caught what the spec alone shows.
			own := NewWaterlines(capacity)
			for _, l := range lines {
				own.Add(l)
			}
			if err := own.CheckOrder(); err != nil {
				lineErrs = append(lineErrs, field.Invalid(path, nq.Name, err.Error()))
			}
		}
		if len(lineErrs) > 0 {
			errs = append(errs, lineErrs...)
			continue
		}
		for _, ns := range nq.Spec.ProtectedNamespaces {
			if i, found := slices.BinarySearch(w.ProtectedNamespaces, ns); !found {
				w.ProtectedNamespaces = slices.Insert(w.ProtectedNamespaces, i, ns)
			}
		}
		for _, l := range lines {
			won := w.Add(l)
			switch {
			case l.Action == ActionThrottleDown && (l.Metric == MetricCPU && won || !throttleSet):
				w.Throttle = ThrottleParams{StepPercent: *spec.Throttle.StepPercent, MinCPUPercent: *spec.Throttle.MinCPUPercent}
				throttleSet = true
			case l.Action == ActionEvict && l.Metric == MetricCPU && won:
				e := spec.CPUEviction
				w.CPUEviction = CPUEvictionParams{
					WindowSeconds:            *e.WindowSeconds,
					SatisfactionLowerPercent: *e.SatisfactionLowerPercent,
					SatisfactionUpperPercent: *e.SatisfactionUpperPercent,
					BEUsageThresholdPercent:  *e.BEUsageThresholdPercent,
				}
			}
		}
	}
	return w, errs
}

// validationOptions tells the validation which custom metrics reg holds,
// in reg's order.
func validationOptions(reg *Registry) validation.NodeQOSOptions {
	var opts validation.NodeQOSOptions
	if reg == nil {
		return opts
	}
	for _, m := range reg.Metrics() {
		// cpu_usage and memory_usage are built in (MetricCPU, MetricMemory).
		if validation.IsBuiltinRuleMetric(v1alpha1.QOSMetric(m.Name)) {
			continue
		}
		opts.CustomMetrics = append(opts.CustomMetrics, validation.CustomMetric{
			Name: v1alpha1.QOSMetric(m.Name), Throttleable: m.Throttleable, Evictable: m.Evictable})
	}
	return opts
}

// linesOf converts one valid (validation.ValidateNodeQOSSpec), defaulted
// NodeQOS spec into lines in absolute units. Its errors are the ones only
// the node shows: a percent waterline or a utilization rule when the
// node's capacity is unknown (0), or one that rounds to a line at 0 on a
// node this small.
func linesOf(spec *v1alpha1.NodeQOSSpec, capacity Capacity, reg *Registry, path *field.Path) ([]Line, field.ErrorList) {
	var errs field.ErrorList
	var lines []Line
	avoid, restore := *spec.AvoidanceCount, *spec.RestoreCount
	// The path names the NodeQOS: nodeQOS[name].spec.cpu.throttlePercent=70.
	source := func(f string, v any) string { return fmt.Sprintf("%s=%v", f, v) }
	// percentLine converts a first-class percent waterline; it is the only
	// way lines of spec.cpu and spec.memory are made.
	percentLine := func(a Action, m MetricName, p *field.Path, pct *int32, capacityOf int64, capField string, avoid, restore int32) (Line, bool) {
		if pct == nil {
			return Line{}, false
		}
		if capacityOf <= 0 {
			errs = append(errs, field.Invalid(p, *pct,
				fmt.Sprintf("a percent waterline needs the node's %s capacity, which is %d", capField, capacityOf)))
			return Line{}, false
		}
		value := percentOf(capacityOf, int64(*pct)*1000)
		if value <= 0 {
			// A line at 0 is crossed by any usage.
			errs = append(errs, field.Invalid(p, *pct,
				fmt.Sprintf("is a line at 0 on a node whose %s capacity is %d", capField, capacityOf)))
			return Line{}, false
		}
		l := Line{
			Action: a, Metric: m, Value: value,
			AvoidanceCount: avoid, RestoreCount: restore, Source: source(p.String(), *pct),
			PriorityFirst: a == ActionEvict,
		}
		lines = append(lines, l)
		return l, true
	}

	if c := spec.CPU; c != nil {
		p := path.Child("cpu")
		percentLine(ActionForbidScheduling, MetricCPU, p.Child("forbidSchedulingPercent"), c.ForbidSchedulingPercent, capacity.CPUMilli, "cpu", avoid, restore)
		throttle, ok := percentLine(ActionThrottleDown, MetricCPU, p.Child("throttlePercent"), c.ThrottlePercent, capacity.CPUMilli, "cpu", avoid, restore)
		if c.RestorePercent != nil {
			percentLine(ActionThrottleUp, MetricCPU, p.Child("restorePercent"), c.RestorePercent, capacity.CPUMilli, "cpu", avoid, restore)
		} else if ok {
			// The restore line defaults to the throttle line itself: a
			// throttle line without a restore line is still a throttle line
			// (a peer drops the throttle gap in that case and never
			// throttles precisely).
			up := throttle
			up.Action = ActionThrottleUp
			lines = append(lines, up)
		}
		// The window of spec.cpuEviction is the CPU evict line's debounce, so
		// the line itself needs one sample.
		percentLine(ActionEvict, MetricCPU, p.Child("evictPercent"), c.EvictPercent, capacity.CPUMilli, "cpu", 1, 1)
	}
	if m := spec.Memory; m != nil {
		p := path.Child("memory")
		percentLine(ActionForbidScheduling, MetricMemory, p.Child("forbidSchedulingPercent"), m.ForbidSchedulingPercent, capacity.MemoryBytes, "memory", avoid, restore)
		// Memory is evicted at once: a late memory eviction is an OOM kill of
		// whatever the kernel picks, Prod included
		// (docs/design/node-qos.md#cpu-and-memory).
		percentLine(ActionEvict, MetricMemory, p.Child("evictPercent"), m.EvictPercent, capacity.MemoryBytes, "memory", 1, 1)
	}

	for i := range spec.Rules {
		r := &spec.Rules[i]
		p := path.Child("rules").Index(i)
		metric, value, err := ruleValue(r, capacity, reg, p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var actions []Action
		switch r.Action {
		case v1alpha1.ActionForbidScheduling:
			actions = []Action{ActionForbidScheduling}
		case v1alpha1.ActionThrottle:
			// A rule's restore line is its threshold.
			actions = []Action{ActionThrottleDown, ActionThrottleUp}
		case v1alpha1.ActionEvict:
			actions = []Action{ActionEvict}
		}
		for _, a := range actions {
			lines = append(lines, Line{
				Action: a, Metric: metric, Value: value,
				AvoidanceCount: *r.AvoidanceCount, RestoreCount: *r.RestoreCount,
				Source: source(p.String(), fmt.Sprintf("%s %s %s", r.Metric, r.Action, r.Threshold.String())),
			})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return lines, nil
}

// customOf returns the custom metric reg holds under the rule metric m.
func customOf(reg *Registry, m v1alpha1.QOSMetric) (Metric, bool) {
	if reg == nil || metricOfRule(m) != "" {
		return Metric{}, false
	}
	return reg.Get(MetricName(m))
}

// ruleValue converts the threshold of rule r (at path p) into its metric's
// absolute unit. The threshold is within its bounds (the validation
// checked them on the quantity, so MilliValue and Value cannot wrap).
func ruleValue(r *v1alpha1.WaterlineRule, capacity Capacity, reg *Registry, p *field.Path) (MetricName, int64, *field.Error) {
	t := r.Threshold
	switch r.Metric {
	case v1alpha1.MetricCPUUsage:
		// Sub-millicore thresholds round up, never down to a line at 0.
		return MetricCPU, max(1, t.MilliValue()), nil
	case v1alpha1.MetricMemoryUsage:
		return MetricMemory, max(1, t.Value()), nil
	case v1alpha1.MetricCPUUtilization, v1alpha1.MetricMemoryUtilization:
		m := metricOfRule(r.Metric)
		capacityOf, capField := capacity.CPUMilli, "cpu"
		if m == MetricMemory {
			capacityOf, capField = capacity.MemoryBytes, "memory"
		}
		if capacityOf <= 0 {
			return m, 0, field.Invalid(p.Child("threshold"), t.String(),
				fmt.Sprintf("a utilization needs the node's %s capacity, which is %d", capField, capacityOf))
		}
		v := percentOf(capacityOf, t.MilliValue())
		if v <= 0 {
			return m, 0, field.Invalid(p.Child("threshold"), t.String(),
				fmt.Sprintf("is a line at 0 on a node whose %s capacity is %d", capField, capacityOf))
		}
		return m, v, nil
	}
	custom, ok := customOf(reg, r.Metric)
	if !ok {
		// The validation refuses such a rule; a caller that skipped it
		// still gets no line on a metric nobody measures.
		return "", 0, field.Invalid(p.Child("metric"), r.Metric, "is not a metric of the registry")
	}
	return custom.Name, customRuleValue(r), nil
}

func metricOfRule(m v1alpha1.QOSMetric) MetricName {
	switch m {
	case v1alpha1.MetricCPUUsage, v1alpha1.MetricCPUUtilization:
		return MetricCPU
	case v1alpha1.MetricMemoryUsage, v1alpha1.MetricMemoryUtilization:
		return MetricMemory
	}
	return ""
}

// percentOf returns capacity × milliPercent ÷ 100 000, rounded down, without
// overflowing for any capacity a node can have (bytes of memory times
// 100 000 passes int64 at 92 TiB).
func percentOf(capacity, milliPercent int64) int64 {
	if capacity <= 0 || milliPercent <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(capacity), uint64(milliPercent))
	if hi >= 100_000 {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, 100_000)
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// NodeUsage is the node's latest usage per metric, in each metric's unit. A
// metric without an entry is missing.
type NodeUsage map[MetricName]int64

// Gap is how far the latest usage is past a line.
type Gap struct {
	Metric MetricName
	// Line and Usage are the values compared (Usage is 0 when missing).
	Line, Usage int64
	// Value is usage − line for ThrottleDown, Evict and ForbidScheduling,
	// line − usage for ThrottleUp; always positive.
	Value int64
	// Missing says the metric's usage was not measured: the gap is unknown.
	Missing bool
}

// Gaps returns, for each metric with a line of action a, the gap from the
// latest usage: only metrics past their line (Value > 0) and metrics whose
// usage is missing, ordered by metric.
func (w *Waterlines) Gaps(a Action, usage NodeUsage) []Gap {
	var out []Gap
	for _, l := range w.Lines {
		if l.Action != a {
			continue
		}
		u, ok := usage[l.Metric]
		if !ok {
			out = append(out, Gap{Metric: l.Metric, Line: l.Value, Missing: true})
			continue
		}
		v := u - l.Value
		if a == ActionThrottleUp {
			v = l.Value - u
		}
		if v > 0 {
			out = append(out, Gap{Metric: l.Metric, Line: l.Value, Usage: u, Value: v})
		}
	}
	return out
}
