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

// Package e2e runs Waterline as one system on a real node: kubelet and
// containerd on this machine (test/util.StartRealNode) registered with a
// real kube-apiserver, kube-controller-manager for the agent's DaemonSet,
// waterline-scheduler placing real pods, and the agent running as a
// DaemonSet pod from its image, reading and writing the cgroups kubelet
// made. The agent reads the node's usage from a proc view the test writes
// (the machine's, or only the node's pods' where a scenario needs a load it
// controls on a shared machine), and the checks on the pods' cgroups go
// through the agent's cgroup layout code, so they read v1 and v2 alike.
// Where the machine cannot run a real node (not root, no containerd or
// runc) the tests skip and say why. TestSoak, the same system for as long
// as $WATERLINE_SOAK says under churning pods, runs only when asked
// (`make soak`).
package e2e
