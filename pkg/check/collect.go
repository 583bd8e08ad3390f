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

package check

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/client/clientset/versioned"
	"github.com/waterline-dev/waterline/pkg/webhookprobe"
)

// Collect reads what Evaluate checks, with the leases named ("name" in
// namespace or "namespace/name"; empty ones are skipped). It needs get on
// Waterline's namespace's deployments, daemonsets and leases (the ones it
// names, and a lease of another namespace it names there), list on its
// pods and events, create on its configmaps (the webhook probe's dry run),
// and list on nodes, nodemetrics, mutating- and
// validatingwebhookconfigurations and the endpointslices of the webhooks'
// Services' namespaces.
func Collect(ctx context.Context, kube kubernetes.Interface, wl versioned.Interface, namespace string, leases ...string) (*Snapshot, error) {
	s := &Snapshot{
		Namespace:      namespace,
		Served:         map[string]bool{},
		Deployments:    map[string]*appsv1.Deployment{},
		DaemonSets:     map[string]*appsv1.DaemonSet{},
		Leases:         map[string]*coordinationv1.Lease{},
		NodeMetrics:    map[string]*v1alpha1.NodeMetric{},
		ReadyEndpoints: map[string]int{},
	}
	resources, err := kube.Discovery().ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("discovering %s: %w", v1alpha1.SchemeGroupVersion, err)
	}
	if resources != nil {
		for _, r := range resources.APIResources {
			s.Served[r.Name] = true
		}
	}
	for _, name := range []string{Manager, Scheduler} {
		switch d, err := kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{}); {
		case err == nil:
			s.Deployments[name] = d
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("getting deployment %s/%s: %w", namespace, name, err)
		}
	}
	switch ds, err := kube.AppsV1().DaemonSets(namespace).Get(ctx, Agent, metav1.GetOptions{}); {
	case err == nil:
		s.DaemonSets[Agent] = ds
		if err := collectAgents(ctx, kube, ds, s); err != nil {
			return nil, err
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("getting daemonset %s/%s: %w", namespace, Agent, err)
	}
	for _, lease := range leases {
		if lease == "" {
			continue
		}
		ns, name, ok := strings.Cut(leaseRef(namespace, lease), "/")
		if !ok {
			return nil, fmt.Errorf("lease %q: want a name or namespace/name", lease)
		}
		switch l, err := kube.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{}); {
		case err == nil:
			s.Leases[lease] = l
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("getting lease %s/%s: %w", ns, name, err)
		}
	}
	err = pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return kube.CoreV1().Nodes().List(ctx, o)
	}).EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		s.Nodes = append(s.Nodes, *o.(*corev1.Node))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	if s.Served["nodemetrics"] {
		err = pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return wl.WaterlineV1alpha1().NodeMetrics().List(ctx, o)
		}).EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
			nm := o.(*v1alpha1.NodeMetric)
			s.NodeMetrics[nm.Name] = nm
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("listing nodemetrics: %w", err)
		}
	}
	add := func(configuration, name string, cc admissionregistrationv1.WebhookClientConfig, fp *admissionregistrationv1.FailurePolicyType) {
		if strings.HasPrefix(configuration, "waterline-") {
			s.Webhooks = append(s.Webhooks, Webhook{Configuration: configuration, Name: name, ClientConfig: cc, FailurePolicy: failurePolicy(fp)})
		}
	}
	mutating, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing mutatingwebhookconfigurations: %w", err)
	}
	for _, cfg := range mutating.Items {
		for _, w := range cfg.Webhooks {
			add(cfg.Name, w.Name, w.ClientConfig, w.FailurePolicy)
		}
	}
	validating, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing validatingwebhookconfigurations: %w", err)
	}
	for _, cfg := range validating.Items {
		for _, w := range cfg.Webhooks {
			add(cfg.Name, w.Name, w.ClientConfig, w.FailurePolicy)
		}
	}
	for _, w := range s.Webhooks {
		svc := w.ClientConfig.Service
		if svc == nil {
			continue
		}
		key := svc.Namespace + "/" + svc.Name
		if _, done := s.ReadyEndpoints[key]; done {
			continue
		}
		eps, err := kube.DiscoveryV1().EndpointSlices(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc.Name})
		if err != nil {
			return nil, fmt.Errorf("listing the endpointslices of service %s: %w", key, err)
		}
		s.ReadyEndpoints[key] = readyEndpoints(eps.Items)
	}
	if slices.ContainsFunc(s.Webhooks, func(w Webhook) bool { return w.Configuration == webhookprobe.Configuration }) {
		s.Probe = probe(ctx, kube, namespace)
	}
	return s, nil
}

