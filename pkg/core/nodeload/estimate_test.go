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

package nodeload

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/apis/extension"
)

func TestNewPodLoad(t *testing.T) {
	// Scaling: round(v × f / 100); memory 1Gi = 1073741824 bytes.
	tests := []struct {
		name      string
		customize bool
		pod       *corev1.Pod
		want      PodLoad
		wantErr   bool
	}{{
		name: "requests only",
		pod:  makePod("ns", "p").req("cpu", "1", "memory", "1Gi").obj(),
		// cpu 1000m × 85 % = 850m; memory 1073741824 × 70 % = 751619276.8 → 751619277.
		want: PodLoad{Estimate: vec(850, 751619277), Prod: true},
	}, {
		name: "limit above request is what is scaled",
		pod:  makePod("ns", "p").req("cpu", "1", "memory", "1Gi").lim("cpu", "2", "memory", "2Gi").obj(),
		// cpu max(1000, 2000) × 85 % = 1700m; memory 2147483648 × 70 % = 1503238553.6 → 1503238554.
		want: PodLoad{Estimate: vec(1700, 1503238554), Prod: true},
	}, {
		name: "limit only counts as the request too",
		pod:  makePod("ns", "p").lim("cpu", "2").obj(),
		// cpu 2000 × 85 % = 1700m; memory not asked: 200Mi = 209715200.
		want: PodLoad{Estimate: vec(1700, 200*Mi), Prod: true},
	}, {
		name: "empty pod gets 250m and 200Mi",
		pod:  makePod("ns", "p").obj(),
		want: PodLoad{Estimate: vec(250, 200*Mi), Prod: true},
	}, {
		name: "cpu only: memory falls back to 200Mi",
		pod:  makePod("ns", "p").req("cpu", "500m").obj(),
		// cpu 500 × 85 % = 425m.
		want: PodLoad{Estimate: vec(425, 200*Mi), Prod: true},
	}, {
		name: "batch pod: batch-cpu counts millicores, batch-memory bytes",
		pod:  makePod("ns", "p").req(string(extension.ResourceBatchCPU), "2000", string(extension.ResourceBatchMemory), "4Gi").obj(),
		// batch-cpu 2000 (= 2 cores) × 85 % = 1700m; 4294967296 × 70 % = 3006477107.2 → 3006477107.
		want: PodLoad{Estimate: vec(1700, 3006477107), LowPriority: true},
	}, {
		name: "mid pod: mid-cpu and mid-memory",
		pod:  makePod("ns", "p").req(string(extension.ResourceMidCPU), "1000", string(extension.ResourceMidMemory), "1Gi").obj(),
		// 1000 × 85 % = 850m; 1Gi × 70 % = 751619277.
		want: PodLoad{Estimate: vec(850, 751619277)},
	}, {
		name: "batch band without tier resources uses cpu and memory",
		pod:  makePod("ns", "p").band(extension.BandBatch).req("cpu", "1", "memory", "1Gi").obj(),
		want: PodLoad{Estimate: vec(850, 751619277), LowPriority: true},
	}, {
		name: "free band is low priority",
		pod:  makePod("ns", "p").band(extension.BandFree).req("cpu", "1", "memory", "1Gi").obj(),
		want: PodLoad{Estimate: vec(850, 751619277), LowPriority: true},
	}, {
		name:      "annotation overrides factors when allowed",
		customize: true,
		pod:       makePod("ns", "p").req("cpu", "1", "memory", "1Gi").annotate(extension.AnnotationLoadEstimatedScalingFactors, `{"cpu":50}`).obj(),
		// cpu 1000 × 50 % = 500m; memory keeps 70 %.
		want: PodLoad{Estimate: vec(500, 751619277), Prod: true},
	}, {
		name: "annotation ignored when not allowed",
		pod:  makePod("ns", "p").req("cpu", "1", "memory", "1Gi").annotate(extension.AnnotationLoadEstimatedScalingFactors, `{"cpu":50}`).obj(),
		want: PodLoad{Estimate: vec(850, 751619277), Prod: true},
	}, {
		name:      "malformed annotation is ignored and reported",
		customize: true,
		pod:       makePod("ns", "p").req("cpu", "1", "memory", "1Gi").annotate(extension.AnnotationLoadEstimatedScalingFactors, `{"cpu":`).obj(),
		want:      PodLoad{Estimate: vec(850, 751619277), Prod: true},
		wantErr:   true,
	}, {
		name:      "annotation factor out of range is ignored as a whole",
		customize: true,
		pod:       makePod("ns", "p").req("cpu", "1", "memory", "1Gi").annotate(extension.AnnotationLoadEstimatedScalingFactors, `{"cpu":50,"memory":0}`).obj(),
		want:      PodLoad{Estimate: vec(850, 751619277), Prod: true},
		wantErr:   true,
	}, {
		name: "large init container dominates",
		pod:  makePod("ns", "p").req("cpu", "1").initContainer(false, rl("cpu", "4"), nil).obj(),
		// max(1000, 4000) × 85 % = 3400m.
		want: PodLoad{Estimate: vec(3400, 200*Mi), Prod: true},
	}, {
		name: "sidecar adds to the containers",
		pod:  makePod("ns", "p").req("cpu", "1").initContainer(true, rl("cpu", "500m"), nil).obj(),
		// (1000 + 500) × 85 % = 1275m.
		want: PodLoad{Estimate: vec(1275, 200*Mi), Prod: true},
	}, {
		name: "init container runs beside the sidecars started before it",
		pod: makePod("ns", "p").req("cpu", "1").
			initContainer(true, rl("cpu", "500m"), nil).
			initContainer(false, rl("cpu", "2"), nil).obj(),
		// max(1000 + 500, 500 + 2000) = 2500 × 85 % = 2125m.
		want: PodLoad{Estimate: vec(2125, 200*Mi), Prod: true},
	}, {
		name: "overhead is added",
		pod: func() *corev1.Pod {
			p := makePod("ns", "p").req("cpu", "1").obj()
			p.Spec.Overhead = rl("cpu", "250m")
			return p
		}(),
		// (1000 + 250) × 85 % = 1062.5 → 1063m (halves round up).
		want: PodLoad{Estimate: vec(1063, 200*Mi), Prod: true},
	}, {
		name: "pod-level resources win over containers",
		pod: func() *corev1.Pod {
			p := makePod("ns", "p").req("cpu", "1").obj()
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "2")}
			return p
		}(),
		// 2000 × 85 % = 1700m.
		want: PodLoad{Estimate: vec(1700, 200*Mi), Prod: true},
	}, {
		name: "DaemonSet pod is marked",
		pod:  makePod("ns", "p").ownedBy("DaemonSet").req("cpu", "1", "memory", "1Gi").obj(),
		want: PodLoad{Estimate: vec(850, 751619277), Prod: true, DaemonSet: true},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := defaultSpec()
			s.AllowCustomizeEstimation = tc.customize
			c := mustConfig(t, s)
			got, err := c.NewPodLoad(tc.pod)
			if (err != nil) != tc.wantErr {
				t.Errorf("NewPodLoad error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NewPodLoad (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewAssignedPod(t *testing.T) {
	scheduled := t0.Add(-time.Minute)
	tests := []struct {
		name      string
		customize bool
		// windows sets the args' forced windows: 30 s after scheduling,
		// 20 s after initialization.
		windows bool
		pod     *corev1.Pod
		want    AssignedPod
		wantErr bool
	}{{
		name: "limits are kept for the cap",
		pod: makePod("ns", "p").req("cpu", "1", "memory", "1Gi").lim("cpu", "1", "memory", "1Gi").
			container(rl("cpu", "1"), rl("cpu", "2")).obj(),
		// cpu request 2000, limit 3000 → 3000 × 85 % = 2550m; memory: the
		// second container has no memory limit → unbounded (0), and its
		// request is 0, so 1Gi × 70 % = 751619277.
		want: AssignedPod{Key: "ns/p", Prod: true, Estimate: vec(2550, 751619277), Limit: vec(3000, 0), ScheduledAt: scheduled},
	}, {
		name: "a container without a limit makes the pod unbounded",
		pod:  makePod("ns", "p").req("cpu", "1").lim("cpu", "1").container(rl("cpu", "1"), nil).obj(),
		// request 2000 × 85 % = 1700m, no limit.
		want: AssignedPod{Key: "ns/p", Prod: true, Estimate: vec(1700, 200*Mi), ScheduledAt: scheduled},
	}, {
		name:    "initialized time and args windows",
		windows: true,
		pod:     makePod("ns", "p").req("cpu", "1").initialized(scheduled.Add(10 * time.Second)).obj(),
		want: AssignedPod{
			Key: "ns/p", Prod: true, Estimate: vec(850, 200*Mi), ScheduledAt: scheduled,
			InitializedAt: scheduled.Add(10 * time.Second), AfterScheduled: 30 * time.Second, AfterInitialized: 20 * time.Second,
		},
	}, {
		name:      "annotations override windows when allowed",
		windows:   true,
		customize: true,
		pod: makePod("ns", "p").req("cpu", "1").
			annotate(extension.AnnotationLoadEstimatedSecondsAfterPodScheduled, "300").
			annotate(extension.AnnotationLoadEstimatedSecondsAfterInitialized, "0").obj(),
		want: AssignedPod{Key: "ns/p", Prod: true, Estimate: vec(850, 200*Mi), ScheduledAt: scheduled, AfterScheduled: 300 * time.Second},
	}, {
		name:    "annotations ignored when not allowed",
		windows: true,
		pod: makePod("ns", "p").req("cpu", "1").
			annotate(extension.AnnotationLoadEstimatedSecondsAfterPodScheduled, "300").obj(),
		want: AssignedPod{Key: "ns/p", Prod: true, Estimate: vec(850, 200*Mi), ScheduledAt: scheduled, AfterScheduled: 30 * time.Second, AfterInitialized: 20 * time.Second},
	}, {
		name:      "malformed and negative seconds keep the args windows",
		windows:   true,
		customize: true,
		pod: makePod("ns", "p").req("cpu", "1").
			annotate(extension.AnnotationLoadEstimatedSecondsAfterPodScheduled, "5m").
			annotate(extension.AnnotationLoadEstimatedSecondsAfterInitialized, "-1").obj(),
		want:    AssignedPod{Key: "ns/p", Prod: true, Estimate: vec(850, 200*Mi), ScheduledAt: scheduled, AfterScheduled: 30 * time.Second, AfterInitialized: 20 * time.Second},
		wantErr: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := defaultSpec()
			s.AllowCustomizeEstimation = tc.customize
			if tc.windows {
				s.EstimatedAfterPodScheduled = 30 * time.Second
				s.EstimatedAfterInitialized = 20 * time.Second
			}
			c := mustConfig(t, s)
			got, err := c.NewAssignedPod(tc.pod, scheduled)
			if (err != nil) != tc.wantErr {
				t.Errorf("NewAssignedPod error = %v, want error %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NewAssignedPod (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEstimateHugeQuantities: a pod the API server admits with a memory
// limit of petabytes or exabytes (a "no limit" sentinel) is estimated at a
// huge amount, never at a negative one, which would make every node look
// emptier with the pod than without it and let the pod past every memory
// threshold.
func TestEstimateHugeQuantities(t *testing.T) {
	c := mustConfig(t, defaultSpec())
	tests := []struct {
		name string
		pod  *corev1.Pod
		// want is the memory estimate.
		want int64
	}{{
		name: "limit of 64Pi: 70 % of it",
		pod:  makePod("ns", "p").req("cpu", "1", "memory", "1Gi").lim("memory", "64Pi").obj(),
		want: 50440315826549555, // round(2^56 × 0.7)
	}, {
		name: "request of 1Ei",
		pod:  makePod("ns", "p").req("cpu", "1", "memory", "1Ei").obj(),
		want: 807045053224792883, // round(2^60 × 0.7)
	}, {
		name: "two containers of 5Ei each: the sum saturates instead of wrapping to 0",
		pod:  makePod("ns", "p").req("cpu", "1", "memory", "5Ei").container(rl("memory", "5Ei"), nil).obj(),
		want: 6456360425798343065, // round((2^63 − 1) × 0.7)
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			load, err := c.NewPodLoad(tc.pod)
			if err != nil {
				t.Fatalf("NewPodLoad: %v", err)
			}
			if got := load.Estimate[Memory]; got != tc.want {
				t.Errorf("memory estimate = %d, want %d", got, tc.want)
			}
			a, _ := c.NewAssignedPod(tc.pod, t0)
			if got := a.Estimate[Memory]; got != tc.want {
				t.Errorf("assigned memory estimate = %d, want %d", got, tc.want)
			}
			// A node at 90 % of its memory cannot take such a pod.
			node := NodeLoad{Allocatable: vec(16000, 64*Gi), Thresholds: c.Thresholds, Metric: c.NewMetric(makeMetric("n", t0).usage("cpu", "1", "memory", "57600Mi").obj())}
			if got := c.Filter(&load, &node, t0); got.Reason != ReasonUsage || got.Over != 1<<Memory {
				t.Errorf("Filter = %+v, want memory over its threshold", got)
			}
		})
	}
}
