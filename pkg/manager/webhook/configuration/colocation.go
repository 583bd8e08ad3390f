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

// Package configuration keeps waterline-manager's webhook configurations:
// the colocation-profile webhook gets one entry per profile of the default
// ColocationPolicy, with that profile's namespace and pod selectors, so the
// API server calls the manager only for pods a profile selects -- a manager
// outage then never blocks the creation of any other pod -- and every
// configuration the manager serves carries the CA bundle of its current
// serving certificate.
//
// It must never widen what the webhooks see beyond the profiles, except to
// make a broken profile visible: a profile whose selector does not parse
// gets an entry without that selector, and the handler refuses the pods it
// sees with the reason. The CRD's schema refuses such selectors
// (v1alpha1.LabelSelector), so only a policy stored under an earlier
// schema can take that path (docs/design/tiers.md, "Selectors").
package configuration

import (
	"fmt"
	"regexp"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// LabelWebhooks = disabled on a namespace keeps its pods away from every
// Waterline webhook.
const LabelWebhooks = "waterline.dev/webhooks"

// ClientConfig is where the API server reaches the manager: a base URL
// (https://host:port) or a Service. Paths are appended.
type ClientConfig struct {
	URL              string
	ServiceName      string
	ServiceNamespace string
	ServicePort      int32
}

// For returns the webhook client configuration for path with caBundle.
func (c ClientConfig) For(path string, caBundle []byte) admissionregistrationv1.WebhookClientConfig {
	if c.URL != "" {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(strings.TrimSuffix(c.URL, "/") + path), CABundle: caBundle}
	}
	port := c.ServicePort
	if port == 0 {
		port = 443
	}
	return admissionregistrationv1.WebhookClientConfig{
		Service:  &admissionregistrationv1.ServiceReference{Name: c.ServiceName, Namespace: c.ServiceNamespace, Path: ptr.To(path), Port: ptr.To(port)},
		CABundle: caBundle,
	}
}

// Colocation describes the colocation-profile webhook's configuration.
type Colocation struct {
	// Name of the MutatingWebhookConfiguration.
	Name   string
	Client ClientConfig
	// Path the manager serves the webhook on.
	Path string
	// FailurePolicy for the pods a profile selects.
	FailurePolicy  admissionregistrationv1.FailurePolicyType
	TimeoutSeconds int32
	// ExcludedNamespaces never reach the webhook.
	ExcludedNamespaces []string
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// Webhooks returns the configuration's entries for profiles: one per
// profile, in profile order (the API server calls them in that order and
// the handler applies the first profile that matches, so a pod two
// profiles select gets the first one, as without the split).
func (c Colocation) Webhooks(profiles []v1alpha1.ColocationProfile, caBundle []byte) []admissionregistrationv1.MutatingWebhook {
	hooks := make([]admissionregistrationv1.MutatingWebhook, 0, len(profiles))
	seen := map[string]bool{}
	for i := range profiles {
		p := &profiles[i]
		label := strings.Trim(nonName.ReplaceAllString(strings.ToLower(p.Name), "-"), "-")
		if label == "" || seen[label] || len(label) > 63 {
			label = fmt.Sprintf("profile-%d", i)
			// An earlier profile may be named so already.
			for n := 1; seen[label]; n++ {
				label = fmt.Sprintf("profile-%d-%d", i, n)
			}
		}
		seen[label] = true
		hooks = append(hooks, admissionregistrationv1.MutatingWebhook{
			Name:                    label + ".colocation-profile.waterline.dev",
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig:            c.Client.For(c.Path, caBundle),
			FailurePolicy:           ptr.To(c.FailurePolicy),
			// Another webhook may change the pod's labels after this one:
			// call again so the profile sees the final pod.
			ReinvocationPolicy: ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
			SideEffects:        ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:     ptr.To(c.TimeoutSeconds),
			NamespaceSelector:  c.namespaceSelector(p.NamespaceSelector.AsMetav1()),
			ObjectSelector:     selectorOrAll(p.Selector.AsMetav1()),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"},
					Scope: ptr.To(admissionregistrationv1.NamespacedScope),
				},
			}},
			MatchPolicy: ptr.To(admissionregistrationv1.Equivalent),
		})
	}
	return hooks
}

// namespaceSelector is the profile's namespace selector and the
// exclusions (kube-system, Waterline's own namespace, opted-out ones).
func (c Colocation) namespaceSelector(sel *metav1.LabelSelector) *metav1.LabelSelector {
	out := selectorOrAll(sel)
	if len(c.ExcludedNamespaces) > 0 {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: c.ExcludedNamespaces,
		})
	}
	out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
		Key: LabelWebhooks, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"disabled"},
	})
	return out
}

// selectorOrAll copies sel, or returns the empty selector (everything)
// when sel is unset or does not parse.
func selectorOrAll(sel *metav1.LabelSelector) *metav1.LabelSelector {
	if sel == nil {
		return &metav1.LabelSelector{}
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		return &metav1.LabelSelector{}
	}
	return sel.DeepCopy()
}
