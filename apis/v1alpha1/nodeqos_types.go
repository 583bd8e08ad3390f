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

package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds of NodeQOS values. The schema declares the same numbers in its
// markers and CEL rules; the agent checks them again, so an object written
// before the schema had them is refused too. Above them a threshold would
// overflow int64 in millicores or bytes and wrap to a line at or near 0,
// which evicts every Batch pod of the node.
const (
	// MaxCPUUsageThreshold is the highest cpu_usage rule threshold, in cores.
	MaxCPUUsageThreshold = "100k"
	// MaxMemoryUsageThreshold is the highest memory_usage rule threshold.
	MaxMemoryUsageThreshold = "1Pi"
	// MaxCustomMetricThreshold is the highest rule threshold of a custom
	// metric, in the metric's own unit: far below what int64 holds, so no
	// conversion wraps.
	MaxCustomMetricThreshold = "1E"
	// MaxEvictionsPerMinute is the highest eviction.maxPerMinute: ten a
	// second is already far past what a node needs.
	MaxEvictionsPerMinute int32 = 600
)

// QOSAction is what the agent does to low-priority pods when a waterline is
// crossed.
// +kubebuilder:validation:Enum=ForbidScheduling;Throttle;Evict
type QOSAction string

// Actions, from the mildest to the hardest (docs/design/node-qos.md).
const (
	// ActionForbidScheduling stops new Batch/Free pods from being scheduled
	// on the node (reported as the ForbidScheduling NodeMetric condition).
	ActionForbidScheduling QOSAction = "ForbidScheduling"
	// ActionThrottle lowers the CPU quota of Batch/Free pods, and restores it
	// step by step once usage is back under the line.
	ActionThrottle QOSAction = "Throttle"
	// ActionEvict evicts Batch/Free pods through the Eviction API.
	ActionEvict QOSAction = "Evict"
)

// QOSMetric names a node-level metric a rule compares with its threshold:
// one of the built-in metrics below, or a custom metric the node's agent
// reads (its --custom-metrics file; docs/design/node-qos.md#custom-metrics).
// An agent that does not know the metric refuses the NodeQOS with a
// Warning event naming it.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9_]*$`
type QOSMetric string

// Node metrics a rule can use.
const (
	// MetricCPUUsage is node CPU usage; thresholds in cores ("12", "11500m").
	MetricCPUUsage QOSMetric = "cpu_usage"
	// MetricCPUUtilization is node CPU usage as a percentage of capacity.
	MetricCPUUtilization QOSMetric = "cpu_utilization"
	// MetricMemoryUsage is node memory usage; thresholds in bytes ("60Gi").
	MetricMemoryUsage QOSMetric = "memory_usage"
	// MetricMemoryUtilization is node memory usage as a percentage of capacity.
	MetricMemoryUtilization QOSMetric = "memory_utilization"
)

// CPUWaterlines are the node CPU waterlines, in percent of node CPU
// capacity. Usage above a line triggers its action on Batch/Free pods only.
// +kubebuilder:validation:XValidation:rule="!has(self.evictPercent) || !has(self.throttlePercent) || self.evictPercent > self.throttlePercent",message="evictPercent must be greater than throttlePercent",fieldPath=".evictPercent"
// +kubebuilder:validation:XValidation:rule="!has(self.throttlePercent) || !has(self.forbidSchedulingPercent) || self.throttlePercent >= self.forbidSchedulingPercent",message="throttlePercent must be at least forbidSchedulingPercent",fieldPath=".throttlePercent"
// +kubebuilder:validation:XValidation:rule="!has(self.evictPercent) || !has(self.forbidSchedulingPercent) || self.evictPercent > self.forbidSchedulingPercent",message="evictPercent must be greater than forbidSchedulingPercent",fieldPath=".evictPercent"
// +kubebuilder:validation:XValidation:rule="!has(self.restorePercent) || (has(self.throttlePercent) && self.restorePercent <= self.throttlePercent)",message="restorePercent needs throttlePercent and must not be above it",fieldPath=".restorePercent"
type CPUWaterlines struct {
	// ForbidSchedulingPercent: above it, no new Batch/Free pods are
	// scheduled on the node.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	ForbidSchedulingPercent *int32 `json:"forbidSchedulingPercent,omitempty"`
	// ThrottlePercent: above it, Batch/Free pods are throttled, one at a
	// time, until node usage is back under the line.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	ThrottlePercent *int32 `json:"throttlePercent,omitempty"`
	// RestorePercent: below it, throttled pods get their CPU back step by
	// step. Defaults to throttlePercent; a lower value adds hysteresis.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	RestorePercent *int32 `json:"restorePercent,omitempty"`
	// EvictPercent: when the window average is above it and Batch/Free pods
	// are starved (see cpuEviction), they are evicted, lowest priority
	// first, until the gap is closed.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	EvictPercent *int32 `json:"evictPercent,omitempty"`
}

