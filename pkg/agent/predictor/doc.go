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

// Package predictor is the agent's predict server
// (docs/design/prediction.md): it keeps decaying usage histograms of the
// node's Prod pods plus the system, of each priority band and of each Prod
// pod, for CPU and memory, feeds them every update interval with the metric
// cache's average over that interval, and predicts the Prod peak with the
// model of the NodeMetric's predict policy. It contributes prodPeak,
// prodReclaimable, predictionTime and the PredictionReady condition to the
// NodeMetric status, asks the reporter for an early report when the
// prediction moved by more than the policy's diff threshold (or
// forceUpdateSeconds passed since the last report), and checkpoints its
// histograms so a restarted agent predicts what it predicted before.
//
// It decides what the histograms hold and when the prediction is worth an
// early report; the models themselves are pkg/core/predict's.
//
// It must never read the wall clock (time comes from the injected clock),
// never block the collect loop on disk I/O (checkpoints are written on its
// own goroutine, outside its lock; the checkpoint is read once, at the
// first cycle, before anything is fed), never crash on a bad checkpoint (it is
// logged and the histograms start afresh from the metric cache), and never
// report a peak below what it can justify: a Prod pod without history counts
// at its request.
package predictor
