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

// Package webhookprobe is the contract between waterline-manager's probe
// webhook and `waterline check`, which calls it to learn whether the API
// server reaches the manager's webhook server at all: the path every other
// Waterline webhook takes -- the Service or URL, the port, the CA bundle,
// and any firewall between the control plane and the pods, which nothing
// in the cluster's objects shows (a private GKE control plane reaches
// nodes on 443 and 10250 only). The check makes a dry-run ConfigMap
// labelled Label in the release namespace; only such requests reach the
// webhook (the chart's Configuration selects them), which allows each one
// with a warning naming the replica that answered. With the webhook
// unreachable the API server refuses the request (failurePolicy Fail),
// naming the failed call. cert-manager's `cmctl check api` checks its
// webhook the same way. The package imports nothing, so that the CLI does
// not link the webhook server.
package webhookprobe

import "strings"

const (
	// Path is where the manager serves the webhook.
	Path = "/validate-waterline-webhook-probe"
	// Configuration is the chart's ValidatingWebhookConfiguration, and
	// Webhook the name of its one webhook, which the API server's error
	// names when it cannot call it.
	Configuration = "waterline-webhook-probe"
	Webhook       = "probe.waterline.dev"
	// Label = "true" marks the dry-run ConfigMaps the probe webhook sees.
	Label = "waterline.dev/webhook-probe"
	// WarningPrefix starts the warning the webhook answers with; the name
	// of the replica that answered follows.
	WarningPrefix = "waterline-manager answered the webhook probe: "
)

// Warning is the webhook's answer for replica.
func Warning(replica string) string { return WarningPrefix + replica }

// Answered returns the replica a warning names, and whether the warning
// is the probe webhook's answer.
func Answered(warning string) (string, bool) {
	return strings.CutPrefix(warning, WarningPrefix)
}
