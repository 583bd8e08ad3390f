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
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// BudgetScope says which pods one DisruptionBudget covers.
type BudgetScope string

// Scopes of a DisruptionBudget.
const (
	// BudgetPerPod gives every service or job of the class its own
	// PodDisruptionBudget over its pod: the workload's services and jobs
	// are one pod each, so the budget allows an eviction exactly when
	// MaxUnavailable scaled to one pod is at least 1.
	BudgetPerPod BudgetScope = "pod"
	// BudgetPerClass is one PodDisruptionBudget over every pod of the
	// class (the class's namespace), the way one budget selects all the
	// replicas of a workload.
	BudgetPerClass BudgetScope = "class"
)

// DisruptionBudget is a PodDisruptionBudget over the pods of one class of
// work, as the disruption controller counts it: disruptions allowed = the
// pods covered that are running − (the pods expected − MaxUnavailable),
// where a pod evicted, preempted or killed stays expected (unavailable)
// until its job's next pod runs.
type DisruptionBudget struct {
	// Class is the work covered: prod (the services), mid or batch (the
	// jobs).
	Class workload.Class `json:"class"`
	// Per is BudgetPerPod or BudgetPerClass.
	Per BudgetScope `json:"per"`
	// MaxUnavailable is how many of the covered pods may be unavailable at
	// once: a count (≥ 0) or a percentage ("10%", in [0%, 100%]) of the
	// pods expected, rounded up as the disruption controller rounds it.
	MaxUnavailable intstr.IntOrString `json:"maxUnavailable"`
}

// DefaultDisruptionBudgets returns one PodDisruptionBudget per Prod
// service with maxUnavailable 1, the common budget of an online service,
// and none for Mid and Batch jobs (Jobs rarely have one; a budget with
// maxUnavailable needs a controller with a scale subresource, which a Job
// is not). Nothing the simulation models evicts a Prod pod -- node QoS
// never acts on Prod, the OOM killer spares services, and nothing
// outranks Prod to preempt it -- so the default changes no figure; budgets
// over Mid or Batch pods do (Config.DisruptionBudgets).
func DefaultDisruptionBudgets() []DisruptionBudget {
	return []DisruptionBudget{{Class: workload.ClassProd, Per: BudgetPerPod, MaxUnavailable: intstr.FromInt32(1)}}
}

func (b *DisruptionBudget) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch b.Class {
	case workload.ClassProd, workload.ClassMid, workload.ClassBatch:
	default:
		errs = append(errs, field.NotSupported(path.Child("class"), b.Class, []workload.Class{workload.ClassProd, workload.ClassMid, workload.ClassBatch}))
	}
	if b.Per != BudgetPerPod && b.Per != BudgetPerClass {
		errs = append(errs, field.NotSupported(path.Child("per"), b.Per, []BudgetScope{BudgetPerPod, BudgetPerClass}))
	}
	if _, err := b.scaled(100); err != nil {
		errs = append(errs, field.Invalid(path.Child("maxUnavailable"), b.MaxUnavailable.String(), err.Error()))
	}
	return errs
}

// scaled is MaxUnavailable for expected pods.
func (b *DisruptionBudget) scaled(expected int64) (int64, error) {
	v, err := intstr.GetScaledValueFromIntOrPercent(&b.MaxUnavailable, int(min(expected, math.MaxInt32)), true)
	if err != nil {
		return 0, err
	}
	if v < 0 || b.MaxUnavailable.Type == intstr.String && v > int(expected) {
		return 0, fmt.Errorf("must be a count ≥ 0 or a percentage in [0%%, 100%%]")
	}
	return int64(v), nil
}

// budgetState is one budget's count during a run. A BudgetPerPod budget
// stands for one budget per pod; its counts are not used.
type budgetState struct {
	spec *DisruptionBudget
	// perPodAllowed is the disruptions a BudgetPerPod budget allows its
	// running pod.
	perPodAllowed int64
	// running are the covered pods on a node; disrupted the covered pods
	// taken off a node other than by finishing, whose job's next pod does
	// not run yet.
	running, disrupted int64
}

// allowed is the disruptions the budget allows now.
func (b *budgetState) allowed() int64 {
	if b.spec.Per == BudgetPerPod {
		return b.perPodAllowed
	}
	// validate checked MaxUnavailable.
	maxUnavailable, _ := b.spec.scaled(b.running + b.disrupted)
	return b.running - (b.running + b.disrupted - maxUnavailable)
}

// noBudget is a pod's budget index when no budget covers it.
const noBudget = -1

// newBudgets makes the run's budgets (Validate allows one per class).
func (r *run) newBudgets() {
	r.budgets = make([]budgetState, len(r.cfg.DisruptionBudgets))
	r.budgetOf = [numKinds]int{noBudget, noBudget, noBudget}
	for i := range r.cfg.DisruptionBudgets {
		b := &r.cfg.DisruptionBudgets[i]
		r.budgets[i].spec = b
		r.budgets[i].perPodAllowed, _ = b.scaled(1)
		switch b.Class {
		case workload.ClassProd:
			r.budgetOf[kindService] = i
		case workload.ClassMid:
			r.budgetOf[kindMid] = i
		default:
			r.budgetOf[kindBatch] = i
		}
	}
}

// budgetStarts counts p, placed on a node, in its budget; its job's
// disruption, if any, is over.
func (r *run) budgetStarts(p *pod) {
	b := r.budgetOf[p.h.kind]
	if b == noBudget {
		return
	}
	r.budgets[b].running++
	if p.job >= 0 && r.jobs[p.job].disrupted {
		r.jobs[p.job].disrupted = false
		r.budgets[b].disrupted--
	}
}

// budgetEnds counts p out of its budget as it leaves its node; disrupted
// says it did not finish.
func (r *run) budgetEnds(p *pod, disrupted bool) {
	b := r.budgetOf[p.st().kind]
	if b == noBudget {
		return
	}
	r.budgets[b].running--
	if disrupted && p.job >= 0 {
		r.jobs[p.job].disrupted = true
		r.budgets[b].disrupted++
	}
}

// evictionAllowed is the Eviction API's answer for p: false when an
// eviction would break its budget.
func (r *run) evictionAllowed(p *pod) bool {
	b := r.budgetOf[p.st().kind]
	return b == noBudget || r.budgets[b].allowed() >= 1
}
