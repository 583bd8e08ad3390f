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

// Package predict decides how much a node's Prod pods will use at their peak.
// It holds decaying usage histograms, the peak predictors of Koordinator node
// prediction and of Bashir et al. (EuroSys'21;
// docs/design/prediction.md#models) -- N-sigma v1 and v2, Borg-default,
// Resource Central, a percentile peak and the Max of any of them -- and the
// trace-driven evaluation that scores them by violation rate and savings.
//
// The agent's predict server, the simulator and `waterline predict` all feed
// the same types: a Tracker (or hand-built Input) of histograms per node and
// per pod, a Predictor, and plain numbers out. Units are the caller's (cores,
// millicores, bytes, MHz): nothing here converts them.
//
// The package must never read clocks, files or the API server, keep global
// state, or panic: time comes in as arguments, and bad input is either an
// error or, for single samples in hot loops, ignored as documented.
package predict
