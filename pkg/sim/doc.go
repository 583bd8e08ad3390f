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

// Package sim is Waterline's trace-driven simulator: it replays a workload
// (pkg/sim/workload) on a simulated cluster in virtual time, once per
// policy -- plain Kubernetes, Waterline, and Waterline whose node QoS acts
// on every Batch pod -- and measures what each does to utilisation, to the
// online (Prod) services and to batch work.
//
// It decides nothing itself that Waterline's components decide: placement
// goes through pkg/core/nodeload (as the LoadAware plugin does), pods
// become Mid and Batch pods through pkg/core/colocation (the webhook's
// core), each node's policy comes from pkg/core/policy, its QoS actions
// from pkg/core/qos's planner, its Prod peak from pkg/core/predict, and
// its tier resources from pkg/core/tiers. What the simulator adds is the
// world around them: nodes whose pods use CPU and memory, a scheduling
// queue, a kube-scheduler-like node sampling and tie-breaking, the
// agents' reporting and the jobs' progress.
//
// It must never copy a core's decision into its own code (a simulator that
// disagrees with the cluster it models is worse than none), never read the
// wall clock or the global random source (a run is a pure function of its
// workload, config and seed), and never let one policy's run see another's
// state.
package sim
