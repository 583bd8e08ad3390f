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

// Package tierlimits enforces Mid and Batch tier resources on the node.
// Kubelet turns cpu and memory into cgroup limits but ignores extended
// resources, so a pod whose cpu and memory the colocation webhook moved into
// waterline.dev/{mid,batch}-{cpu,memory} would otherwise run unbounded with
// BestEffort's two CPU shares. The Enforcer decides, every cycle, what
// kubelet would have written had those been cpu and memory -- shares from
// the CPU request, a quota from the CPU limit, a memory limit -- and caps
// the Batch band as a whole at the node's Batch allocatable, so the band
// cannot outgrow what the manager sold (tiers.BandCaps). It states these as
// intents to the resctl.Reconciler, which writes them.
//
// It never writes a cgroup itself, never caps a pod QoS protects below its
// own limit, and never raises a pod above its own limit or above a
// throttle: the Reconciler takes the smallest of every cap.
package tierlimits
