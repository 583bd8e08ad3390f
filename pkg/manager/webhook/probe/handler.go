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

// Package probe is waterline-manager's side of the webhook probe
// (pkg/webhookprobe): it allows every request it sees with a warning that
// names the replica that answered.
package probe

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/waterline-dev/waterline/pkg/webhookprobe"
)

// Handler answers the probe.
type Handler struct {
	// Replica names the manager replica (its pod), for the warning.
	Replica string
}

var _ admission.Handler = &Handler{}

// Handle allows the request with a warning naming the replica.
func (h *Handler) Handle(context.Context, admission.Request) admission.Response {
	return admission.Allowed("").WithWarnings(webhookprobe.Warning(h.Replica))
}
