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

// Package extension holds Waterline's well-known names -- labels,
// annotations, extended resources, priority bands -- and the pure helpers
// that classify a pod: its band, and whether node QoS may ever act on it.
//
// Every component classifies pods through these helpers, so the scheduler,
// the agent, the manager and the simulator agree on what a Batch pod is and
// on which pods are never throttled or evicted.
package extension
