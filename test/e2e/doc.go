// Package e2e runs Waterline as one system on a real node: kubelet and
// containerd on this machine (test/util.StartRealNode) registered with a
// real kube-apiserver, kube-controller-manager for the agent's DaemonSet,
// waterline-scheduler placing real pods, and the agent running as a
// DaemonSet pod from its image, reading and writing the cgroups kubelet
// made. Where the machine cannot run a real node (not root, no containerd
// or runc) the tests skip and say why.
package e2e
