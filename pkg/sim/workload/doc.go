// Package workload builds what the simulator replays: nodes, long-running
// online (Prod) services with usage shapes, and Mid and Batch jobs with
// arrivals, requests, CPU use and run times. It has a synthetic generator
// (a diurnal online load and bursty batch arrivals, every parameter
// documented on SyntheticParams) and importers that take part of the
// workload from the public traces in shared/traces: Alibaba v2018 machine
// usage as node background load, the openb pod and node lists as request
// mixes and LS/BE classes, Bitbrains per-VM series as online usage shapes.
//
// A workload is plain data, a pure function of its parameters and seed:
// it never reads the clock, and it never changes once built, so every
// policy of a run replays exactly the same thing.
package workload
