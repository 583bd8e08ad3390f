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

// Package resctl is the one writer of pod cgroup limits in waterline-agent.
// Modules (the QoS executor, the tier enforcer) state intents per pod -- a
// CPU quota cap, CPU shares, a memory limit cap -- and the Reconciler, a
// cycle module that runs after them, decides what each pod's cgroup must
// hold: the smallest of kubelet's own value and every cap, the intended
// shares, or kubelet's value when nobody asks for anything. It compares
// that with the cgroup and writes only the differences, every cycle, so a
// kubelet that reset a cgroup or an agent that restarted is healed by the
// next cycle.
//
// It decides nothing about which pods deserve what: that is the modules'
// job. It must never hold a protected pod (extension.QoSProtection: Prod,
// Mid, DaemonSet, static/mirror, system-critical, terminating pods) below
// its own limits, whatever a module asks; never tighten a pod nobody has an
// intent for; and never remember anything across restarts: after a restart
// the only values it writes are intents stated again and, once per pod,
// kubelet's value for a low-priority or tier pod whose quota is below it
// (what a previous run left behind).
package resctl
