// Package agent is waterline-agent's loop: once per collect interval it
// reads the node (collector), stores the sample (metric cache), and hands a
// Snapshot to its modules -- the predictor, the QoS executor, the tier
// enforcer -- which act on the node and contribute to the NodeMetric status
// the reporter writes.
//
// The agent talks to the API server only about its own node: its Node, the
// pods bound to it, its NodeMetric, and the NodeQOS objects (cluster-scoped,
// few). It never watches other nodes' pods.
package agent
