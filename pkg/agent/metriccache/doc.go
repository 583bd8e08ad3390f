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

// Package metriccache keeps the recent usage series of the node, its
// system part, its pods and their bands in memory, and answers window
// statistics over them (count, avg, p50, p90, p95, p99, max) for the
// reporter, the predictor and node QoS.
//
// It decides what is kept: raw samples for a retention (default 30 min),
// within a hard memory budget. Storage is a shared ring of sample
// timestamps and, per series, fixed-size chunks of float32 values aligned
// to that ring; the README has the measurements that chose this over an
// embedded TSDB. When the budget is reached the oldest chunks go first, pod
// series before node series; a series that would need memory that cannot
// be freed is refused and counted. Series of pods that disappear age out
// with the retention.
//
// It survives restarts through a checkpoint file written atomically (temp
// file, fsync, rename, directory fsync); a corrupt or foreign checkpoint is
// logged and ignored, never fatal.
//
// It must never grow beyond its budget, never block a caller on disk I/O
// while holding its lock, and never read the clock except through the
// injected k8s.io/utils/clock.
package metriccache
