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

package reporter

import (
	"cmp"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
)

// UsageSource answers window statistics; *metriccache.Cache is one.
type UsageSource interface {
	// InWindow reads series over one window ending now, all over the
	// same samples.
	InWindow(window time.Duration, read func(w *metriccache.Window))
	Aggregate(k metriccache.SeriesKey, window time.Duration) (metriccache.Aggregate, bool)
}

// aggregationTypes are the statistics reported for every window of
// spec.collectPolicy.aggregateDurations, in the order the API lists them.
var aggregationTypes = []v1alpha1.AggregationType{
	v1alpha1.AggregationAvg, v1alpha1.AggregationP50, v1alpha1.AggregationP90,
	v1alpha1.AggregationP95, v1alpha1.AggregationP99, v1alpha1.AggregationMax,
}

var resources = []struct {
	name corev1.ResourceName
	r    metriccache.Resource
}{
	{corev1.ResourceCPU, metriccache.ResourceCPU},
	{corev1.ResourceMemory, metriccache.ResourceMemory},
}

// Usage is the usage part of a NodeMetric status.
type Usage struct {
	NodeMetric *v1alpha1.NodeMetricInfo
	PodsMetric []v1alpha1.PodMetricInfo
}

// BuildUsage computes the usage fields of the status from the cache, for
// the policy (defaulted) and the node's current pods. It returns false
// when the node has no CPU or no memory value in the aggregate window:
// the cache is empty (first second after a start without checkpoint) and
// nothing must be reported, since zeros would read as an idle node.
//
// A pod is listed only with both its CPU and memory over the window. A
// pod's first cycle has memory but no CPU rate; reporting it then would
// tell the scheduler it uses no CPU, while leaving it out makes the
// scheduler estimate it from its requests, which is the safe side.
//
// The node's, the system's and the pods' averages are over the same
// samples (UsageSource.InWindow): each sample's system usage is the node's
// less its pods', and so are the averages, even when the collect loop
// appends a sample while they are read.
func BuildUsage(src UsageSource, policy *v1alpha1.NodeMetricCollectPolicy, pods []*corev1.Pod) (Usage, bool) {
	window := time.Duration(*policy.AggregateDurationSeconds) * time.Second
	var nodeUsage, sysUsage corev1.ResourceList
	var cpu, mem map[string]float64
	src.InWindow(window, func(w *metriccache.Window) {
		nodeUsage = averages(w, metriccache.NodeKey)
		if len(nodeUsage) != len(resources) {
			return
		}
		sysUsage = averages(w, metriccache.SystemKey)
		// Pods report their window average only: no percentiles to
		// select.
		cpu = w.AverageKind(metriccache.KindPod, metriccache.ResourceCPU)
		mem = w.AverageKind(metriccache.KindPod, metriccache.ResourceMemory)
	})
	if len(nodeUsage) != len(resources) {
		return Usage{}, false
	}
	info := &v1alpha1.NodeMetricInfo{NodeUsage: nodeUsage, SystemUsage: sysUsage}
	for _, d := range policy.AggregateDurations {
		if agg, ok := aggregated(src, d.Duration); ok {
			info.AggregatedNodeUsages = append(info.AggregatedNodeUsages, v1alpha1.AggregatedUsage{
				Duration: metav1.Duration{Duration: d.Duration},
				Usage:    agg,
			})
		}
	}

	podsMetric := make([]v1alpha1.PodMetricInfo, 0, len(pods))
	for _, p := range pods {
		c, okC := cpu[string(p.UID)]
		m, okM := mem[string(p.UID)]
		if !okC || !okM {
			continue
		}
		podsMetric = append(podsMetric, v1alpha1.PodMetricInfo{
			Namespace: p.Namespace,
			Name:      p.Name,
			Band:      string(extension.BandOf(p)),
			Usage: corev1.ResourceList{
				corev1.ResourceCPU:    cpuQuantity(c),
				corev1.ResourceMemory: memoryQuantity(m),
			},
		})
	}
	// A stable order keeps successive statuses comparable by eye and diff.
	slices.SortFunc(podsMetric, func(a, b v1alpha1.PodMetricInfo) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return Usage{NodeMetric: info, PodsMetric: podsMetric}, true
}

// averages returns the window average of each resource of a series that
// has a value in the window; nil when none has.
func averages(w *metriccache.Window, key func(metriccache.Resource) metriccache.SeriesKey) corev1.ResourceList {
	var out corev1.ResourceList
	for _, res := range resources {
		a, ok := w.Aggregate(key(res.r))
		if !ok {
			continue
		}
		if out == nil {
			out = corev1.ResourceList{}
		}
		out[res.name] = quantity(res.r, a.Avg)
	}
	return out
}

func aggregated(src UsageSource, window time.Duration) (map[v1alpha1.AggregationType]corev1.ResourceList, bool) {
	out := map[v1alpha1.AggregationType]corev1.ResourceList{}
	for _, res := range resources {
		a, ok := src.Aggregate(metriccache.NodeKey(res.r), window)
		if !ok {
			continue
		}
		for _, t := range aggregationTypes {
			v, _ := a.Get(t)
			if out[t] == nil {
				out[t] = corev1.ResourceList{}
			}
			out[t][res.name] = quantity(res.r, v)
		}
	}
	return out, len(out) > 0
}

func quantity(r metriccache.Resource, v float64) resource.Quantity {
	if r == metriccache.ResourceCPU {
		return cpuQuantity(v)
	}
	return memoryQuantity(v)
}

// cpuQuantity turns cores into a millicore quantity, rounded to the
// nearest millicore: the precision every consumer (LoadAware, the tier
// formulas) computes in.
func cpuQuantity(cores float64) resource.Quantity {
	return *resource.NewMilliQuantity(int64(math.Round(max(cores, 0)*1000)), resource.DecimalSI)
}

// memoryQuantity turns bytes into a quantity of whole bytes.
func memoryQuantity(bytes float64) resource.Quantity {
	return *resource.NewQuantity(int64(math.Round(max(bytes, 0))), resource.BinarySI)
}
