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
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/pkg/audit"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestAuditPredictsPreemption follows the safe rollout
// (docs/design/preemption.md#safe-rollout): the cluster runs with preemption
// disabled (the shipped bandpreemption-disabled.yaml), the `waterline audit
// preemption` binary predicts the victims of the pending pod, then
// waterline-scheduler restarts with bandpreemption-enabled.yaml and preempts
// exactly those pods.
func TestAuditPredictsPreemption(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{KWOK: true})
	ctx := t.Context()
	c.Kubectl(t, "apply", "-f", filepath.Join(testutil.RepoRoot(), "config", "priorityclasses", "priorityclasses.yaml"))
	const ns = "audit"
	c.CreateNodes(t, ns, 2, testutil.NodeOptions{Capacity: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}})
	c.CreateNamespace(t, ns, nil)

	profile := func(file string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "config", "scheduler", file))
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(string(b), "profiles:")
		if i < 0 {
			t.Fatalf("%s has no profiles", file)
		}
		return string(b[i:])
	}
	create := func(name, class, cpu, node string) {
		t.Helper()
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PodSpec{
				SchedulerName:     testutil.SchedulerName,
				PriorityClassName: class,
				// Victims go in a second, not the default 30: only test time.
				TerminationGracePeriodSeconds: ptr.To[int64](1),
				NodeSelector:                  map[string]string{testutil.LabelFakeNode: "true"},
				Containers: []corev1.Container{{Name: "c", Image: "fake", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
			},
		}
		if node != "" {
			pod.Spec.NodeSelector[corev1.LabelHostname] = node
		}
		if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Creating pod %s: %v", name, err)
		}
	}

	// Step 1: priorities on, preemption off. Both nodes end up full:
	//   audit-0: batch-1 2 (5500), np-1 2 (NonPreemptible 7800, yields only at 100000)
	//   audit-1: mid-1 2 (7500), free-1 1 (3500), legacy 1 (no class: 0)
	sched := c.StartScheduler(t, profile("bandpreemption-disabled.yaml"))
	for _, p := range []struct{ name, class, cpu, node string }{
		{"batch-1", "waterline-batch", "2", "audit-0"},
		{"np-1", "waterline-mid-nonpreemptible", "2", "audit-0"},
		{"mid-1", "waterline-mid", "2", "audit-1"},
		{"free-1", "waterline-free", "1", "audit-1"},
		{"legacy", "", "1", "audit-1"},
	} {
		create(p.name, p.class, p.cpu, p.node)
		c.WaitPodRunning(t, ns, p.name, time.Minute)
	}
	// prod-1 (9500, 2 CPU) fits nowhere and, with preemption off, waits.
	create("prod-1", "waterline-prod", "2", "")
	testutil.Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, "prod-1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return testutil.PodCondition(p, corev1.PodScheduled) == corev1.ConditionFalse, fmt.Errorf("conditions %+v", p.Status.Conditions)
	}, "waiting for prod-1 to be found unschedulable")

	// Step 2: the audit, run as users run it.
	bin := testutil.BuildBinary(t, "waterline")
	out, err := exec.CommandContext(ctx, bin, "audit", "preemption", "--kubeconfig", c.Kubeconfig, "-o", "json").Output()
	if err != nil {
		t.Fatalf("waterline audit preemption: %v\n%s", err, out)
	}
	var report audit.Report
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("Decoding the audit's JSON: %v\n%s", err, out)
	}
	// audit-0: only batch-1 may go (np-1 is NonPreemptible): without it 2+2 = 4 fits, top victim 5500.
	// audit-1: without mid-1, free-1, legacy 0+2 fits; mid-1 back 4 fits; free-1 and legacy go: top 3500 < 5500.
	type prediction struct {
		Pod, Outcome, Node string
		Victims            []string
	}
	var got []prediction
	for _, f := range report.DryRun {
		p := prediction{Pod: f.Pod.Namespace + "/" + f.Pod.Name, Outcome: string(f.Outcome), Node: f.Node}
		for _, v := range f.Victims {
			p.Victims = append(p.Victims, v.Namespace+"/"+v.Name)
		}
		got = append(got, p)
	}
	want := []prediction{{Pod: "audit/prod-1", Outcome: "Preempts", Node: "audit-1", Victims: []string{"audit/free-1", "audit/legacy"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Audit dry run (-want +got):\n%s\nfull report:\n%s", diff, out)
	}
	var unprioritized []string
	for _, p := range report.PodsWithoutPriority {
		unprioritized = append(unprioritized, p.Namespace+"/"+p.Name)
	}
	if diff := cmp.Diff([]string{"audit/legacy"}, unprioritized); diff != "" {
		t.Errorf("Audit pods without priority (-want +got):\n%s", diff)
	}

	// Step 3: preemption on. What happens is what the audit said.
	sched.Stop()
	c.StartScheduler(t, profile("bandpreemption-enabled.yaml"))
	for _, victim := range want[0].Victims {
		name := strings.TrimPrefix(victim, ns+"/")
		testutil.Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
			p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil) {
				return true, nil
			}
			return false, err
		}, "waiting for %s to be preempted", victim)
	}
	if p := c.WaitPodRunning(t, ns, "prod-1", 2*time.Minute); p.Spec.NodeName != "audit-1" {
		t.Errorf("prod-1 runs on %q, want audit-1 as the audit predicted", p.Spec.NodeName)
	}
	for _, name := range []string{"batch-1", "np-1", "mid-1"} {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Errorf("%s was not predicted as a victim but is gone or going (err %v)", name, err)
		}
	}
}
