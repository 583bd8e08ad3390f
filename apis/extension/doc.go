// Package extension holds Waterline's well-known names -- labels,
// annotations, extended resources, priority bands -- and the pure helpers
// that classify a pod: its band, and whether node QoS may ever act on it.
//
// Every component classifies pods through these helpers, so the scheduler,
// the agent, the manager and the simulator agree on what a Batch pod is and
// on which pods are never throttled or evicted.
package extension
