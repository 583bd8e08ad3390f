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

// Package agent is waterline-agent's loop: once per collect interval it
// reads the node (collector), stores the sample (metric cache), and hands a
// Snapshot to its modules -- the predictor, the QoS executor, the tier
// enforcer -- which act on the node and contribute to the NodeMetric status
// the reporter writes.
//
// The agent talks to the API server only about its own node: its Node, the
// pods bound to it, its NodeMetric, and the NodeQOS objects (cluster-scoped,
// few). It never watches other nodes' pods.
package agent
