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

package sim

import "time"

// Result is what a simulation found: the workload it replayed and, per
// policy, the summary figures and the time series behind the charts.
type Result struct {
	Workload WorkloadSummary `json:"workload"`
	// Seed is Config.Seed.
	Seed int64 `json:"seed"`
	// StepSeconds is Config.Step in seconds.
	StepSeconds int64 `json:"stepSeconds"`
	// Policies are in the order Config.Policies lists them.
	Policies []PolicyResult `json:"policies"`
}

// WorkloadSummary describes the workload of a Result.
type WorkloadSummary struct {
	Name string `json:"name"`
	// Start is the virtual time of the first step.
	Start time.Time `json:"start"`
	// DurationSeconds is the simulated time.
	DurationSeconds int64 `json:"durationSeconds"`
	Nodes           int   `json:"nodes"`
	// CPUCores and MemoryGiB are the cluster's capacity.
	CPUCores  float64 `json:"cpuCores"`
	MemoryGiB float64 `json:"memoryGiB"`
	// Services are the online (Prod) pods; ProdRequestPercent what they
	// request of the cluster's CPU.
	Services           int     `json:"services"`
	ProdRequestPercent float64 `json:"prodRequestPercent"`
	// BatchJobs and MidJobs are the jobs submitted over the run.
	BatchJobs int `json:"batchJobs"`
	MidJobs   int `json:"midJobs"`
}

// PolicyResult is one policy's outcome.
type PolicyResult struct {
	Policy  Policy  `json:"policy"`
	Summary Summary `json:"summary"`
	Series  Series  `json:"series"`
	// Oracle is what the oracle policy's caps did (PolicyOracle only).
	Oracle *OracleResult `json:"oracle,omitempty"`
}

// Summary holds a policy's figures over the whole run.
type Summary struct {
	// MeanCPUPercent and P95CPUPercent are the mean and the 95th
	// percentile of node CPU utilisation (usage ÷ capacity, system usage
	// included) over every node and step.
	MeanCPUPercent float64 `json:"meanCPUPercent"`
	P95CPUPercent  float64 `json:"p95CPUPercent"`
	// ProdSLOViolationPercent is the headline harm: the share of Prod
	// pod-time over the pod's latency SLO, by the harm model (Harm): the
	// node's CPU use by other pods slowed its requests beyond the SLO, or
	// the pod got less CPU than it wanted.
	ProdSLOViolationPercent float64 `json:"prodSLOViolationPercent"`
	// ProdSLOCurve is ProdSLOViolationPercent for each of SLOFactors.
	ProdSLOCurve []SLOPoint `json:"prodSLOCurve"`
	// ProdLatencyFactorMean is the mean over Prod pod-time of the model's
	// p99 latency ÷ the pod's p99 latency on the node alone.
	ProdLatencyFactorMean float64 `json:"prodLatencyFactorMean"`
	// ProdShortfallCoreSeconds is the Prod work not served: the CPU Prod
	// pods wanted and did not get because the node ran out, in
	// core-seconds.
	ProdShortfallCoreSeconds float64 `json:"prodShortfallCoreSeconds"`
	// ProdContentionPercent is the share of node-time, among nodes running
	// Prod pods, with node CPU over the node's CPU evict line (measured
	// for every policy, enforced only by the colocated ones). It is a
	// node's state, not harm: Waterline steers by that line, and Prod may
	// be served in full above it.
	ProdContentionPercent float64 `json:"prodContentionPercent"`
	// Harm is the harm model the figures above were measured with.
	Harm Harm `json:"harm"`
	// Evictions are the Batch pods node QoS evicted; per node-hour below.
	Evictions            int64   `json:"evictions"`
	EvictionsPerNodeHour float64 `json:"evictionsPerNodeHour"`
	// OOMKills are job pods killed because their node ran out of memory.
	OOMKills int64 `json:"oomKills"`
	// Preemptions are the job pods the scheduler preempted to place pods
	// of a higher priority (Config.Preemption).
	Preemptions int64 `json:"preemptions"`
	// EvictionsRefused counts node QoS CPU evictions the Eviction API
	// refused because they would break a PodDisruptionBudget
	// (Config.DisruptionBudgets); the agent then planned without the pod.
	EvictionsRefused int64 `json:"evictionsRefused"`
	// ThrottledCoreSeconds is the CPU Batch pods wanted and their quota
	// held back, in core-seconds.
	ThrottledCoreSeconds float64 `json:"throttledCoreSeconds"`
	// QoSBreaches counts node QoS cycles that throttled or evicted;
	// PodsActed the pods those cycles throttled further or evicted.
	QoSBreaches int64 `json:"qosBreaches"`
	PodsActed   int64 `json:"podsActed"`
	// OverActionRatio is, over the CPU breaches node QoS acted on, Σ what
	// the pods acted on release ÷ Σ what had to be released to get back
	// under the line (1 is exact, above 1 over-action), in millicores:
	// CPU use for throttling, CPU request for satisfaction-based eviction.
	// MemoryOverActionRatio is the same for memory evictions, in bytes.
	// Nil when there was no such breach.
	OverActionRatio       *float64 `json:"overActionRatio,omitempty"`
	MemoryOverActionRatio *float64 `json:"memoryOverActionRatio,omitempty"`
	// PredictionViolationPercent is the share of node-time whose Prod and
	// system CPU use exceeded the latest predicted Prod peak; nil for
	// policies without prediction.
	PredictionViolationPercent *float64 `json:"predictionViolationPercent,omitempty"`
	// Batch and Mid are the jobs of each class.
	Batch JobStats `json:"batch"`
	Mid   JobStats `json:"mid"`
	// PendingAtEnd are the pods still waiting for a node at the end.
	PendingAtEnd int `json:"pendingAtEnd"`
}

