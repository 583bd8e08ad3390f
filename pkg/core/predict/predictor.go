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

package predict

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// DefaultBorgOvercommit is Borg-default's a: the peak is Σ requests ÷ a
// (Koordinator node prediction; Bashir et al. use the same form with 1/a = 0.9;
// docs/design/prediction.md#models).
const DefaultBorgOvercommit = 1.1

// PodInput is what a predictor knows about one running pod, for one
// resource.
type PodInput struct {
	// Start is when the pod started running; pods younger than the
	// cold-start period are predicted at their request.
	Start time.Time
	// Request is the pod's request of the resource, in the unit of the
	// histograms.
	Request float64
	// Usage is the pod's usage history; nil or empty means none yet (the
	// pod is then predicted at its request whatever its age).
	Usage *Histogram
}

// Input is everything a predictor looks at, for one resource of one node.
// It is plain data so that the agent, the simulator and the evaluation all
// build it the same way (a Tracker builds it without allocating).
type Input struct {
	// Now is the time of the prediction.
	Now time.Time
	// Node is the usage history of what is predicted as a whole: the Prod pods
	// plus the system (Koordinator node prediction counts non-pod usage as a
	// special pod; docs/design/prediction.md#what-is-predicted). Nil or empty
	// means no history yet.
	Node *Histogram
	// Pods are the running Prod pods. To have the per-pod models cover
	// the system's usage too, pass it as a pod with a zero request and a
	// Start in the past.
	Pods []PodInput
}

// Prediction is a predicted peak.
type Prediction struct {
	// Peak is the predicted peak usage including the safety margin, in the
	// unit of the input.
	Peak float64
	// ColdStartPods is how many pods were predicted at their request
	// because they were younger than the cold-start period or had no
	// history.
	ColdStartPods int
	// Ready is true when every input the model uses had history: no pod
	// was in cold start and, for node-level models, the node had history.
	// The agent reports PredictionReady from it.
	Ready bool
}

// Predictor predicts the peak usage of a node's Prod pods. Implementations
// are immutable values, safe for concurrent use, and do not allocate.
type Predictor interface {
	// Predict returns the peak predicted from in.
	Predict(in *Input) Prediction
	// String names the model and its parameters, e.g. "NSigmaV2(n=5)".
	String() string
}

// Params are the knobs of the predictors; each model uses the ones it
// needs.
type Params struct {
	// N is how many standard deviations the N-sigma models add to the
	// mean. Range: ≥ 0. Policy default 5.
	N float64
	// Percentile is the percentile, in (0, 100], of usage that
	// ResourceCentral (per pod) and PercentilePeak (node) take. Policy
	// default 99.
	Percentile float64
	// ColdStart is how long a new pod's request stands in for its usage
	// history. Range: ≥ 0. Policy default 1h.
	ColdStart time.Duration
	// SafetyMarginPercent is added on top of the peaks the usage-based
	// models predict: peak × (1 + margin/100). BorgDefault takes none: its
	// a is the margin (with a = 1.1 and a 10 % margin it would predict Σ
	// requests and sell nothing). Range: ≥ 0. Policy default 10.
	SafetyMarginPercent float64
	// BorgOvercommit is Borg-default's a (peak = Σ requests ÷ a).
	// Range: > 0; 0 means DefaultBorgOvercommit (1.1). Policy:
	// borgOvercommitPercent ÷ 100, default 1.1.
	BorgOvercommit float64
	// MaxOf are the models Max combines (not Max itself). Policy default
	// NSigmaV2 and ResourceCentral.
	MaxOf []v1alpha1.PredictModel
}

// ParamsFromPolicy returns the parameters a predict policy asks for, with
// the policy's defaults filling what it leaves unset; p may be nil.
func ParamsFromPolicy(p *v1alpha1.PredictPolicy) Params {
	d := v1alpha1.PredictPolicyWithDefaults(p)
	return Params{
		N:                   float64(*d.NSigma),
		Percentile:          float64(*d.Percentile),
		ColdStart:           time.Duration(*d.ColdStartSeconds) * time.Second,
		SafetyMarginPercent: float64(*d.SafetyMarginPercent),
		BorgOvercommit:      float64(*d.BorgOvercommitPercent) / 100,
		MaxOf:               d.MaxOf,
	}
}

