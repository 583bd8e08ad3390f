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

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestBandPreemption runs the real waterline-scheduler with the shipped
// bandpreemption-enabled.yaml profile and the shipped band PriorityClasses
// against a real API server and kwok nodes. Each case has its own nodes
// (selected by a label) and namespace, so cases do not compete for room.
func TestBandPreemption(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()

	// The shipped band classes, through the API server's own validation.
	c.Kubectl(t, "apply", "-f", filepath.Join(testutil.RepoRoot(), "config", "priorityclasses", "priorityclasses.yaml"))
	// A NonPreemptible class that yields to Prod (the shipped one yields only to DaemonSets).
	if _, err := c.Kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "it-np", Annotations: map[string]string{
			extension.AnnotationPreemptionPolicy:      extension.PreemptionPolicyNonPreemptible,
			extension.AnnotationPreemptibleByPriority: "9000",
		}},
		Value: 7000,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	sample, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "scheduler", "bandpreemption-enabled.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(sample), "profiles:")
	if i < 0 {
		t.Fatal("bandpreemption-enabled.yaml has no profiles")
	}
	c.StartScheduler(t, string(sample[i:]))

	// newCase makes n nodes of 4 CPU labelled for the case, and its namespace.
	newCase := func(t *testing.T, name string, n int) {
		t.Helper()
		c.CreateNodes(t, name, n, testutil.NodeOptions{
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("4"),
				corev1.ResourceMemory: resource.MustParse("16Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
			Labels: map[string]string{"it-case": name},
		})
		c.CreateNamespace(t, name, nil)
	}
	// create makes a pod of class asking cpu, kept on the case's nodes
	// (or on node when given).
	create := func(t *testing.T, ns, name, class, cpu, node string, labels map[string]string) {
		t.Helper()
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: corev1.PodSpec{
				SchedulerName:     testutil.SchedulerName,
				PriorityClassName: class,
				// Victims go in a second, not the default 30: only test time.
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				NodeSelector:                  map[string]string{"it-case": ns},
				Containers: []corev1.Container{{Name: "c", Image: "fake", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
			},
		}
		if node != "" {
			pod.Spec.NodeSelector[corev1.LabelHostname] = node
		}
		if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Creating pod %s/%s: %v", ns, name, err)
		}
	}
	// gone waits until the pod is preempted: deleted, or being deleted with
	// the scheduler's DisruptionTarget condition.
	gone := func(t *testing.T, ns, name string) {
		t.Helper()
		testutil.Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
			p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			if err != nil {
				return false, err
			}
			if p.DeletionTimestamp != nil && testutil.PodCondition(p, corev1.DisruptionTarget) == corev1.ConditionTrue {
				return true, nil
			}
			return false, fmt.Errorf("pod still there, phase %s", p.Status.Phase)
		}, "waiting for %s/%s to be preempted", ns, name)
	}
	// pendingWith waits until the pod's PodScheduled condition says why it
	// is pending, and checks it stays unbound.
	pendingWith := func(t *testing.T, ns, name, want string) {
		t.Helper()
		testutil.Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
			p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && strings.Contains(cond.Message, want) {
					t.Logf("%s/%s is pending: %s", ns, name, cond.Message)
					return true, nil
				}
			}
			return false, fmt.Errorf("conditions %+v, node %q", p.Status.Conditions, p.Spec.NodeName)
		}, "waiting for %s/%s to be pending with %q", ns, name, want)
	}
	running := func(t *testing.T, ns, name string) *corev1.Pod {
		t.Helper()
		return c.WaitPodRunning(t, ns, name, time.Minute)
	}
	alive := func(t *testing.T, ns, name string) {
		t.Helper()
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("Pod %s/%s: %v", ns, name, err)
		}
		if p.DeletionTimestamp != nil {
			t.Fatalf("Pod %s/%s is being deleted: it was preempted", ns, name)
		}
	}

	t.Run("high pod preempts low pod", func(t *testing.T) {
		const ns = "high-low"
		newCase(t, ns, 1)
		create(t, ns, "low", "waterline-batch", "3", "", nil)
		running(t, ns, "low")
		create(t, ns, "high", "waterline-prod", "3", "", nil)
		gone(t, ns, "low")
		if p := running(t, ns, "high"); p.Spec.NodeName != ns+"-0" {
			t.Errorf("high runs on %q, want %s-0", p.Spec.NodeName, ns)
		}
	})

	t.Run("NonPreemptible pod is not a victim below its threshold", func(t *testing.T) {
		const ns = "np-below"
		newCase(t, ns, 1)
		create(t, ns, "np", "it-np", "3", "", nil)
		running(t, ns, "np")
		create(t, ns, "mid", "waterline-mid", "3", "", nil)
		pendingWith(t, ns, "mid", `node(s) had pods of NonPreemptible PriorityClass "it-np", not preemptible by priority 7500 below threshold 9000`)
		// Give the scheduler more cycles to do the wrong thing.
		time.Sleep(3 * time.Second)
		alive(t, ns, "np")
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, "mid", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" || p.Status.NominatedNodeName != "" {
			t.Errorf("mid is bound to %q / nominated to %q, want pending", p.Spec.NodeName, p.Status.NominatedNodeName)
		}
		events, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=mid,reason=FailedScheduling"})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range events.Items {
			found = found || strings.Contains(e.Message, "not preemptible by priority 7500 below threshold 9000")
		}
		if !found {
			t.Errorf("No FailedScheduling event of mid explains the NonPreemptible class; events: %+v", events.Items)
		}
	})

	t.Run("NonPreemptible pod is a victim at or above its threshold", func(t *testing.T) {
		const ns = "np-above"
		newCase(t, ns, 1)
		create(t, ns, "np", "it-np", "3", "", nil)
		running(t, ns, "np")
		create(t, ns, "prod", "waterline-prod", "3", "", nil)
		gone(t, ns, "np")
		running(t, ns, "prod")
	})

	t.Run("PDB respected", func(t *testing.T) {
		const ns = "pdb"
		newCase(t, ns, 2)
		// guarded (Free, 3500) is the cheaper victim by priority, but its PDB
		// allows no disruption; unguarded (Batch, 5500) has none.
		// The PDB (and the status its controller would write) comes first,
		// so the scheduler's PDB informer has it long before the victims
		// run: created after them, a loaded machine could deliver it after
		// the preemptor's cycle and the test would judge a stale view.
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "guarded"},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}}},
		}
		created, err := c.Kube.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// No kube-controller-manager here: set the status its disruption
		// controller would (1 healthy, 1 desired, 0 allowed).
		created.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: created.Generation, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
		if _, err := c.Kube.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		create(t, ns, "guarded", "waterline-free", "3", ns+"-0", map[string]string{"app": "guarded"})
		create(t, ns, "unguarded", "waterline-batch", "3", ns+"-1", nil)
		running(t, ns, "guarded")
		running(t, ns, "unguarded")
		create(t, ns, "prod", "waterline-prod", "3", "", nil)
		gone(t, ns, "unguarded")
		if p := running(t, ns, "prod"); p.Spec.NodeName != ns+"-1" {
			t.Errorf("prod runs on %q, want %s-1 (the node whose victim has no PDB)", p.Spec.NodeName, ns)
		}
		alive(t, ns, "guarded")
	})

	t.Run("malformed annotation is reported on the PriorityClass", func(t *testing.T) {
		if _, err := c.Kube.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta: metav1.ObjectMeta{Name: "it-typo", Annotations: map[string]string{
				extension.AnnotationPreemptionPolicy: "NonPreemptable",
			}},
			Value: 7100,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want := `PriorityClass "it-typo": ignoring annotation waterline.dev/preemption-policy="NonPreemptable": want "NonPreemptible"`
		testutil.Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
			list, err := c.Kube.EventsV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for _, e := range list.Items {
				if e.Regarding.Kind == "PriorityClass" && e.Regarding.Name == "it-typo" && e.Type == corev1.EventTypeWarning &&
					e.Reason == "MalformedPreemptionAnnotation" && strings.Contains(e.Note, want) {
					return true, nil
				}
			}
			return false, fmt.Errorf("no MalformedPreemptionAnnotation event for it-typo among %d events", len(list.Items))
		}, "waiting for the Warning Event on PriorityClass it-typo")
	})

	t.Run("preemptionPolicy Never preempts nothing", func(t *testing.T) {
		const ns = "free-never"
		newCase(t, ns, 1)
		create(t, ns, "legacy", "", "3", "", nil)
		running(t, ns, "legacy")
		create(t, ns, "free", "waterline-free", "3", "", nil)
		pendingWith(t, ns, "free", "not eligible due to preemptionPolicy=Never")
		alive(t, ns, "legacy")
	})
}
