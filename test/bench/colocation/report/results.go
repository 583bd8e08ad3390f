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

// Package report holds the colocation benchmark's results, the analysis
// of them (ratios to Prod alone, Batch progress, the over-action of
// throttles and evictions) and their rendering as JSON, a Markdown table
// and an HTML page with SVG plots. It does no I/O but writing the files
// it is asked to.
package report

import (
	"time"

	"github.com/waterline-dev/waterline/test/bench/colocation/loadgen"
)

// Scenarios, in the order the report shows them.
const (
	// Alone: Prod only, no Batch pods.
	Alone = "alone"
	// Kubernetes: the Batch pods as BestEffort pods, no Waterline.
	Kubernetes = "kubernetes"
	// Waterline: Waterline with the chart's defaults.
	Waterline = "waterline"
	// WaterlineNoThrottle: Waterline with the throttle lines off
	// (forbid-scheduling and eviction only).
	WaterlineNoThrottle = "waterline-nothrottle"
	// WaterlineMemory: Waterline with Batch pods whose memory grows past
	// the node's memory evict line: the agent evicts them through the
	// Eviction API. Its Batch pods differ from the other scenarios', so
	// it has no share of batch-alone.
	WaterlineMemory = "waterline-memory"
	// BatchAlone: the Batch pods only, no Prod load: what the node gives
	// Batch when nobody else wants it.
	BatchAlone = "batch-alone"
)

// Scenarios lists the scenarios in report order.
var Scenarios = []string{Alone, Kubernetes, Waterline, WaterlineNoThrottle, WaterlineMemory, BatchAlone}

// CPUScenarios are the scenarios whose Batch pods are the CPU and
// cache burners: the ones a share of batch-alone and the calibration
// compare.
var CPUScenarios = map[string]bool{Kubernetes: true, Waterline: true, WaterlineNoThrottle: true, BatchAlone: true}

// Load shapes.
const (
	Steady = "steady"
	Bursty = "bursty"
)

// Results is one run of the benchmark.
type Results struct {
	// Command that produced them, and whether it was a smoke run (too
	// short to quote).
	Command string    `json:"command"`
	Smoke   bool      `json:"smoke"`
	Machine Machine   `json:"machine"`
	Started time.Time `json:"started"`
	// Loads are the offered Prod loads by shape.
	Loads map[string][]loadgen.Phase `json:"loads"`
	// Prod describes the Prod pod; Batch the Batch pods.
	Prod  string `json:"prod"`
	Batch string `json:"batch"`
	// Waterline says what the Waterline scenarios ran: the NodeQOS and
	// where the agent read node usage from.
	Waterline string `json:"waterline"`
	Runs      []Run  `json:"runs"`
}

// Machine is where the benchmark ran.
type Machine struct {
	Hostname string `json:"hostname"`
	CPUs     int    `json:"cpus"`
	Kernel   string `json:"kernel"`
	CPUModel string `json:"cpuModel"`
	Cgroup   string `json:"cgroup"`
	// UptimeBefore and UptimeAfter are `uptime` lines: the machine's load
	// average, other work on it included.
	UptimeBefore string `json:"uptimeBefore"`
	UptimeAfter  string `json:"uptimeAfter"`
}

// Run is one scenario under one load shape, one round.
type Run struct {
	Scenario string    `json:"scenario"`
	Load     string    `json:"load"`
	Round    int       `json:"round"`
	Start    time.Time `json:"start"`
	// Prod is the load generator's result; nil in BatchAlone.
	Prod *loadgen.Result `json:"prod,omitempty"`
	// Samples are the node's CPU over time, from the cgroups, from the
	// start of the warmup (negative times) to the end of the load.
	Samples []Sample `json:"samples"`
	// Progress is the Batch pods' summed units over time.
	Progress []ProgressPoint `json:"progress"`
	// BatchUnits are the units the Batch pods finished during the load.
	BatchUnits int64 `json:"batchUnits"`
	// Actions are the agent's throttles, restores and evictions.
	Actions []Action `json:"actions,omitempty"`
	// Effects are the over-action measurements of Actions (Analyze).
	Effects []Effect `json:"effects,omitempty"`
	// BatchPods are the Batch pods as the API server admitted them:
	// under Waterline, what the colocation profile's webhook made of them.
	BatchPods []PodInfo `json:"batchPods,omitempty"`
}

// PodInfo is what a pod became at admission.
type PodInfo struct {
	Name              string `json:"name"`
	Namespace         string `json:"namespace"`
	Band              string `json:"band,omitempty"`
	PriorityClassName string `json:"priorityClassName,omitempty"`
	SchedulerName     string `json:"schedulerName,omitempty"`
	// Requests and Limits are the first container's, by resource name.
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
	// Replacement is a pod made after an eviction.
	Replacement bool `json:"replacement,omitempty"`
}

// Sample is CPU use over one sampling interval, in cores.
type Sample struct {
	// T is seconds since the run's start (end of the interval).
	T float64 `json:"t"`
	// Node is the node's pods (kubelet's cgroup root); Prod the Prod
	// pod's cgroup; Batch the Batch pods' cgroups.
	Node  float64 `json:"node"`
	Prod  float64 `json:"prod"`
	Batch float64 `json:"batch"`
	// BatchMemory is the Batch pods' memory (their cgroups' usage) and
	// NodeMemory the node's pods', in bytes, at the end of the interval.
	BatchMemory int64 `json:"batchMemory,omitempty"`
	NodeMemory  int64 `json:"nodeMemory,omitempty"`
	// Machine is the whole machine's busy CPU (/proc/stat): the node, the
	// load generator, the control plane and anything else running.
	Machine float64 `json:"machine"`
}

// ProgressPoint is the Batch pods' summed units at T seconds.
type ProgressPoint struct {
	T     float64 `json:"t"`
	Units int64   `json:"units"`
}

// Action kinds.
const (
	ActionThrottle = "throttle"
	ActionRestore  = "restore"
	ActionEvict    = "evict"
)

// Action is one thing the agent did, as its Event says.
type Action struct {
	// T is seconds since the run's start.
	T    float64 `json:"t"`
	Kind string  `json:"kind"`
	Pod  string  `json:"pod"`
	// GapMilli is the gap to the line the planner meant to close (CPU
	// millicores), ReleaseMilli what it booked for this pod (millicores;
	// bytes for a memory eviction, whose message gives no CPU gap); 0
	// when the message did not say.
	GapMilli     int64 `json:"gapMilli,omitempty"`
	ReleaseMilli int64 `json:"releaseMilli,omitempty"`
	// Message is the Event's text.
	Message string `json:"message"`
}

// Effect is an over-action measurement: one agent cycle's throttles or
// evictions against the node usage drop the cgroups showed after it.
type Effect struct {
	T    float64 `json:"t"`
	Kind string  `json:"kind"`
	Pods int     `json:"pods"`
	// GapMilli is the gap the planner meant to close; BookedMilli what
	// it booked; ObservedMilli the drop of the Batch pods' CPU use the
	// cgroups showed; NodeDropMilli the node's (Prod's changes included).
	GapMilli      int64 `json:"gapMilli"`
	BookedMilli   int64 `json:"bookedMilli"`
	ObservedMilli int64 `json:"observedMilli"`
	NodeDropMilli int64 `json:"nodeDropMilli"`
	// Ratio is ObservedMilli / GapMilli (1: closed exactly; >1: acted
	// more than needed).
	Ratio float64 `json:"ratio"`
}
