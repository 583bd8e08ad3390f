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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
)

// annotationErrors flattens a joined error into its *AnnotationErrors.
func annotationErrors(t *testing.T, err error) []AnnotationError {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var out []AnnotationError
	for _, e := range errs {
		var ae *AnnotationError
		if !errors.As(e, &ae) {
			t.Fatalf("error %v is not an *AnnotationError", e)
		}
		out = append(out, *ae)
	}
	return out
}

func TestParseClass(t *testing.T) {
	const (
		policyKey    = extension.AnnotationPreemptionPolicy
		thresholdKey = extension.AnnotationPreemptibleByPriority
	)
	tests := []struct {
		name        string
		value       int32
		annotations map[string]string
		never       bool
		want        Class
		wantErrs    []AnnotationError
	}{
		{
			name:  "no annotations is a normal class",
			value: 5000,
			want:  Class{Name: "c", Value: 5000},
		},
		{
			name:  "preemptionPolicy Never preempts nobody",
			value: 9500,
			never: true,
			want:  Class{Name: "c", Value: 9500, NeverPreempts: true},
		},
		{
			name:        "NonPreemptible with a threshold",
			value:       7500,
			annotations: nonPreemptible("9000"),
			want:        Class{Name: "c", Value: 7500, NonPreemptible: true, PreemptibleBy: 9000},
		},
		{
			name:        "NonPreemptible without a threshold yields only to system-critical pods",
			value:       7500,
			annotations: nonPreemptible(""),
			want:        Class{Name: "c", Value: 7500, NonPreemptible: true, PreemptibleBy: extension.SystemCriticalPriority},
		},
		{
			name:        "threshold above system-critical is lowered to it",
			value:       7500,
			annotations: nonPreemptible("2100000000"),
			want:        Class{Name: "c", Value: 7500, NonPreemptible: true, PreemptibleBy: extension.SystemCriticalPriority},
		},
		{
			name:        "threshold one above the value still protects",
			value:       7500,
			annotations: nonPreemptible("7501"),
			want:        Class{Name: "c", Value: 7500, NonPreemptible: true, PreemptibleBy: 7501},
		},
		{
			name:        "policy in the wrong case is malformed",
			value:       7500,
			annotations: map[string]string{policyKey: "nonpreemptible"},
			want:        Class{Name: "c", Value: 7500},
			wantErrs:    []AnnotationError{{Class: "c", Annotation: policyKey, Value: "nonpreemptible", Reason: `want "NonPreemptible"`}},
		},
		{
			name:        "threshold not a number is malformed",
			value:       7500,
			annotations: nonPreemptible("nine-thousand"),
			want:        Class{Name: "c", Value: 7500},
			wantErrs:    []AnnotationError{{Class: "c", Annotation: thresholdKey, Value: "nine-thousand", Reason: "not a 32-bit integer"}},
		},
		{
			name:        "threshold beyond int32 is malformed",
			value:       7500,
			annotations: nonPreemptible("2147483648"),
			want:        Class{Name: "c", Value: 7500},
			wantErrs:    []AnnotationError{{Class: "c", Annotation: thresholdKey, Value: "2147483648", Reason: "not a 32-bit integer"}},
		},
		{
			name:        "threshold at the class value protects nothing",
			value:       7500,
			annotations: nonPreemptible("7500"),
			want:        Class{Name: "c", Value: 7500},
			wantErrs:    []AnnotationError{{Class: "c", Annotation: thresholdKey, Value: "7500", Reason: "it must be above the class value 7500 to protect anything"}},
		},
		{
			name:        "threshold without the policy has no effect",
			value:       7500,
			annotations: map[string]string{thresholdKey: "9000"},
			want:        Class{Name: "c", Value: 7500},
			wantErrs: []AnnotationError{{Class: "c", Annotation: thresholdKey, Value: "9000",
				Reason: "it has no effect without waterline.dev/preemption-policy: NonPreemptible"}},
		},
		{
			name:        "both malformed reports both",
			value:       7500,
			annotations: map[string]string{policyKey: "Never", thresholdKey: "x"},
			want:        Class{Name: "c", Value: 7500},
			wantErrs: []AnnotationError{
				{Class: "c", Annotation: policyKey, Value: "Never", Reason: `want "NonPreemptible"`},
				{Class: "c", Annotation: thresholdKey, Value: "x", Reason: "not a 32-bit integer"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pc := makeClass("c", tt.value, tt.annotations)
			if tt.never {
				pc.PreemptionPolicy = ptr.To(corev1.PreemptNever)
			}
			got, err := ParseClass(pc)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseClass() class (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErrs, annotationErrors(t, err)); diff != "" {
				t.Errorf("ParseClass() errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnnotationErrorMessage(t *testing.T) {
	_, err := ParseClass(makeClass("mid-np", 7500, nonPreemptible("soon")))
	want := `PriorityClass "mid-np": ignoring annotation waterline.dev/preemptible-by-priority="soon": not a 32-bit integer; the class is treated as a normal preemptible class`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

func TestParseClasses(t *testing.T) {
	cs, err := ParseClasses(nil)
	if err != nil || len(cs) != 0 {
		t.Fatalf("ParseClasses(nil) = %v, %v; want empty, nil", cs, err)
	}
	cs, err = ParseClasses(append(classList(), makeClass("typo", 7000, nonPreemptible("x"))))
	if err == nil || !strings.Contains(err.Error(), `PriorityClass "typo"`) {
		t.Errorf("ParseClasses() error = %v, want one naming the class typo", err)
	}
	want := Classes{
		"mid-np":  {Name: "mid-np", Value: 7500, NonPreemptible: true, PreemptibleBy: 9000},
		"batch":   {Name: "batch", Value: 5000},
		"prod":    {Name: "prod", Value: 9500},
		"typo":    {Name: "typo", Value: 7000},
		"hi-once": {Name: "hi-once", Value: 9900, NeverPreempts: true},
	}
	if diff := cmp.Diff(want, cs); diff != "" {
		t.Errorf("ParseClasses() (-want +got):\n%s", diff)
	}
}

// classList: a NonPreemptible mid class that yields at 9000, a plain batch
// class, a prod class and a high class that never preempts.
func classList() []*schedulingv1.PriorityClass {
	never := makeClass("hi-once", 9900, nil)
	never.PreemptionPolicy = ptr.To(corev1.PreemptNever)
	return []*schedulingv1.PriorityClass{
		makeClass("mid-np", 7500, nonPreemptible("9000")),
		makeClass("batch", 5000, nil),
		makeClass("prod", 9500, nil),
		never,
	}
}

func testClasses(t *testing.T) Classes {
	t.Helper()
	cs, err := ParseClasses(classList())
	if err != nil {
		t.Fatalf("ParseClasses: %v", err)
	}
	return cs
}
