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

package audit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func class(name string, value int32, annotations map[string]string) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}, Value: value}
}

func node(name, cpu string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:  resource.MustParse(cpu),
			corev1.ResourcePods: resource.MustParse("110"),
		}},
	}
}

// pod: class "" means none; priority < 0 means unset (not admitted by the
// Priority plugin); nodeName "" means pending; startMin is the start time
// in minutes after t0 for bound pods and the creation time for pending ones.
func pod(namespace, name, class string, priority int32, cpu, nodeName string, startMin int) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": name},
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(startMin) * time.Minute))},
		Spec: corev1.PodSpec{
			PriorityClassName: class,
			NodeName:          nodeName,
			Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	if priority >= 0 {
		p.Spec.Priority = ptr.To(priority)
	}
	if nodeName != "" {
		p.Status.Phase = corev1.PodRunning
		p.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(time.Duration(startMin) * time.Minute)))
	}
	return p
}

func daemonSet(namespace, name, class string) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{PriorityClassName: class}}},
	}
}

// fixture is a small cluster before preemption is switched on:
//
//	node-a (4 CPU): batch-1 2 (5500, a PDB allows 0 disruptions), np-1 2 (mid-np 7200, NonPreemptible below 9000)
//	node-b (4 CPU): mid-1 1 (7500), free-1 1 (3500), agent-x 0.5 (DaemonSet pod, no class), legacy 1 (no class, no priority)
//	pending: never-1 1 CPU (9800, preemptionPolicy Never), prod-1 2 CPU (9500), mid-2 3 CPU (7500), mid-3 1 CPU (7500),
//	         gated-1 4 CPU (9500, a scheduling gate: not scheduled, so left out of the dry run)
func fixture() []runtime.Object {
	never := class("waterline-prod-nonpreempting", 9800, nil)
	never.PreemptionPolicy = ptr.To(corev1.PreemptNever)
	def := class("default-zero", 0, nil)
	def.GlobalDefault = true
	agent := pod("kube-system", "agent-x", "", 0, "500m", "node-b", 0)
	agent.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds", Controller: ptr.To(true)}}
	done := pod("jobs", "finished", "", 0, "4", "node-a", 0)
	done.Status.Phase = corev1.PodSucceeded
	return []runtime.Object{
		node("node-a", "4"), node("node-b", "4"),
		class("waterline-prod", 9500, nil),
		class("waterline-mid", 7500, nil),
		class("waterline-mid-nonpreemptible", 7200, map[string]string{
			extension.AnnotationPreemptionPolicy:      extension.PreemptionPolicyNonPreemptible,
			extension.AnnotationPreemptibleByPriority: "9000",
		}),
		class("waterline-batch", 5500, nil),
		class("waterline-free", 3500, nil),
		class("waterline-daemonset", 100000, nil),
		class("typo-np", 7700, map[string]string{extension.AnnotationPreemptionPolicy: "NonPreemptable"}),
		never, def,
		pod("team-a", "batch-1", "waterline-batch", 5500, "2", "node-a", 1),
		pod("team-a", "np-1", "waterline-mid-nonpreemptible", 7200, "2", "node-a", 3),
		pod("team-b", "mid-1", "waterline-mid", 7500, "1", "node-b", 1),
		pod("team-b", "free-1", "waterline-free", 3500, "1", "node-b", 2),
		agent,
		pod("team-b", "legacy", "", -1, "1", "node-b", 2),
		done,
		pod("team-a", "prod-1", "waterline-prod", 9500, "2", "", 10),
		pod("team-a", "mid-2", "waterline-mid", 7500, "3", "", 11),
		pod("team-a", "mid-3", "waterline-mid", 7500, "1", "", 12),
		func() *corev1.Pod {
			p := pod("team-a", "never-1", "waterline-prod-nonpreempting", 9800, "1", "", 9)
			p.Spec.PreemptionPolicy = ptr.To(corev1.PreemptNever)
			return p
		}(),
		func() *corev1.Pod { // gated: not scheduled yet, so not in the dry run
			p := pod("team-a", "gated-1", "waterline-prod", 9500, "4", "", 8)
			p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
			return p
		}(),
		daemonSet("kube-system", "agent", ""),
		daemonSet("kube-system", "node-exporter", "waterline-daemonset"),
		&policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "batch-1"},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "batch-1"}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
		},
	}
}