// MemoryWaterlines are the node memory waterlines, in percent of node
// memory capacity. Memory cannot be throttled; above the evict line pods are
// evicted at once.
// +kubebuilder:validation:XValidation:rule="!has(self.evictPercent) || !has(self.forbidSchedulingPercent) || self.evictPercent > self.forbidSchedulingPercent",message="evictPercent must be greater than forbidSchedulingPercent",fieldPath=".evictPercent"
type MemoryWaterlines struct {
	// ForbidSchedulingPercent: above it, no new Batch/Free pods are
	// scheduled on the node.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	ForbidSchedulingPercent *int32 `json:"forbidSchedulingPercent,omitempty"`
	// EvictPercent: above it, Batch/Free pods are evicted at once, lowest
	// priority first then largest, until usage is back under the line.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	EvictPercent *int32 `json:"evictPercent,omitempty"`
}

// CPUEvictionPolicy is the satisfaction-based CPU eviction of the Alibaba
// waterline article (docs/design/node-qos.md): CPU is
// compressible, so Batch/Free pods are evicted only when the node stays over
// the evict line and they are starved.
// +kubebuilder:validation:XValidation:rule="!has(self.satisfactionLowerPercent) || !has(self.satisfactionUpperPercent) || self.satisfactionLowerPercent <= self.satisfactionUpperPercent",message="satisfactionLowerPercent must not be above satisfactionUpperPercent",fieldPath=".satisfactionLowerPercent"
type CPUEvictionPolicy struct {
	// WindowSeconds is the window over which node CPU usage and Batch
	// satisfaction are averaged.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:default=300
	// +optional
	WindowSeconds *int64 `json:"windowSeconds,omitempty"`
	// SatisfactionLowerPercent: Batch/Free pods whose usage ÷ request is
	// below it are starved.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=60
	// +optional
	SatisfactionLowerPercent *int32 `json:"satisfactionLowerPercent,omitempty"`
	// SatisfactionUpperPercent: eviction stops once the remaining Batch/Free
	// pods would be satisfied at least this much.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:default=80
	// +optional
	SatisfactionUpperPercent *int32 `json:"satisfactionUpperPercent,omitempty"`
	// BEUsageThresholdPercent: the Batch/Free pods count as starved only
	// while their CPU usage is at least this share of what they may use.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=90
	// +optional
	BEUsageThresholdPercent *int32 `json:"beUsageThresholdPercent,omitempty"`
}

// WaterlineRule is a generic waterline (Crane precise execution,
// docs/design/node-qos.md): when the metric is above
// the threshold for avoidanceCount samples in a row, act; when it is below
// for restoreCount samples, undo (throttle only).
// +kubebuilder:validation:XValidation:rule="!(self.metric.startsWith('memory') && self.action == 'Throttle')",message="memory cannot be throttled: use Evict or ForbidScheduling",fieldPath=".action"
// +kubebuilder:validation:XValidation:rule="quantity(string(self.threshold)).isGreaterThan(quantity('0'))",message="threshold must be greater than 0",fieldPath=".threshold"
// +kubebuilder:validation:XValidation:rule="self.metric != 'cpu_usage' || quantity(string(self.threshold)).compareTo(quantity('100k')) <= 0",message="a cpu_usage threshold must not be above 100k cores",fieldPath=".threshold"
// +kubebuilder:validation:XValidation:rule="self.metric != 'memory_usage' || quantity(string(self.threshold)).compareTo(quantity('1Pi')) <= 0",message="a memory_usage threshold must not be above 1Pi",fieldPath=".threshold"
// +kubebuilder:validation:XValidation:rule="!self.metric.endsWith('_utilization') || quantity(string(self.threshold)).compareTo(quantity('100')) <= 0",message="a utilization threshold is a percent and must not be above 100",fieldPath=".threshold"
// +kubebuilder:validation:XValidation:rule="self.metric in ['cpu_usage', 'cpu_utilization', 'memory_usage', 'memory_utilization'] || quantity(string(self.threshold)).compareTo(quantity('1E')) <= 0",message="a custom metric threshold must not be above 1E",fieldPath=".threshold"
type WaterlineRule struct {
	// Name identifies the rule in events and logs.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// Metric is the node metric compared with the threshold.
	Metric QOSMetric `json:"metric"`
	// Threshold is the waterline: cores for cpu_usage (at most 100k),
	// bytes for memory_usage (at most 1Pi), percent (above 0, at most 100)
	// for *_utilization, the metric's own unit for a custom metric (at most
	// 1E). It must be greater than 0.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:MaxLength=32
	Threshold resource.Quantity `json:"threshold"`
	// Action is what crossing the line does.
	Action QOSAction `json:"action"`
	// AvoidanceCount is how many consecutive samples over the line trigger
	// the action. Defaults to the NodeQOS avoidanceCount.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	AvoidanceCount *int32 `json:"avoidanceCount,omitempty"`
	// RestoreCount is how many consecutive samples under the line release
	// it. Defaults to the NodeQOS restoreCount.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	RestoreCount *int32 `json:"restoreCount,omitempty"`
}

