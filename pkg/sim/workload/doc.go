/*
Copyright The Waterline Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
