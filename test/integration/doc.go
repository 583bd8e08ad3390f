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
