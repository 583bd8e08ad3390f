//go:build tools

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

// Package tools pins the Helm release hack/build-tools.sh builds for
// `make verify` (helm lint, helm template) and the install tests. It is a
// module of its own so that Helm's dependencies never move the Kubernetes
// versions the control plane in ../ is built with.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
