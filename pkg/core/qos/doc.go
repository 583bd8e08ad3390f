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

// Package qos decides what a node's agent does to its low-priority pods when
// node usage crosses a waterline (docs/design/node-qos.md): whether to forbid
// scheduling of new Batch/Free pods, which pods to throttle and to what CPU
// quota, when and how far to give throttled CPU back, and which pods to evict.
//
// It turns NodeQOS objects into absolute waterlines per action and metric
// (BuildWaterlines), debounces crossings with consecutive-sample counters
// (Hysteresis), sorts candidates with composable sorters (OrderedBy) and plans
// precise actions: one pod at a time in sorted order, subtracting what each
// releases, stopping as soon as the gap to the waterline is closed
// (Planner.Plan). Metrics carry their attributes
// (docs/design/node-qos.md#metrics-and-their-attributes) in a Registry built by
// a constructor; callers add their own with Register.
//
// The package is pure: it reads no files, calls no API server, starts no
// goroutine, reads no clock and logs nothing; the plan carries its reasons.
// It must never put a protected pod in a plan: Prod and Mid pods, DaemonSet,
// static/mirror, system-critical and terminating pods are filtered here,
// through extension.QoSProtection, even when the caller filtered already.
package qos
