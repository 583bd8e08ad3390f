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

// Package controlplane measures what a fleet of Waterline agents and the
// manager cost the control plane: a kwok-backed fleet of simulated agents
// (pkg/kwokagent, the agent's own reporter) writing NodeMetrics, the real
// waterline-manager reconciling them into tier allocatable, and kubelet's
// own per-node writes at the same rate for comparison (README.md).
package controlplane
