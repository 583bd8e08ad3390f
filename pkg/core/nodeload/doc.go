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

// Package nodeload decides where pods fit by the real load of nodes: it
// estimates the load a pod will put on a node, works out how much of the load
// of pods already assigned to a node its NodeMetric does not show yet, picks
// the thresholds that apply to a pod on a node, and gives the filter verdict
// and the score that the LoadAware scheduler plugin and the simulator both use
// (docs/design/loadaware.md).
//
// Resources are vectors: a Config tracks at most MaxResources resources, each
// at a fixed position (cpu first, memory second), so the per-node Filter and
// Score arithmetic is a loop over a small array with no map lookup and no
// allocation.
//
// The package must never do I/O, read the clock, talk to the API server or
// keep state between calls: time comes in as an argument, NodeMetrics and
// pods come in as values, and every decision is a pure function of them.
package nodeload
