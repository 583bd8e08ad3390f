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

// Package agentscope is the validating webhook that lets a waterline-agent
// evict only pods of its own node. RBAC grants pods/eviction cluster-wide
// and a ValidatingAdmissionPolicy cannot read the pod an eviction names, so
// the manager checks it: the agent's ServiceAccount token is bound to its
// pod, and the API server puts that pod's node in the request's user extra
// (authentication.kubernetes.io/node-name).
//
// It must never let an eviction through when it cannot tell the pod's node:
// an agent without a node-bound token, or a pod it cannot read, is refused.
package agentscope

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Path is where the manager serves the webhook.
const Path = "/validate-agent-eviction"

// NodeNameExtra is the user-extra key of a node-bound ServiceAccount token.
const NodeNameExtra = "authentication.kubernetes.io/node-name"

// Handler refuses evictions of pods on other nodes than the caller's.
// The webhook configuration's matchConditions send it only the agent's
// requests.
type Handler struct {
	// Pods reads the evicted pod (the manager's cache, then the API).
	Pods client.Reader
	// Live reads a pod the cache has not seen yet.
	Live client.Reader
}

var _ admission.Handler = &Handler{}

// Handle answers one admission request for pods/eviction.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Resource.Resource != "pods" || req.SubResource != "eviction" {
		return admission.Allowed("")
	}
	nodes := req.UserInfo.Extra[NodeNameExtra]
	if len(nodes) != 1 || nodes[0] == "" {
		return admission.Denied(fmt.Sprintf("%s may evict pods only with a node-bound ServiceAccount token (no %s in the request)", req.UserInfo.Username, NodeNameExtra))
	}
	node := nodes[0]
	key := types.NamespacedName{Namespace: req.Namespace, Name: req.Name}
	pod := &corev1.Pod{}
	err := h.Pods.Get(ctx, key, pod)
	if apierrors.IsNotFound(err) && h.Live != nil {
		err = h.Live.Get(ctx, key, pod)
	}
	switch {
	case apierrors.IsNotFound(err):
		// The eviction would fail anyway; say so without leaking more.
		return admission.Denied(fmt.Sprintf("pod %s not found", key))
	case err != nil:
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("reading pod %s: %w", key, err))
	}
	if pod.Spec.NodeName != node {
		klog.FromContext(ctx).V(2).Info("Refused an agent's eviction of a pod on another node", "pod", klog.KObj(pod), "podNode", pod.Spec.NodeName, "agentNode", node, "user", req.UserInfo.Username)
		return admission.Denied(fmt.Sprintf("waterline-agent on node %s may evict only pods of node %s; pod %s is on node %q", node, node, key, pod.Spec.NodeName))
	}
	return admission.Allowed("")
}