// Validate returns every problem of p, each naming the field and value.
func (p Params) Validate(fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !(p.N >= 0) || math.IsInf(p.N, 0) {
		errs = append(errs, field.Invalid(fldPath.Child("n"), p.N, "must be a finite number ≥ 0"))
	}
	if !(p.Percentile > 0 && p.Percentile <= 100) {
		errs = append(errs, field.Invalid(fldPath.Child("percentile"), p.Percentile, "must be in (0, 100]"))
	}
	if p.ColdStart < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("coldStart"), p.ColdStart.String(), "must be ≥ 0"))
	}
	if !(p.SafetyMarginPercent >= 0) || math.IsInf(p.SafetyMarginPercent, 0) {
		errs = append(errs, field.Invalid(fldPath.Child("safetyMarginPercent"), p.SafetyMarginPercent, "must be a finite number ≥ 0"))
	}
	for i, m := range p.MaxOf {
		if m == v1alpha1.PredictMax || m == "" {
			errs = append(errs, field.Invalid(fldPath.Child("maxOf").Index(i), m, "must name a model other than Max"))
		}
	}
	if !(p.BorgOvercommit >= 0) || math.IsInf(p.BorgOvercommit, 0) {
		errs = append(errs, field.Invalid(fldPath.Child("borgOvercommit"), p.BorgOvercommit, "must be a finite number > 0, or 0 for the default"))
	}
	return errs
}

func (p Params) margin(peak float64) float64 { return peak * (1 + p.SafetyMarginPercent/100) }

func (p Params) cold(now time.Time, pod *PodInput) bool {
	return pod.Usage == nil || pod.Usage.IsEmpty() || now.Sub(pod.Start) < p.ColdStart
}

// New returns the predictor model names with params p. Max combines the
// models of p.MaxOf (NSigmaV2 and ResourceCentral when it is empty).
func New(model v1alpha1.PredictModel, p Params) (Predictor, error) {
	if errs := p.Validate(field.NewPath("params")); len(errs) > 0 {
		return nil, fmt.Errorf("building predictor %s: %w", model, errs.ToAggregate())
	}
	if p.BorgOvercommit == 0 {
		p.BorgOvercommit = DefaultBorgOvercommit
	}
	switch model {
	case v1alpha1.PredictNSigmaV1:
		return NSigmaV1{p}, nil
	case v1alpha1.PredictNSigmaV2:
		return NSigmaV2{p}, nil
	case v1alpha1.PredictBorgDefault:
		return BorgDefault{p}, nil
	case v1alpha1.PredictResourceCentral:
		return ResourceCentral{p}, nil
	case v1alpha1.PredictPercentilePeak:
		return PercentilePeak{p}, nil
	case v1alpha1.PredictMax:
		members := p.MaxOf
		if len(members) == 0 {
			members = v1alpha1.DefaultMaxOf
		}
		max := make(Max, 0, len(members))
		for _, m := range members {
			pr, err := New(m, p)
			if err != nil {
				return nil, err
			}
			max = append(max, pr)
		}
		return max, nil
	}
	return nil, fmt.Errorf("building predictor: unknown model %q: want one of %s, %s, %s, %s, %s, %s", model,
		v1alpha1.PredictNSigmaV1, v1alpha1.PredictNSigmaV2, v1alpha1.PredictBorgDefault,
		v1alpha1.PredictResourceCentral, v1alpha1.PredictPercentilePeak, v1alpha1.PredictMax)
}

// nodeLevel predicts from the node histogram with stat; pods in cold start
// add their request on top, since their usage is barely in the node's
// history yet (this counts their first samples twice, on the safe side and
// only for the cold-start period). Without node history every pod counts
// at its request.
func (p Params) nodeLevel(in *Input, stat func(*Histogram) float64) Prediction {
	if in.Node == nil || in.Node.IsEmpty() {
		var sum float64
		for i := range in.Pods {
			sum += in.Pods[i].Request
		}
		return Prediction{Peak: sum, ColdStartPods: len(in.Pods)}
	}
	peak := stat(in.Node)
	cold := 0
	for i := range in.Pods {
		if p.cold(in.Now, &in.Pods[i]) {
			peak += in.Pods[i].Request
			cold++
		}
	}
	return Prediction{Peak: peak, ColdStartPods: cold, Ready: cold == 0}
}

// podLevel sums stat over the pods, requests standing in for pods in cold
// start.
func (p Params) podLevel(in *Input, stat func(*Histogram) float64) Prediction {
	var peak float64
	cold := 0
	for i := range in.Pods {
		pod := &in.Pods[i]
		if p.cold(in.Now, pod) {
			peak += pod.Request
			cold++
			continue
		}
		peak += stat(pod.Usage)
	}
	return Prediction{Peak: peak, ColdStartPods: cold, Ready: cold == 0}
}

