//go:build tools

// Package tools pins the Helm release hack/build-tools.sh builds for
// `make verify` (helm lint, helm template) and the install tests. It is a
// module of its own so that Helm's dependencies never move the Kubernetes
// versions the control plane in ../ is built with.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
