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

// Package tools pins the oldest kube-apiserver Waterline supports, which
// hack/build-tools.sh builds as kube-apiserver-1.34 for the test that
// installs and runs Waterline against it (test/integration's
// TestOldestSupportedAPIServer). A module of its own: the Kubernetes
// release it builds is not the one in ../, which the rest of the control
// plane and Waterline itself are built with.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
