// Package loadaware decides where pods fit by the real load of nodes: it
// estimates the load a pod will put on a node, works out how much of the load
// of pods already assigned to a node its NodeMetric does not show yet, picks
// the thresholds that apply to a pod on a node, and gives the filter verdict
// and the score that the LoadAware scheduler plugin and the simulator both use
// (docs/design/loadaware.md).
//
// Resources are vectors: a Config tracks at most MaxResources resources, each
// at a fixed position (cpu first, memory second), so the per-node Filter and
// Score arithmetic is a loop over a small array with no map lookup and no
// allocation.
//
// The package must never do I/O, read the clock, talk to the API server or
// keep state between calls: time comes in as an argument, NodeMetrics and
// pods come in as values, and every decision is a pure function of them.
package loadaware