func (p Params) nSigma(h *Histogram) float64 { return h.Mean() + p.N*h.StdDev() }

func (p Params) percentile(h *Histogram) float64 { return h.Percentile(p.Percentile) }

// NSigmaV1 predicts mean + N·stdev of the node's Prod usage (Koordinator node
// prediction's Peak_N-Sigma_v1; docs/design/prediction.md#models).
type NSigmaV1 struct{ Params }

// Predict implements Predictor.
func (m NSigmaV1) Predict(in *Input) Prediction {
	r := m.nodeLevel(in, m.nSigma)
	r.Peak = m.margin(r.Peak)
	return r
}

func (m NSigmaV1) String() string { return "NSigmaV1(n=" + fmtNum(m.N) + ")" }

// NSigmaV2 is the larger of NSigmaV1 and Σ per pod (mean + N·stdev): the pod
// sum ignores the pooling effect and so guards against pods that were quiet
// together in the node's history (Koordinator node prediction's
// Peak_N-Sigma_v2; docs/design/prediction.md#models).
type NSigmaV2 struct{ Params }

// Predict implements Predictor.
func (m NSigmaV2) Predict(in *Input) Prediction {
	node := m.nodeLevel(in, m.nSigma)
	pods := m.podLevel(in, m.nSigma)
	return Prediction{
		Peak:          m.margin(max(node.Peak, pods.Peak)),
		ColdStartPods: pods.ColdStartPods,
		Ready:         node.Ready && pods.Ready,
	}
}

func (m NSigmaV2) String() string { return "NSigmaV2(n=" + fmtNum(m.N) + ")" }

// BorgDefault predicts Σ requests ÷ a: a fixed over-commit rate that looks
// at no usage at all, and so takes no safety margin.
type BorgDefault struct{ Params }

// Predict implements Predictor.
func (m BorgDefault) Predict(in *Input) Prediction {
	var sum float64
	for i := range in.Pods {
		sum += in.Pods[i].Request
	}
	a := m.BorgOvercommit
	if a == 0 {
		a = DefaultBorgOvercommit
	}
	// No safety margin: a is one (see Params.SafetyMarginPercent).
	return Prediction{Peak: sum / a, Ready: true}
}

func (m BorgDefault) String() string {
	a := m.BorgOvercommit
	if a == 0 {
		a = DefaultBorgOvercommit
	}
	return "BorgDefault(a=" + fmtNum(a) + ")"
}

// ResourceCentral predicts Σ per pod of a percentile of its usage: each
// pod's own peak, added up as if all peaks coincided.
type ResourceCentral struct{ Params }

// Predict implements Predictor.
func (m ResourceCentral) Predict(in *Input) Prediction {
	r := m.podLevel(in, m.percentile)
	r.Peak = m.margin(r.Peak)
	return r
}

func (m ResourceCentral) String() string { return "ResourceCentral(p=" + fmtNum(m.Percentile) + ")" }

// PercentilePeak predicts a percentile of the node's Prod usage (what
// Koordinator implements).
type PercentilePeak struct{ Params }

// Predict implements Predictor.
func (m PercentilePeak) Predict(in *Input) Prediction {
	r := m.nodeLevel(in, m.percentile)
	r.Peak = m.margin(r.Peak)
	return r
}

func (m PercentilePeak) String() string { return "PercentilePeak(p=" + fmtNum(m.Percentile) + ")" }

// Max predicts the largest peak of its models: more conservative than any
// of them. Each model applies its own safety margin. An empty Max predicts 0.
type Max []Predictor

// Predict implements Predictor.
func (m Max) Predict(in *Input) Prediction {
	if len(m) == 0 {
		return Prediction{Ready: true}
	}
	out := Prediction{Ready: true}
	for i, model := range m {
		r := model.Predict(in)
		if i == 0 || r.Peak > out.Peak {
			out.Peak = r.Peak
		}
		out.ColdStartPods = max(out.ColdStartPods, r.ColdStartPods)
		out.Ready = out.Ready && r.Ready
	}
	return out
}

func (m Max) String() string {
	s := "Max("
	for i, model := range m {
		if i > 0 {
			s += ","
		}
		s += model.String()
	}
	return s + ")"
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
