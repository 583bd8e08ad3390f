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

// Package integration holds Waterline's integration tests: each runs
// against a real etcd and kube-apiserver started by test/util, with kwok
// nodes and Waterline's real binaries where the behaviour needs them.
//
// Most tests run in parallel (t.Parallel), each on its own control plane:
// they spend their time waiting on the API server and on our components'
// intervals, not computing. The tests whose assertions depend on real CPU
// -- CPU burners in real cgroups, the agent's RSS -- are not parallel and
// run first, alone.
package integration
