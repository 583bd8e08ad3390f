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

package extension

import corev1 "k8s.io/api/core/v1"

// Domain prefixes every Waterline label, annotation and resource name.
const Domain = "waterline.dev"

// Labels.
const (
	// LabelBand overrides the band a pod's priority implies:
	// prod, mid, batch or free.
	LabelBand = Domain + "/band"
	// LabelColocationProfile records the ColocationProfile the webhook applied.
	LabelColocationProfile = Domain + "/colocation-profile"
)

// Extended resources the manager publishes on Node status and colocated
// pods request instead of cpu and memory. CPU tiers count millicores
// (a request of 500 means 0.5 CPU); memory tiers count bytes.
const (
	ResourceMidCPU      corev1.ResourceName = Domain + "/mid-cpu"
	ResourceMidMemory   corev1.ResourceName = Domain + "/mid-memory"
	ResourceBatchCPU    corev1.ResourceName = Domain + "/batch-cpu"
	ResourceBatchMemory corev1.ResourceName = Domain + "/batch-memory"
)

// Node annotations.
const (
	// AnnotationUsageThresholds overrides LoadAware's thresholds for one
	// node; its value is a JSON CustomUsageThresholds.
	AnnotationUsageThresholds = Domain + "/usage-thresholds"
	// AnnotationRawAllocatable replaces the node's status.allocatable in
	// LoadAware's arithmetic; its value is a JSON ResourceList.
	AnnotationRawAllocatable = Domain + "/raw-allocatable"
)

// Pod annotations.
const (
	// AnnotationLoadEstimatedScalingFactors overrides LoadAware's estimation
	// factors (percent per resource, JSON map) for one pod, when the
	// scheduler allows it.
	AnnotationLoadEstimatedScalingFactors = Domain + "/load-estimated-scaling-factors"
	// AnnotationLoadEstimatedSecondsAfterPodScheduled forces estimation of a
	// pod's load for this many seconds after it was scheduled.
	AnnotationLoadEstimatedSecondsAfterPodScheduled = Domain + "/load-estimated-seconds-after-pod-scheduled"
	// AnnotationLoadEstimatedSecondsAfterInitialized forces estimation of a
	// pod's load for this many seconds after it was initialized.
	AnnotationLoadEstimatedSecondsAfterInitialized = Domain + "/load-estimated-seconds-after-initialized"
	// AnnotationOriginalResources keeps, as JSON, the cpu and memory
	// requests and limits the webhook translated into tier resources.
	AnnotationOriginalResources = Domain + "/original-resources"
)

// PriorityClass annotations (docs/design/preemption.md#nonpreemptible).
const (
	// AnnotationPreemptionPolicy set to PreemptionPolicyNonPreemptible makes
	// running pods of the class immune to preemption, except by pods at or
	// above AnnotationPreemptibleByPriority.
	AnnotationPreemptionPolicy = Domain + "/preemption-policy"
	// PreemptionPolicyNonPreemptible is the value of AnnotationPreemptionPolicy
	// that protects running pods of a class.
	PreemptionPolicyNonPreemptible = "NonPreemptible"
	// AnnotationPreemptibleByPriority is the priority value (an int32) at or
	// above which a pod may still preempt a NonPreemptible pod.
	AnnotationPreemptibleByPriority = Domain + "/preemptible-by-priority"
)

// Kubernetes names the helpers rely on.
const (
	annotationMirrorPod    = corev1.MirrorPodAnnotationKey
	annotationConfigSource = "kubernetes.io/config.source"
	// SystemCriticalPriority is the lowest priority of the built-in
	// system-cluster-critical and system-node-critical classes.
	SystemCriticalPriority int32 = 2000000000
)
