// The releases whose CRDs the tests install to check the chart's objects
// of those kinds (test/util/modules.go): the Prometheus Operator's
// ServiceMonitor, cert-manager's Certificate and Issuer. No Go file
// imports them, so `go mod tidy` would drop these lines: edit the version
// and run `go mod download <module>` here to update go.sum.
module github.com/waterline-dev/waterline/hack/tools/crds

go 1.26

require (
	github.com/cert-manager/cert-manager v1.21.2
	github.com/prometheus-operator/prometheus-operator v0.85.0
)
