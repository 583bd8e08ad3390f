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

// Package cgroups knows where kubelet puts a pod's cgroups and how to read
// and write the few files Waterline uses in them, on cgroup v1 and v2 with
// the cgroupfs and systemd drivers.
//
// It decides one thing: the directory of a pod (by UID and QoS class) and of
// its containers, per controller and version, detected at start from the
// layout kubelet created or forced by the caller. It reads cumulative CPU
// time and the memory working set, and it writes CPU quota and period, CPU
// shares (cpu.weight on v2) and the memory limit, each write returning an
// Undo that puts back what was there.
//
// It must never decide whether a pod may be throttled: callers check
// extension.QoSProtection first. It must never create or remove cgroups
// (kubelet owns them) and never write a file it was not asked to. A cgroup
// that vanished or a file read while kubelet was writing it is a normal
// event on a busy node: it is reported as a typed error (IsGone,
// IsMalformed) for the caller to count, never as a panic.
package cgroups
