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

// Package daemonset is the mutating admission webhook that gives DaemonSets
// without a priority class Waterline's DaemonSet class (docs/design/preemption.md):
// a DaemonSet's pods must run on every node, and at the default priority (0)
// a newly rolled-out DaemonSet is the first victim of every preemption --
// all of its pods at once. It mutates the DaemonSet's pod template, not the
// pods: kube-apiserver's Priority admission plugin resolves a pod's
// spec.priority from its class before mutating webhooks run, so a class
// set on the pod by a webhook would not take effect.
//
// It never changes a template that names a class or a priority: the
// owner's choice (system-node-critical, say) wins. On an update it sets the
// class only when the update changes the pod template anyway: a change of
// labels or of the update strategy must not roll every pod of an existing
// DaemonSet out to every node just to add a class.
package daemonset

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Path is where the manager serves the webhook.
const Path = "/mutate-apps-v1-daemonset-priority"

// DefaultPriorityClassName is the DaemonSet class the chart ships
// (config/priorityclasses/priorityclasses.yaml).
const DefaultPriorityClassName = "waterline-daemonset"

// Handler sets the DaemonSet class on DaemonSets created or updated
// without one.
type Handler struct {
	Decoder admission.Decoder
	// PriorityClassName is the class to set; DefaultPriorityClassName when
	// empty.
	PriorityClassName string
	// Classes, when set, reads PriorityClasses: a DaemonSet is left
	// unchanged (with a warning) while the class does not exist, since
	// kube-apiserver refuses pods that name a missing class and the
	// DaemonSet would then run no pod at all.
	Classes client.Reader
}

var _ admission.Handler = &Handler{}

// Handle answers one admission request.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Kind.Kind != "DaemonSet" || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) {
		return admission.Allowed("")
	}
	ds := &appsv1.DaemonSet{}
	if err := h.Decoder.Decode(req, ds); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding DaemonSet: %w", err))
	}
	class, changed := ClassFor(ds, h.PriorityClassName)
	if !changed {
		return admission.Allowed("the DaemonSet names its priority")
	}
	if h.Classes != nil {
		err := h.Classes.Get(ctx, client.ObjectKey{Name: class}, &schedulingv1.PriorityClass{})
		if apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Info("Left a DaemonSet without a priority class: the DaemonSet class does not exist", "daemonSet", klog.KRef(req.Namespace, ds.Name), "priorityClassName", class)
			return admission.Allowed("").WithWarnings(fmt.Sprintf("PriorityClass %q does not exist: the DaemonSet keeps the default priority", class))
		}
		if err != nil {
			// failurePolicy is Ignore: an error here must not refuse
			// the DaemonSet either.
			klog.FromContext(ctx).Error(err, "Reading the DaemonSet class; leaving the DaemonSet unchanged", "daemonSet", klog.KRef(req.Namespace, ds.Name), "priorityClassName", class)
			return admission.Allowed("").WithWarnings(fmt.Sprintf("reading PriorityClass %q failed: the DaemonSet keeps the default priority", class))
		}
	}
	if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		old := &appsv1.DaemonSet{}
		if err := h.Decoder.DecodeRaw(req.OldObject, old); err != nil {
			return admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the old DaemonSet: %w", err))
		}
		if apiequality.Semantic.DeepEqual(old.Spec.Template, ds.Spec.Template) {
			return admission.Allowed("the update does not change the pod template: no rollout for the class alone")
		}
	}
	ds.Spec.Template.Spec.PriorityClassName = class
	raw, err := json.Marshal(ds)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encoding DaemonSet: %w", err))
	}
	klog.FromContext(ctx).V(2).Info("Gave a DaemonSet the DaemonSet priority class", "daemonSet", klog.KRef(req.Namespace, ds.Name), "priorityClassName", class)
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}

// ClassFor decides: the class a DaemonSet's pod template should get, and
// whether it lacks one (no priorityClassName and no explicit priority).
func ClassFor(ds *appsv1.DaemonSet, class string) (string, bool) {
	spec := &ds.Spec.Template.Spec
	if spec.PriorityClassName != "" || spec.Priority != nil {
		return spec.PriorityClassName, false
	}
	if class == "" {
		class = DefaultPriorityClassName
	}
	return class, true
}
