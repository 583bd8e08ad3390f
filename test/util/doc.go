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

// Package util starts the real parts Waterline's integration tests run
// against: etcd and kube-apiserver (through envtest) with Waterline's CRDs
// installed, kwok managing fake nodes and pods, and Waterline's own binaries
// built from this checkout.
//
// Everything a test starts is stopped by t.Cleanup, also when the test
// fails. Child processes are started in their own process group with
// Pdeathsig set, so they die with the test binary even when it is killed.
// The control-plane binaries come from bin/ (make tools); a missing one
// fails the test with the command that builds it.
package util