// ThrottlePolicy says how the agent throttles CPU.
type ThrottlePolicy struct {
	// StepPercent is how much of the pod's CPU limit (or of the node's CPU,
	// for a pod without one) one restore step gives back.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=10
	// +optional
	StepPercent *int32 `json:"stepPercent,omitempty"`
	// MinCPUPercent is the floor of a throttled pod's quota, in percent of
	// its CPU request (or of one core for a pod without one): throttling
	// never starves a pod completely.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=10
	// +optional
	MinCPUPercent *int32 `json:"minCPUPercent,omitempty"`
}

// EvictionPolicy says how the agent evicts.
type EvictionPolicy struct {
	// GracePeriodSeconds is the termination grace period of an eviction,
	// at most a day. Unset uses the pod's own.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +optional
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
	// MaxPerMinute caps evictions by this node's agent (1 to 600).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=600
	// +kubebuilder:default=10
	// +optional
	MaxPerMinute *int32 `json:"maxPerMinute,omitempty"`
}

// NodeQOSSpec sets the node waterlines for the nodes it selects. When
// several NodeQOS select a node, for each action and metric the lowest
// waterline wins; a merge whose lines end out of order (forbid scheduling
// <= throttle < evict) is refused by the agent, which keeps its last good
// lines. The rules below catch what one object shows; a cpu_usage rule
// against a cpu_utilization one needs the node's capacity and is checked by
// the agent.
// +kubebuilder:validation:XValidation:rule="!has(self.rules) || self.rules.all(e, e.action != 'Evict' || self.rules.all(o, o.metric != e.metric || o.action == 'Evict' || quantity(string(e.threshold)).isGreaterThan(quantity(string(o.threshold)))))",message="an Evict rule's threshold must be above the Throttle and ForbidScheduling thresholds of the same metric",fieldPath=".rules"
// +kubebuilder:validation:XValidation:rule="!has(self.rules) || self.rules.all(f, f.action != 'ForbidScheduling' || self.rules.all(o, o.metric != f.metric || o.action != 'Throttle' || !quantity(string(f.threshold)).isGreaterThan(quantity(string(o.threshold)))))",message="a ForbidScheduling rule's threshold must not be above the Throttle threshold of the same metric",fieldPath=".rules"
// +kubebuilder:validation:XValidation:rule="!has(self.cpu) || !has(self.rules) || self.rules.all(r, r.metric != 'cpu_utilization' || r.action != 'Evict' || ((!has(self.cpu.throttlePercent) || quantity(string(r.threshold)).asApproximateFloat() > double(self.cpu.throttlePercent)) && (!has(self.cpu.forbidSchedulingPercent) || quantity(string(r.threshold)).asApproximateFloat() > double(self.cpu.forbidSchedulingPercent))))",message="a cpu_utilization Evict rule must be above cpu.throttlePercent and cpu.forbidSchedulingPercent",fieldPath=".rules"
// +kubebuilder:validation:XValidation:rule="!has(self.cpu) || !has(self.rules) || self.rules.all(r, r.metric != 'cpu_utilization' || r.action == 'Evict' || !has(self.cpu.evictPercent) || quantity(string(r.threshold)).asApproximateFloat() < double(self.cpu.evictPercent))",message="a cpu_utilization Throttle or ForbidScheduling rule must be below cpu.evictPercent",fieldPath=".rules"
// +kubebuilder:validation:XValidation:rule="!has(self.cpu) || !has(self.rules) || self.rules.all(r, r.metric != 'cpu_utilization' || ((r.action != 'Throttle' || !has(self.cpu.forbidSchedulingPercent) || quantity(string(r.threshold)).asApproximateFloat() >= double(self.cpu.forbidSchedulingPercent)) && (r.action != 'ForbidScheduling' || !has(self.cpu.throttlePercent) || quantity(string(r.threshold)).asApproximateFloat() <= double(self.cpu.throttlePercent))))",message="cpu_utilization rules and cpu percents must keep forbidScheduling <= throttle",fieldPath=".rules"
// +kubebuilder:validation:XValidation:rule="!has(self.memory) || !has(self.rules) || self.rules.all(r, r.metric != 'memory_utilization' || ((r.action != 'Evict' || !has(self.memory.forbidSchedulingPercent) || quantity(string(r.threshold)).asApproximateFloat() > double(self.memory.forbidSchedulingPercent)) && (r.action != 'ForbidScheduling' || !has(self.memory.evictPercent) || quantity(string(r.threshold)).asApproximateFloat() < double(self.memory.evictPercent))))",message="memory_utilization rules and memory percents must keep forbidScheduling < evict",fieldPath=".rules"
type NodeQOSSpec struct {
	// NodeSelector picks the nodes. Empty selects every node.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`
	// CPU waterlines (docs/design/node-qos.md).
	// +optional
	CPU *CPUWaterlines `json:"cpu,omitempty"`
	// Memory waterlines (docs/design/node-qos.md).
	// +optional
	Memory *MemoryWaterlines `json:"memory,omitempty"`
	// CPUEviction is the satisfaction-based CPU eviction rule.
	// +optional
	CPUEviction *CPUEvictionPolicy `json:"cpuEviction,omitempty"`
	// Rules are generic waterlines on node metrics (docs/design/node-qos.md).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Rules []WaterlineRule `json:"rules,omitempty"`
	// AvoidanceCount is how many consecutive samples over a line trigger its
	// action, so that one noisy sample does not.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=2
	// +optional
	AvoidanceCount *int32 `json:"avoidanceCount,omitempty"`
	// RestoreCount is how many consecutive samples under a line release it.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=3
	// +optional
	RestoreCount *int32 `json:"restoreCount,omitempty"`
	// Throttle tunes CPU throttling.
	// +optional
	Throttle *ThrottlePolicy `json:"throttle,omitempty"`
	// Eviction tunes eviction.
	// +optional
	Eviction *EvictionPolicy `json:"eviction,omitempty"`
	// ProtectedNamespaces lists namespaces whose pods the agent never
	// throttles or evicts, whatever their priority or band label says,
	// besides kube-system, which is always protected. The lists of the
	// NodeQOS selecting a node add up.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	ProtectedNamespaces []string `json:"protectedNamespaces,omitempty"`
	// DryRun makes the agent log, count and record events for what it would
	// do without throttling or evicting anything.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
}