func TestReportGolden(t *testing.T) {
	client := fake.NewClientset(fixture()...)
	objs, err := Collect(t.Context(), client)
	if err != nil {
		t.Fatal(err)
	}
	report := Build(objs, Options{})
	for _, tc := range []struct {
		file  string
		write func(*bytes.Buffer) error
	}{
		{"report.golden.json", func(b *bytes.Buffer) error { return report.WriteJSON(b) }},
		{"report.golden.txt", func(b *bytes.Buffer) error { return report.WriteTable(b) }},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var got bytes.Buffer
			if err := tc.write(&got); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("Reading golden file (run with -update to create it): %v", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("report differs from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// TestReportDecisions states the decisions the golden file holds, so a
// regenerated golden file cannot silently change them.
func TestReportDecisions(t *testing.T) {
	client := fake.NewClientset(fixture()...)
	objs, err := Collect(t.Context(), client)
	if err != nil {
		t.Fatal(err)
	}
	r := Build(objs, Options{})

	type decision struct {
		Pod     string
		Outcome string
		Node    string
		Victims []string
	}
	var got []decision
	for _, f := range r.DryRun {
		d := decision{Pod: f.Pod.Name, Outcome: string(f.Outcome), Node: f.Node}
		if f.Pod.Name == "mid-2" {
			wantMsg := `0/2 nodes are available: 1 Insufficient cpu, 1 No preemption victims found for incoming pod, ` +
				`1 node(s) had DaemonSet pods, which are never preempted, ` +
				`1 node(s) had pods of NonPreemptible PriorityClass "waterline-mid-nonpreemptible", not preemptible by priority 7500 below threshold 9000.`
			if f.Message != wantMsg {
				t.Errorf("mid-2 message = %q, want %q", f.Message, wantMsg)
			}
		}
		if f.Pod.Name == "mid-3" && f.PDBViolations != 1 {
			t.Errorf("mid-3 PDB violations = %d, want 1", f.PDBViolations)
		}
		for _, v := range f.Victims {
			d.Victims = append(d.Victims, v.Name)
		}
		got = append(got, d)
	}
	// Queue order: never-1 (9800), prod-1 (9500), then mid-2 and mid-3 (7500) by creation.
	// never-1: 1 CPU; node-a is full (2+2 = 4), node-b has 4-3.5 = 0.5 free; Never -> NotEligible.
	// prod-1: 2 CPU. node-a: both may go (np-1 yields at 9000 <= 9500); without them 0+2 fits; batch-1
	//   (PDB-violating) is given back first: 2+2 = 4 fits; np-1 then 6 > 4 goes: top victim 7200.
	//   node-b: agent-x stays (DaemonSet); without the rest 0.5+2 = 2.5 fits; mid-1 back 3.5 fits,
	//   free-1 back 4.5 > 4 goes, legacy back 4.5 > 4 goes: top victim 3500 < 7200, node-b wins.
	// mid-2: 3 CPU. node-a: np-1 is NonPreemptible below 9000; without batch-1 2+3 = 5 > 4.
	//   node-b: mid-1 (equal), prod-1 (higher), agent-x (DaemonSet): no victims. Pending.
	// mid-3: 1 CPU. node-a: without batch-1 2+1 = 3 fits; batch-1 back 5 > 4 goes, breaking its PDB.
	want := []decision{
		{Pod: "never-1", Outcome: "NotEligible"},
		{Pod: "prod-1", Outcome: "Preempts", Node: "node-b", Victims: []string{"free-1", "legacy"}},
		{Pod: "mid-2", Outcome: "Unschedulable"},
		{Pod: "mid-3", Outcome: "Preempts", Node: "node-a", Victims: []string{"batch-1"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dry run (-want +got):\n%s", diff)
	}

	var withoutPriority []string
	for _, p := range r.PodsWithoutPriority {
		withoutPriority = append(withoutPriority, p.Namespace+"/"+p.Name+": "+p.Reason)
	}
	wantWithout := []string{
		"kube-system/agent-x: no priorityClassName",
		"team-b/legacy: no priorityClassName",
	}
	if diff := cmp.Diff(wantWithout, withoutPriority); diff != "" {
		t.Errorf("pods without priority (-want +got):\n%s", diff)
	}
	if len(r.DaemonSetsBelowClass) != 1 || r.DaemonSetsBelowClass[0].Name != "agent" || r.DaemonSetsBelowClass[0].Priority != 0 {
		t.Errorf("DaemonSets below class = %+v, want only kube-system/agent at priority 0 (globalDefault default-zero)", r.DaemonSetsBelowClass)
	}
	if len(r.MalformedClasses) != 1 || r.MalformedClasses[0].Name != "typo-np" {
		t.Errorf("malformed classes = %+v, want typo-np", r.MalformedClasses)
	}
	if len(r.GlobalDefaultClasses) != 1 || r.GlobalDefaultClasses[0].Name != "default-zero" {
		t.Errorf("globalDefault classes = %+v, want default-zero", r.GlobalDefaultClasses)
	}
}

func TestDaemonSetClassMissing(t *testing.T) {
	r := Build(&Objects{DaemonSets: []appsv1.DaemonSet{*daemonSet("kube-system", "agent", "")}}, Options{DaemonSetPriorityClass: "nope"})
	want := []string{`PriorityClass "nope" not found: DaemonSets were not checked (apply config/priorityclasses or pass --daemonset-priority-class)`}
	if diff := cmp.Diff(want, r.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}
