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
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"

	"github.com/waterline-dev/waterline/apis/extension"
)

func TestVictimVerdict(t *testing.T) {
	// mid-np (7500) is NonPreemptible below 9000; batch (5000) is normal.
	classes := testClasses(t)
	malformed := Classes{"mid-typo": mustParse(t, makeClass("mid-typo", 7500, nonPreemptible("x")))}
	noThreshold := Classes{"mid-np": mustParse(t, makeClass("mid-np", 7500, nonPreemptible("")))}
	tests := []struct {
		name      string
		victim    *corev1.Pod
		preemptor int32
		classes   ClassLookup
		want      Verdict
	}{
		{
			name:      "lower-priority pod of a normal class is a victim",
			victim:    makePod("v").priority(5000).class("batch").obj(),
			preemptor: 9500,
			classes:   classes.Lookup,
			want:      Verdict{PreemptorPriority: 9500, VictimPriority: 5000},
		},
		{
			name:      "pod of equal priority is not a victim",
			victim:    makePod("v").priority(9500).class("prod").obj(),
			preemptor: 9500,
			classes:   classes.Lookup,
			want:      Verdict{Reason: NotLowerPriority, PreemptorPriority: 9500, VictimPriority: 9500},
		},
		{
			name:      "NonPreemptible pod is not a victim below the threshold",
			victim:    makePod("v").priority(7500).class("mid-np").obj(),
			preemptor: 8999,
			classes:   classes.Lookup,
			want:      Verdict{Reason: NonPreemptibleClass, PreemptorPriority: 8999, VictimPriority: 7500, Class: "mid-np", Threshold: 9000},
		},
		{
			name:      "NonPreemptible pod is a victim at the threshold",
			victim:    makePod("v").priority(7500).class("mid-np").obj(),
			preemptor: 9000,
			classes:   classes.Lookup,
			want:      Verdict{PreemptorPriority: 9000, VictimPriority: 7500},
		},
		{
			name:      "NonPreemptible pod is a victim above the threshold",
			victim:    makePod("v").priority(7500).class("mid-np").obj(),
			preemptor: 9500,
			classes:   classes.Lookup,
			want:      Verdict{PreemptorPriority: 9500, VictimPriority: 7500},
		},
		{
			name:      "NonPreemptible without threshold holds against the highest user priority",
			victim:    makePod("v").priority(7500).class("mid-np").obj(),
			preemptor: 1000000000,
			classes:   noThreshold.Lookup,
			want: Verdict{Reason: NonPreemptibleClass, PreemptorPriority: 1000000000, VictimPriority: 7500,
				Class: "mid-np", Threshold: extension.SystemCriticalPriority},
		},
		{
			name:      "NonPreemptible without threshold yields to system-critical pods",
			victim:    makePod("v").priority(7500).class("mid-np").obj(),
			preemptor: extension.SystemCriticalPriority,
			classes:   noThreshold.Lookup,
			want:      Verdict{PreemptorPriority: extension.SystemCriticalPriority, VictimPriority: 7500},
		},
		{
			name:      "malformed annotation leaves a normal class",
			victim:    makePod("v").priority(7500).class("mid-typo").obj(),
			preemptor: 8000,
			classes:   malformed.Lookup,
			want:      Verdict{PreemptorPriority: 8000, VictimPriority: 7500},
		},
		{
			name:      "unknown class is a normal class",
			victim:    makePod("v").priority(7500).class("deleted").obj(),
			preemptor: 8000,
			classes:   classes.Lookup,
			want:      Verdict{PreemptorPriority: 8000, VictimPriority: 7500},
		},
		{
			name:      "no class lookup: nothing is NonPreemptible",
			victim:    makePod("v").priority(7500).class("mid-np").obj(),
			preemptor: 8000,
			want:      Verdict{PreemptorPriority: 8000, VictimPriority: 7500},
		},
		{
			name:      "pod without priority counts as 0",
			victim:    makePod("v").obj(),
			preemptor: 1,
			classes:   classes.Lookup,
			want:      Verdict{PreemptorPriority: 1},
		},
		{
			name:      "DaemonSet pod is never a victim",
			victim:    makePod("v").priority(0).ownedBy("DaemonSet").obj(),
			preemptor: 9500,
			classes:   classes.Lookup,
			want:      Verdict{Reason: DaemonSetPod, PreemptorPriority: 9500},
		},
		{
			name:      "mirror pod is never a victim",
			victim:    makePod("v").priority(0).mirror().obj(),
			preemptor: 9500,
			classes:   classes.Lookup,
			want:      Verdict{Reason: StaticOrMirror, PreemptorPriority: 9500},
		},
		{
			name:      "ReplicaSet pod is a victim",
			victim:    makePod("v").priority(0).ownedBy("ReplicaSet").obj(),
			preemptor: 9500,
			classes:   classes.Lookup,
			want:      Verdict{PreemptorPriority: 9500},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			preemptor := makePod("p").priority(tt.preemptor).obj()
			got := VictimVerdict(tt.victim, preemptor, tt.classes)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("VictimVerdict() (-want +got):\n%s", diff)
			}
			if got.Eligible() != (tt.want.Reason == Eligible) {
				t.Errorf("Eligible() = %v for reason %q", got.Eligible(), got.Reason)
			}
		})
	}
}

func TestVerdictString(t *testing.T) {
	tests := []struct {
		v    Verdict
		want string
	}{
		{Verdict{}, "preemptible"},
		{Verdict{Reason: NotLowerPriority, PreemptorPriority: 100, VictimPriority: 200}, "node(s) had pods of priority 200, not below the preemptor's priority 100"},
		{Verdict{Reason: DaemonSetPod}, "node(s) had DaemonSet pods, which are never preempted"},
		{Verdict{Reason: StaticOrMirror}, "node(s) had static pods, which are never preempted"},
		{
			Verdict{Reason: NonPreemptibleClass, PreemptorPriority: 8000, VictimPriority: 7500, Class: "mid-np", Threshold: 9000},
			`node(s) had pods of NonPreemptible PriorityClass "mid-np", not preemptible by priority 8000 below threshold 9000`,
		},
	}
	for _, tt := range tests {
		t.Run(string(tt.v.Reason), func(t *testing.T) {
			if got := tt.v.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPreemptorVerdict(t *testing.T) {
	classes := testClasses(t)
	tests := []struct {
		name    string
		pod     *corev1.Pod
		wantOK  bool
		wantMsg string
	}{
		{
			name:   "normal class preempts",
			pod:    makePod("p").priority(9500).class("prod").obj(),
			wantOK: true,
		},
		{
			name:    "pod preemptionPolicy Never",
			pod:     makePod("p").priority(9500).class("prod").never().obj(),
			wantMsg: "not eligible due to preemptionPolicy=Never",
		},
		{
			name:    "class preemptionPolicy Never, pod created before the class said so",
			pod:     makePod("p").priority(9900).class("hi-once").obj(),
			wantMsg: `not eligible due to preemptionPolicy=Never of PriorityClass "hi-once"`,
		},
		{
			name:   "no class preempts",
			pod:    makePod("p").priority(10).obj(),
			wantOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, msg := PreemptorVerdict(tt.pod, classes.Lookup)
			if ok != tt.wantOK || msg != tt.wantMsg {
				t.Errorf("PreemptorVerdict() = %v, %q; want %v, %q", ok, msg, tt.wantOK, tt.wantMsg)
			}
		})
	}
}

func mustParse(t *testing.T, pc *schedulingv1.PriorityClass) Class {
	t.Helper()
	c, _ := ParseClass(pc) // malformed classes are wanted here as normal classes
	return c
}
