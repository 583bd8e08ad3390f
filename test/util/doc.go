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
