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

package preemption

import (
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"

	"github.com/waterline-dev/waterline/apis/extension"
)

// Class is what a PriorityClass says about preemption.
type Class struct {
	// Name of the PriorityClass.
	Name string
	// Value is the class's priority.
	Value int32
	// NeverPreempts is true when the class's preemptionPolicy is Never:
	// its pods queue by priority but preempt nobody.
	NeverPreempts bool
	// NonPreemptible is true when the class carries a well-formed
	// waterline.dev/preemption-policy: NonPreemptible annotation.
	NonPreemptible bool
	// PreemptibleBy is the lowest preemptor priority that may still preempt
	// running pods of a NonPreemptible class. It never exceeds
	// extension.SystemCriticalPriority, so system-critical pods can always
	// make room. Meaningless unless NonPreemptible.
	PreemptibleBy int32
}

// AnnotationError says why a PriorityClass annotation was ignored. The class
// it belongs to is treated as a normal class; callers record the error as an
// Event on the PriorityClass so the owner can fix it.
type AnnotationError struct {
	// Class is the PriorityClass name.
	Class string
	// Annotation is the annotation key.
	Annotation string
	// Value is the annotation value as found.
	Value string
	// Reason says what is wrong with it.
	Reason string
}

func (e *AnnotationError) Error() string {
	return fmt.Sprintf("PriorityClass %q: ignoring annotation %s=%q: %s; the class is treated as a normal preemptible class",
		e.Class, e.Annotation, e.Value, e.Reason)
}

// ParseClass reads a PriorityClass's preemption policy and Waterline
// annotations.
//
// The annotations are honoured only when they are well formed and mean
// something: waterline.dev/preemption-policy must be exactly
// "NonPreemptible"; waterline.dev/preemptible-by-priority, when present, must
// be an int32 above the class's own value (a threshold at or below it could
// never protect anything, since victims always have a lower priority than
// their preemptor) and only makes sense beside the NonPreemptible policy.
// Without a threshold only system-critical pods may preempt the class's
// pods; a threshold above extension.SystemCriticalPriority is lowered to it.
//
// On any malformed annotation the returned Class is a normal class (not
// NonPreemptible) and the error, made of *AnnotationError, says why. The
// returned Class is always usable.
func ParseClass(pc *schedulingv1.PriorityClass) (Class, error) {
	c := Class{
		Name:          pc.Name,
		Value:         pc.Value,
		NeverPreempts: pc.PreemptionPolicy != nil && *pc.PreemptionPolicy == corev1.PreemptNever,
	}
	policy, hasPolicy := pc.Annotations[extension.AnnotationPreemptionPolicy]
	threshold, hasThreshold := pc.Annotations[extension.AnnotationPreemptibleByPriority]
	if !hasPolicy && !hasThreshold {
		return c, nil
	}
	annErr := func(key, value, reason string) error {
		return &AnnotationError{Class: pc.Name, Annotation: key, Value: value, Reason: reason}
	}

	var errs []error
	if hasPolicy && policy != extension.PreemptionPolicyNonPreemptible {
		errs = append(errs, annErr(extension.AnnotationPreemptionPolicy, policy,
			fmt.Sprintf("want %q", extension.PreemptionPolicyNonPreemptible)))
	}
	preemptibleBy := extension.SystemCriticalPriority
	if hasThreshold {
		v, err := strconv.ParseInt(threshold, 10, 32)
		switch {
		case err != nil:
			errs = append(errs, annErr(extension.AnnotationPreemptibleByPriority, threshold, "not a 32-bit integer"))
		case !hasPolicy:
			errs = append(errs, annErr(extension.AnnotationPreemptibleByPriority, threshold,
				fmt.Sprintf("it has no effect without %s: %s", extension.AnnotationPreemptionPolicy, extension.PreemptionPolicyNonPreemptible)))
		case int32(v) <= pc.Value:
			errs = append(errs, annErr(extension.AnnotationPreemptibleByPriority, threshold,
				fmt.Sprintf("it must be above the class value %d to protect anything", pc.Value)))
		default:
			preemptibleBy = min(int32(v), extension.SystemCriticalPriority)
		}
	}
	if len(errs) > 0 {
		return c, errors.Join(errs...)
	}
	c.NonPreemptible = true
	c.PreemptibleBy = preemptibleBy
	return c, nil
}

// ClassLookup returns the parsed class of a name, and false when no such
// PriorityClass exists. A pod whose class is unknown is treated as a pod of
// a normal class.
type ClassLookup func(name string) (Class, bool)

// Classes is a ClassLookup over a fixed set of classes, for the audit, the
// simulator and tests.
type Classes map[string]Class

// Lookup implements ClassLookup.
func (cs Classes) Lookup(name string) (Class, bool) {
	c, ok := cs[name]
	return c, ok
}

// ParseClasses parses every class; malformed ones are kept as normal
// classes and their errors are returned joined, in input order.
func ParseClasses(pcs []*schedulingv1.PriorityClass) (Classes, error) {
	cs := make(Classes, len(pcs))
	var errs []error
	for _, pc := range pcs {
		c, err := ParseClass(pc)
		if err != nil {
			errs = append(errs, err)
		}
		cs[c.Name] = c
	}
	return cs, errors.Join(errs...)
}
