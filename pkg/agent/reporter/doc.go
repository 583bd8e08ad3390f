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

// Package reporter writes the agent's node's NodeMetric status: what the
// node, its system part and each of its pods used, averaged over the
// collect policy's aggregate duration, with percentile aggregates of node
// usage over the policy's windows, and whatever the other modules
// contribute (the predicted Prod peak, the QoS conditions).
//
// It decides when to write (every spec.collectPolicy.reportIntervalSeconds,
// re-read each time; early on request, at most once per MinReportSpacing;
// sooner after a failed write) and what the usage fields say. It creates
// the NodeMetric when the manager has not, with the Node as owner, and
// updates the status with a retry on conflict, keeping fields and
// conditions other writers set.
//
// It must never write before the metric cache holds node usage (a status
// of zeros would tell the scheduler an idle node), never write another
// node's NodeMetric, never touch the spec, and never block the collect
// loop: it runs on its own goroutine.
package reporter
