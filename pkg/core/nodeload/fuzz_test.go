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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
)

// FuzzNodeAnnotations: whatever a node's usage-thresholds and
// raw-allocatable annotations hold, reading them never panics, and
// thresholds taken from the annotation are percents in [0, 100]; a refused
// annotation leaves the args' thresholds whole.
func FuzzNodeAnnotations(f *testing.F) {
	f.Add(`{"usageThresholds":{"cpu":70,"memory":80}}`, `{"cpu":"8","memory":"32Gi"}`)
	f.Add(`{"usageThresholds":{"cpu":-1}}`, `{"cpu":"-32"}`)
	f.Add(`{"prodUsageThresholds":{"cpu":250}}`, `{"cpu":"0"}`)
	f.Add(`{"aggregatedUsage":{"usageThresholds":{"cpu":60},"usageAggregationType":"p95","usageAggregatedDuration":"-5m"}}`, `{"memory":"1E"}`)
	f.Add(`null`, `[]`)
	f.Fuzz(func(t *testing.T, thresholds, rawAlloc string) {
		c := mustConfig(t, defaultSpec())
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
			extension.AnnotationUsageThresholds: thresholds, extension.AnnotationRawAllocatable: rawAlloc}}}
		th, err := c.NodeThresholds(node)
		if err != nil && th != c.Thresholds {
			t.Fatalf("a refused annotation changed the thresholds: %+v", th)
		}
		for _, v := range []Vector{th.Usage, th.Prod, th.Aggregated} {
			for i := range c.Resources.Len() {
				if v[i] < 0 || v[i] > 100 {
					t.Fatalf("threshold %d of %s outside [0, 100] from %q", v[i], c.Resources.Name(i), thresholds)
				}
			}
		}
		if th.Aggregation.Duration < 0 {
			t.Fatalf("negative aggregation duration from %q", thresholds)
		}
		_, _ = c.Allocatable(node)
	})
}

// FuzzPodAnnotations: whatever a pod's estimation annotations hold,
// estimating it never panics, scaling factors taken from the annotation
// stay in their bounds and forced-estimation windows are never negative.
func FuzzPodAnnotations(f *testing.F) {
	f.Add(`{"cpu":120}`, "60", "30")
	f.Add(`{"cpu":-5,"memory":1000000}`, "-1", "3600")
	f.Add(`{"cpu":"x"}`, "1e3", "")
	f.Add(`{}`, "9223372036854775807", "9223372036854775807") // wrapped a time.Duration negative
	f.Fuzz(func(t *testing.T, factors, afterScheduled, afterInit string) {
		s := defaultSpec()
		s.AllowCustomizeEstimation = true
		c := mustConfig(t, s)
		pod := makePod("ns", "p").req("cpu", "1", "memory", "1Gi").obj()
		pod.Annotations = map[string]string{
			extension.AnnotationLoadEstimatedScalingFactors:           factors,
			extension.AnnotationLoadEstimatedSecondsAfterPodScheduled: afterScheduled,
			extension.AnnotationLoadEstimatedSecondsAfterInitialized:  afterInit,
		}
		if _, err := c.NewPodLoad(pod); err == nil {
			got, _ := c.scalingFactors(pod)
			for i := range c.Resources.Len() {
				if got[i] < MinScalingFactor || got[i] > MaxScalingFactor {
					t.Fatalf("factor %d outside [%d, %d] from %q", got[i], MinScalingFactor, MaxScalingFactor, factors)
				}
			}
		}
		a, _ := c.NewAssignedPod(pod, time.Unix(0, 0))
		if a.AfterScheduled < 0 || a.AfterInitialized < 0 {
			t.Fatalf("negative forced-estimation window %s/%s from %q/%q", a.AfterScheduled, a.AfterInitialized, afterScheduled, afterInit)
		}
		for i := range c.Resources.Len() {
			if a.Estimate[i] < 0 {
				t.Fatalf("negative estimate %d of %s", a.Estimate[i], c.Resources.Name(i))
			}
		}
	})
}
