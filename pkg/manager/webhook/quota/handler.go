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

package quota

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Path is where waterline-manager serves the webhook; the
// ValidatingWebhookConfiguration points at it.
const Path = "/validate-pod-priority-quota"

// The handler reads ResourceQuotas through the manager's cache.
//
// +kubebuilder:rbac:groups="",resources=resourcequotas,verbs=get;list;watch

// Handler admits pods of limited PriorityClasses only in namespaces with a
// ResourceQuota scoped to the class. It is a validating webhook: the
// Priority admission plugin has already filled in the global default class
// by the time it runs, so pods that inherit a limited class are judged too.
type Handler struct {
	config  Config
	quotas  client.Reader
	decoder admission.Decoder
}

var _ admission.Handler = &Handler{}

// NewHandler validates config and returns a handler that reads
// ResourceQuotas through quotas (waterline-manager passes its cached
// client, so admission does not call the API server).
func NewHandler(config Config, quotas client.Reader, decoder admission.Decoder) (*Handler, error) {
	if errs := config.Validate(field.NewPath("priorityQuota")); len(errs) > 0 {
		return nil, fmt.Errorf("invalid quota webhook configuration: %w", errs.ToAggregate())
	}
	return &Handler{config: config, quotas: quotas, decoder: decoder}, nil
}

// Handle implements admission.Handler.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Kind.Group != "" || req.Kind.Kind != "Pod" || req.SubResource != "" || req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	pod := &corev1.Pod{}
	if err := h.decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding pod: %w", err))
	}
	class := pod.Spec.PriorityClassName
	if !h.config.limits(class) {
		return admission.Allowed("")
	}
	logger := klog.FromContext(ctx)
	var list corev1.ResourceQuotaList
	if err := h.quotas.List(ctx, &list, client.InNamespace(req.Namespace)); err != nil {
		return admission.Errored(http.StatusInternalServerError,
			fmt.Errorf("listing ResourceQuotas of namespace %s: %w", req.Namespace, err))
	}
	for i := range list.Items {
		if Covers(&list.Items[i], class) {
			logger.V(5).Info("Admitting pod of a limited PriorityClass", "namespace", req.Namespace, "priorityClass", class, "resourceQuota", list.Items[i].Name)
			return admission.Allowed(fmt.Sprintf("PriorityClass %q is covered by ResourceQuota %s", class, list.Items[i].Name))
		}
	}
	logger.V(2).Info("Denying pod of a PriorityClass without a ResourceQuota", "namespace", req.Namespace, "priorityClass", class, "pod", pod.Name)
	return admission.Denied(fmt.Sprintf(
		"pods of PriorityClass %q may only be created in namespaces with a ResourceQuota scoped to it, and namespace %q has none "+
			"(want spec.scopeSelector.matchExpressions with scopeName PriorityClass and operator In [%s] or Exists)",
		class, req.Namespace, class))
}

// Covers reports whether the quota is scoped to pods of class, as the
// ResourceQuota admission plugin decides it for its matchScopes: one of the
// quota's scopeSelector expressions on scopeName PriorityClass matches a
// pod of the class (In listing it, NotIn not listing it, or Exists), and
// PriorityClass in spec.scopes, which the plugin reads as Exists.
func Covers(q *corev1.ResourceQuota, class string) bool {
	if slices.Contains(q.Spec.Scopes, corev1.ResourceQuotaScopePriorityClass) {
		return true
	}
	if q.Spec.ScopeSelector == nil {
		return false
	}
	for _, e := range q.Spec.ScopeSelector.MatchExpressions {
		if e.ScopeName != corev1.ResourceQuotaScopePriorityClass {
			continue
		}
		switch e.Operator {
		case corev1.ScopeSelectorOpExists:
			return true
		case corev1.ScopeSelectorOpIn:
			if slices.Contains(e.Values, class) {
				return true
			}
		case corev1.ScopeSelectorOpNotIn:
			if !slices.Contains(e.Values, class) {
				return true
			}
		}
	}
	return false
}