// SLOPoint is the Prod SLO-violation time for one SLO.
type SLOPoint struct {
	// Factor is the SLO: p99 latency ÷ p99 latency alone.
	Factor           float64 `json:"factor"`
	ViolationPercent float64 `json:"violationPercent"`
}

// JobStats sums up one class of jobs.
type JobStats struct {
	// Submitted are the jobs that arrived during the run; Completed those
	// that finished.
	Submitted int64 `json:"submitted"`
	Completed int64 `json:"completed"`
	// CompletionPercent is Completed ÷ Submitted.
	CompletionPercent float64 `json:"completionPercent"`
	// MeanSlowdown and P95Slowdown are over completed jobs: (finish −
	// arrival) ÷ the run time with all the CPU the job wants, waiting and
	// evictions included; 1 is no slowdown.
	MeanSlowdown float64 `json:"meanSlowdown"`
	P95Slowdown  float64 `json:"p95Slowdown"`
	// CoreHours is the CPU the class used, completed or not.
	CoreHours float64 `json:"coreHours"`
	// Evicted counts evictions and OOM kills of the class's pods.
	Evicted int64 `json:"evicted"`
	// Preempted counts the class's pods the scheduler preempted.
	Preempted int64 `json:"preempted"`
}

// Series are a policy's time series, one value per point; each point
// averages (or, for counts, sums) the steps of its interval.
type Series struct {
	// Hours are the points' start times, in hours since the start.
	Hours []float64 `json:"hours"`
	// CPUPercent is the cluster's CPU use ÷ capacity.
	CPUPercent []float64 `json:"cpuPercent"`
	// ProdContentionPercent is the share of Prod-running nodes over their
	// CPU evict line.
	ProdContentionPercent []float64 `json:"prodContentionPercent"`
	// ProdSLOViolationPercent is the share of Prod pods over their SLO.
	ProdSLOViolationPercent []float64 `json:"prodSLOViolationPercent"`
	// ProdCores, BatchCores and MidCores are the CPU each class used.
	ProdCores  []float64 `json:"prodCores"`
	BatchCores []float64 `json:"batchCores"`
	MidCores   []float64 `json:"midCores"`
	// BatchAllocatableCores is Σ waterline.dev/batch-cpu the manager
	// published; BatchRequestedCores Σ the CPU requests (tier or not) of
	// the Batch pods placed.
	BatchAllocatableCores []float64 `json:"batchAllocatableCores"`
	BatchRequestedCores   []float64 `json:"batchRequestedCores"`
	// Evictions counts QoS evictions and OOM kills in the interval.
	Evictions []float64 `json:"evictions"`
	// ThrottledPods is the mean number of Batch pods held by a quota;
	// ThrottledCores the CPU the quotas held back.
	ThrottledPods  []float64 `json:"throttledPods"`
	ThrottledCores []float64 `json:"throttledCores"`
	// Pending is the mean number of pods waiting for a node.
	Pending []float64 `json:"pending"`
}
