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

package collector

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/waterline-dev/waterline/apis/extension"
)

// PodRef is what the collector needs to know of one of the node's pods; the
// agent builds it from its pod informer with PodRefOf.
type PodRef struct {
	// UID names the pod's cgroup.
	UID types.UID
	// Namespace and Name identify the pod in reports.
	Namespace, Name string
	// QoSClass selects the QoS cgroup the pod lives in. Empty (a pod whose
	// status has none yet) makes the collector look in all three.
	QoSClass corev1.PodQOSClass
	// Band is carried through to the sample for per-band sums.
	Band extension.Band
	// Containers names the pod's containers by runtime ID, so per-container
	// usage can carry a name. Containers not listed (the sandbox, one that
	// restarted since the informer saw it) are reported with an empty name.
	Containers []ContainerRef
}

// ContainerRef names one container of a pod.
type ContainerRef struct {
	// Name is the container's name in the pod spec.
	Name string
	// ID is the runtime's container ID without the "<runtime>://" prefix.
	ID string
}

// PodRefOf returns the PodRef of a pod.
func PodRefOf(pod *corev1.Pod) PodRef {
	ref := PodRef{
		UID:       pod.UID,
		Namespace: pod.Namespace,
		Name:      pod.Name,
		QoSClass:  pod.Status.QOSClass,
		Band:      extension.BandOf(pod),
	}
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for _, s := range statuses {
			if s.ContainerID == "" {
				continue
			}
			id := s.ContainerID
			if _, after, ok := strings.Cut(id, "://"); ok {
				id = after
			}
			ref.Containers = append(ref.Containers, ContainerRef{Name: s.Name, ID: id})
		}
	}
	return ref
}

// Usage is what a node, a pod or a container used. A rate exists only from
// the second read of a counter on, so CPU can be absent while memory is
// present; absent is never reported as zero.
type Usage struct {
	// CPU is the average number of cores used since the previous cycle.
	CPU float64
	// HasCPU is false when there was no previous counter to take a rate
	// against (first read, counter reset) or the counter could not be read.
	HasCPU bool
	// Memory is the memory used in bytes: MemTotal − MemAvailable for the
	// node, the working set (usage − inactive file) for cgroups. A pod's
	// usage is read this cycle, its inactive file pages at most
	// Config.MemoryStatInterval ago (see there); a container's both now.
	Memory uint64
	// HasMemory is false when the memory files could not be read.
	HasMemory bool
}

// PodSample is one pod's usage read from its cgroup in one collect cycle.
type PodSample struct {
	Pod PodRef
	Usage
	// Custom holds the pod's value of each custom metric read this cycle
	// (Config.CustomMetrics), in the metric's unit; nil without any.
	Custom map[string]int64
	// Containers are the pod's containers found in its cgroup, sorted by
	// ID; nil in cycles that do not read containers (see
	// Config.ContainerInterval).
	Containers []ContainerUsage
}

// ContainerUsage is one container's usage in a sample.
type ContainerUsage struct {
	// ID is the container's runtime ID, from its cgroup directory name.
	ID string
	// Name is the container's name from the PodRef, empty when unknown.
	Name string
	Usage
}

// Sample is one collect cycle's view of the node.
type Sample struct {
	// Time is when the cycle started; the metric cache files the sample
	// under it.
	Time time.Time
	// Node is the whole node's usage.
	Node Usage
	// System is what the node used beyond its pods: node − Σ collected
	// pods, floored at zero. Its CPU is present only when the node's and
	// every collected pod's CPU is, so a new pod's first cycle is not
	// booked as system usage.
	System Usage
	// Custom is the node's value of each custom metric: the sum over the
	// collected pods, present only when every one of them has the metric.
	Custom map[string]int64
	// Pods holds the pods whose cgroup was found, in the order given.
	Pods []PodSample
	// ContainersCollected says whether this cycle read containers.
	ContainersCollected bool
	// Stats counts what the cycle skipped and why.
	Stats CycleStats
}

// CycleStats counts what happened in one collect cycle. Skips are normal on
// a busy node; a steady rise is worth a look.
type CycleStats struct {
	// Pods is the number of pods the cycle was asked about.
	Pods int
	// PodsCollected is the number of pods in Sample.Pods.
	PodsCollected int
	// PodsMissing counts pods whose cgroup did not exist or vanished during
	// the cycle: not started yet, or deleted between listing and reading.
	PodsMissing int
	// Containers is the number of containers read.
	Containers int
	// MemoryStatReads is the number of pod memory.stat files read (see
	// Config.MemoryStatInterval).
	MemoryStatReads int
	// ReadErrors counts files that were empty, cut short or unparsable
	// (the value is skipped this cycle) and other read failures.
	ReadErrors int
	// CounterResets counts cumulative CPU counters that went backwards
	// (a recreated cgroup, CPU hot-unplug in /proc/stat): no rate this
	// cycle, the new value is the next baseline.
	CounterResets int
	// Duration is how long the cycle took.
	Duration time.Duration
}
