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
// owner's choice (system-node-critical, say) wins.
package daemonset

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Path is where the manager would serve the webhook.
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