// NodeQOSStatus is written by waterline-manager.
type NodeQOSStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// MatchedNodes is how many nodes the selector picks.
	// +optional
	MatchedNodes int32 `json:"matchedNodes,omitempty"`
	// Conditions of the NodeQOS.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodeQOS sets the waterlines of the nodes it selects and how their agents
// act on Batch/Free pods when node usage crosses them: forbid scheduling,
// throttle CPU, evict. Prod and Mid pods never see the waterlines.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +resourceName=nodeqoses
// +kubebuilder:resource:scope=Cluster,path=nodeqoses,singular=nodeqos,shortName=nqos
// +kubebuilder:printcolumn:name="CPU-Throttle",type=integer,JSONPath=`.spec.cpu.throttlePercent`
// +kubebuilder:printcolumn:name="CPU-Evict",type=integer,JSONPath=`.spec.cpu.evictPercent`
// +kubebuilder:printcolumn:name="Mem-Evict",type=integer,JSONPath=`.spec.memory.evictPercent`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.matchedNodes`
// +kubebuilder:printcolumn:name="DryRun",type=boolean,JSONPath=`.spec.dryRun`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeQOS struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec NodeQOSSpec `json:"spec,omitempty"`
	// +optional
	Status NodeQOSStatus `json:"status,omitempty"`
}

// NodeQOSList is a list of NodeQOS.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type NodeQOSList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeQOS `json:"items"`
}
