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

package manager

import "sigs.k8s.io/controller-runtime/pkg/controller"

// PerNodeWorkers is how many nodes a per-node controller (one key per
// node: NodeMetric lifecycle, tiers) reconciles at once. controller-runtime
// runs one by default, and a reconcile that writes waits for the API
// server's answer: at 5,000 nodes on a busy API server that wait (tens of
// milliseconds) capped the manager at about 18 writes a second per
// controller, however high its client budget, and a fleet's bootstrap
// took minutes (test/bench/controlplane/README.md). A key is never
// reconciled twice at once, and these reconcilers keep no state of their
// own, so more workers change nothing but the rate.
const PerNodeWorkers = 8

// PerNodeOptions are the controller options of a per-node controller.
func PerNodeOptions() controller.Options {
	return controller.Options{MaxConcurrentReconciles: PerNodeWorkers}
}
