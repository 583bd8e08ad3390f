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

// Package collector measures what the node and its pods use right now: node
// CPU and memory from /proc, per pod and per container CPU and memory from
// the pods' cgroups, and the system usage (node − Σ pods).
//
// It decides how a cumulative counter becomes a rate (Δ counter ÷ Δ time,
// nothing on a pod's first read or after a counter went backwards) and
// which usage figure counts: memory used is MemTotal − MemAvailable for the
// node and the working set (usage − inactive file) for cgroups.
//
// It must never fail a whole cycle because one pod vanished or one file was
// half-written: those pods are skipped and counted in the cycle's stats. It
// must never report a CPU rate it did not measure (a new pod has no CPU
// sample, not a zero one). It only reads; it never writes a cgroup, and it
// keeps no history beyond the previous counter of each pod (the metric
// cache stores series).
package collector
