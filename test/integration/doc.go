// Package integration holds Waterline's integration tests: each runs
// against a real etcd and kube-apiserver started by test/util, with kwok
// nodes and Waterline's real binaries where the behaviour needs them.
package integration
