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

// Package executor is waterline-agent's node QoS executor (docs/design/node-qos.md):
// every cycle it turns the NodeQOS objects that select its node into
// waterlines, measures the node and its pods from the cycle's sample, asks
// the pure planner (pkg/core/qos) what to do, and does it -- CPU quotas as
// intents to the resctl.Reconciler (the one writer of pod cgroups),
// evictions through the Eviction API (PodDisruptionBudgets respected, at
// most maxPerMinute, with the NodeQOS grace period, an Event on the pod and
// on the node), and the ForbidScheduling and Throttling conditions of the
// node's NodeMetric.
//
// It decides nothing the planner does not: which pods, how far and in what
// order is the core's. It must never throttle or evict a protected pod
// (extension.QoSProtection: Prod, Mid, DaemonSet, static/mirror,
// system-critical and terminating pods) -- the planner filters them and the
// executor asserts it again before every action -- never evict more than
// the rate limit allows, and never change anything in dry-run. It remembers
// what it applied in memory only: after a restart no pod is throttled until
// the planner asks again.
package executor
