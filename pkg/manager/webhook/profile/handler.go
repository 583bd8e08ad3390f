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

// Package profile is the mutating admission webhook that applies the
// default ColocationPolicy's colocation profiles to pods at creation. The
// decision is pkg/core/colocation's; this package only reads what it needs
// (the namespace's labels, the policy, the PriorityClass) and answers.
package profile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/colocation"
)

// Path is where the manager serves the webhook.
const Path = "/mutate-v1-pod-colocation-profile"

// The manager writes the webhook configuration itself, one entry per
// profile (pkg/manager/webhook/configuration), so that only pods a profile
// selects depend on the webhook.
//
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch

// Handler applies colocation profiles.
type Handler struct {
	// Reader reads namespaces, the default ColocationPolicy and
	// PriorityClasses (the manager's cache).
	Reader  client.Reader
	Decoder admission.Decoder
	// FailOpen admits a pod unchanged, with a warning, when the handler
	// cannot read what it needs; otherwise such a pod is refused. It should
	// match the failurePolicy of the webhook configuration, which covers a
	// manager that cannot be reached at all.
	FailOpen bool
}

var _ admission.Handler = &Handler{}

// Handle answers one admission request.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.Kind.Kind != "Pod" {
		return admission.Allowed("")
	}
	logger := klog.FromContext(ctx).WithValues("pod", klog.KRef(req.Namespace, podName(req)))
	pod := &corev1.Pod{}
	if err := h.Decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding pod: %w", err))
	}
	if pod.Namespace == "" {
		pod.Namespace = req.Namespace
	}

	mutated, resp := h.apply(ctx, pod)
	if resp != nil {
		return *resp
	}
	if mutated == nil {
		return admission.Allowed("no colocation profile matches")
	}
	raw, err := json.Marshal(mutated)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	logger.V(2).Info("Applied colocation profile", "profile", mutated.Labels["waterline.dev/colocation-profile"])
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}

// apply returns the mutated pod, nil when no profile matches, or a
// response that ends the request.
func (h *Handler) apply(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, *admission.Response) {
	policy := &v1alpha1.ColocationPolicy{}
	if err := h.Reader.Get(ctx, types.NamespacedName{Name: v1alpha1.DefaultColocationPolicyName}, policy); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, h.readFailure(fmt.Errorf("reading ColocationPolicy %s: %w", v1alpha1.DefaultColocationPolicyName, err))
	}
	if len(policy.Spec.Profiles) == 0 {
		return nil, nil
	}
	ns := &corev1.Namespace{}
	if err := h.Reader.Get(ctx, types.NamespacedName{Name: pod.Namespace}, ns); err != nil {
		return nil, h.readFailure(fmt.Errorf("reading namespace %s: %w", pod.Namespace, err))
	}
	profile, err := colocation.Match(policy.Spec.Profiles, ns.Labels, pod.Labels)
	if err != nil {
		// A broken profile is the operator's to fix; refuse rather than
		// admit pods that should have been colocated as if they were prod.
		r := admission.Denied(fmt.Sprintf("ColocationPolicy %s: %v", policy.Name, err))
		return nil, &r
	}
	if profile == nil {
		return nil, nil
	}
	// The profile may be applied already (the configuration has one entry
	// per profile, and a reinvocation comes back): Apply is idempotent on
	// what it did, and translates what a later webhook added since (an
	// injected sidecar's cpu and memory).
	var class *colocation.PriorityClass
	if profile.PriorityClassName != "" {
		pc := &schedulingv1.PriorityClass{}
		err := h.Reader.Get(ctx, types.NamespacedName{Name: profile.PriorityClassName}, pc)
		switch {
		case err == nil:
			class = &colocation.PriorityClass{Name: pc.Name, Value: pc.Value, PreemptionPolicy: pc.PreemptionPolicy}
		case !apierrors.IsNotFound(err):
			return nil, h.readFailure(fmt.Errorf("reading PriorityClass %s: %w", profile.PriorityClassName, err))
		}
	}
	mutated := pod.DeepCopy()
	if err := colocation.Apply(mutated, profile, class); err != nil {
		var te *colocation.TranslationError
		if errors.As(err, &te) {
			r := admission.Denied(err.Error())
			return nil, &r
		}
		r := admission.Errored(http.StatusInternalServerError, err)
		return nil, &r
	}
	return mutated, nil
}

func (h *Handler) readFailure(err error) *admission.Response {
	var r admission.Response
	if h.FailOpen {
		r = admission.Allowed("").WithWarnings(fmt.Sprintf("waterline: colocation profiles not applied: %v", err))
	} else {
		r = admission.Errored(http.StatusInternalServerError, fmt.Errorf("waterline cannot apply colocation profiles: %w", err))
	}
	return &r
}

func podName(req admission.Request) string {
	if req.Name != "" {
		return req.Name
	}
	var meta struct {
		Metadata struct {
			Name         string `json:"name"`
			GenerateName string `json:"generateName"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(req.Object.Raw, &meta)
	if meta.Metadata.Name != "" {
		return meta.Metadata.Name
	}
	return meta.Metadata.GenerateName
}