// probe creates, with dryRun=All, a ConfigMap that only the manager's
// probe webhook sees (pkg/webhookprobe) and reads its answer from the
// warnings: the API server calls the webhook as it calls every other
// Waterline webhook, and stores nothing.
func probe(ctx context.Context, kube kubernetes.Interface, namespace string) *Probe {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "waterline-webhook-probe-", Namespace: namespace, Labels: map[string]string{webhookprobe.Label: "true"},
	}}
	p := &Probe{}
	start := time.Now()
	err := kube.CoreV1().RESTClient().Post().Namespace(namespace).Resource("configmaps").
		Param("dryRun", metav1.DryRunAll).Body(cm).
		WarningHandler(warningFunc(func(text string) {
			if replica, ok := webhookprobe.Answered(text); ok {
				p.Answered = replica
			}
		})).
		Do(ctx).Error()
	p.Took = time.Since(start)
	if err != nil {
		p.Err = err.Error()
		// The check's own RBAC, not a webhook's refusal.
		p.Forbidden = apierrors.IsForbidden(err) && !strings.Contains(p.Err, "admission webhook")
	}
	return p
}

// warningFunc handles warning headers with a function of their text.
type warningFunc func(text string)

func (f warningFunc) HandleWarningHeader(_ int, _ string, text string) { f(text) }

// collectAgents reads the nodes the agent DaemonSet ds has pods on and
// its Warning events.
func collectAgents(ctx context.Context, kube kubernetes.Interface, ds *appsv1.DaemonSet, s *Snapshot) error {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return fmt.Errorf("daemonset %s/%s: its selector: %w", ds.Namespace, ds.Name, err)
	}
	s.AgentNodes = map[string]bool{}
	err = pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return kube.CoreV1().Pods(ds.Namespace).List(ctx, o)
	}).EachListItem(ctx, metav1.ListOptions{LabelSelector: sel.String()}, func(o runtime.Object) error {
		p := o.(*corev1.Pod)
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == ds.UID && p.Spec.NodeName != "" {
			s.AgentNodes[p.Spec.NodeName] = true
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing the pods of daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	events, err := kube.CoreV1().Events(ds.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("involvedObject.uid", string(ds.UID)),
		fields.OneTermEqualSelector("type", corev1.EventTypeWarning),
	).String()})
	if err != nil {
		return fmt.Errorf("listing the events of daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
	}
	s.AgentWarnings = events.Items
	slices.SortStableFunc(s.AgentWarnings, func(a, b corev1.Event) int { return lastSeen(&a).Compare(lastSeen(&b)) })
	return nil
}

// lastSeen is when the event last happened: a series' last observation,
// the last timestamp of an event counted the old way, or when it was
// first reported.
func lastSeen(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// failurePolicy is the webhook's, with the API's default (Fail).
func failurePolicy(p *admissionregistrationv1.FailurePolicyType) admissionregistrationv1.FailurePolicyType {
	if p == nil {
		return admissionregistrationv1.Fail
	}
	return *p
}

// readyEndpoints counts the endpoints not known to be unready (the
// EndpointSlice API's reading of a nil ready condition).
func readyEndpoints(slices []discoveryv1.EndpointSlice) int {
	n := 0
	for _, sl := range slices {
		for _, e := range sl.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				n++
			}
		}
	}
	return n
}
