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

// Package check tells whether Waterline is installed and working in a
// cluster, as `waterline check` and the chart's `helm test` report it: the
// CRDs served; waterline-manager and waterline-scheduler available, each
// with a leader renewing its lease; an agent ready on every node its
// DaemonSet covers (and, when its pods could not be created, why); every
// node with an agent reporting, and no NodeMetric too old for LoadAware to
// use it; the Mid and Batch tier resources published; every admission
// webhook with a CA bundle and a ready endpoint. Collect reads the
// cluster; Evaluate is a pure function of what it read.
package check

import (
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/nodeload"
	"github.com/waterline-dev/waterline/pkg/webhookprobe"
)

// Status is a check's verdict.
type Status int

const (
	// OK: working as installed.
	OK Status = iota
	// Warning: working, with something an operator should look at.
	Warning
	// Failure: a part of Waterline is not working.
	Failure
)

// MarshalText writes the status as String does ("ok", "warning",
// "FAIL"), in JSON too.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads what MarshalText writes.
func (s *Status) UnmarshalText(text []byte) error {
	for _, st := range []Status{OK, Warning, Failure} {
		if string(text) == st.String() {
			*s = st
			return nil
		}
	}
	return fmt.Errorf("check status %q: want ok, warning or FAIL", text)
}

func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Warning:
		return "warning"
	default:
		return "FAIL"
	}
}

// Component names, as the chart names their workloads.
const (
	Manager   = "waterline-manager"
	Scheduler = "waterline-scheduler"
	Agent     = "waterline-agent"
)

// SchedulerLeaseOf is the leader-election lease of the chart's
// waterline-scheduler named schedulerName: its name in Waterline's
// namespace, or kube-scheduler's own Lease (kube-system/kube-scheduler)
// when it replaces kube-scheduler as default-scheduler, so that the two
// never lead at once.
func SchedulerLeaseOf(schedulerName string) string {
	if schedulerName == "default-scheduler" {
		return "kube-system/kube-scheduler"
	}
	return schedulerName
}

// leaseRef is lease, a name in namespace or "namespace/name", as
// "namespace/name".
func leaseRef(namespace, lease string) string {
	if strings.Contains(lease, "/") {
		return lease
	}
	return namespace + "/" + lease
}

// DefaultManagerLease is the manager's leader-election lease
// (cmd/waterline-manager's LeaderElectionID).
const DefaultManagerLease = "waterline-manager.waterline.dev"

// Resources are the waterline.dev/v1alpha1 resources Waterline serves.
var Resources = []string{"nodemetrics", "nodeqoses", "colocationpolicies"}

// Options say what to expect.
type Options struct {
	// Now is when the snapshot was taken.
	Now time.Time
	// Expect are the components that must be installed (Manager,
	// Scheduler, Agent); one not expected is checked only when found.
	Expect []string
	// ManagerLease and SchedulerLease are the leader-election leases of
	// the manager (DefaultManagerLease) and the scheduler
	// (SchedulerLeaseOf the chart's scheduler.name), "name" in Waterline's
	// namespace or "namespace/name"; empty when the component elects no
	// leader.
	ManagerLease, SchedulerLease string
	// StaleAfter is how old a NodeMetric may get: LoadAware refuses a
	// node whose NodeMetric is that old per its nodeMetricExpirationSeconds
	// (nodeload.DefaultNodeMetricExpiration), and so does this check.
	StaleAfter time.Duration
}

// Snapshot is what Collect read of the cluster.
type Snapshot struct {
	// Namespace is Waterline's namespace.
	Namespace string
	// Served are the waterline.dev/v1alpha1 resources the API server
	// serves.
	Served map[string]bool
	// Deployments, DaemonSets and Leases are Waterline's namespace's, by
	// name.
	Deployments map[string]*appsv1.Deployment
	DaemonSets  map[string]*appsv1.DaemonSet
	Leases      map[string]*coordinationv1.Lease
	Nodes       []corev1.Node
	// AgentNodes are the nodes a pod of the agent DaemonSet is bound to,
	// whatever its state: the nodes whose NodeMetric an agent should
	// report. A node the DaemonSet does not cover (agent.nodeSelector,
	// an operating system it does not run on) has none, and its
	// NodeMetric, which the manager makes for every node, is never
	// reported; LoadAware reads that as no NodeMetric.
	AgentNodes map[string]bool
	// AgentWarnings are the Warning events of the agent DaemonSet, the
	// latest last: why its controller could not create a pod (a
	// PodSecurity level, a quota).
	AgentWarnings []corev1.Event
	// NodeMetrics are by name (the node's).
	NodeMetrics map[string]*v1alpha1.NodeMetric
	// Webhooks are the webhooks of Waterline's admission webhook
	// configurations (named waterline-*).
	Webhooks []Webhook
	// ReadyEndpoints counts the ready endpoints of Services, by
	// "namespace/name", for the Services the webhooks call.
	ReadyEndpoints map[string]int
	// Probe is what the webhook probe found (pkg/webhookprobe); nil when
	// the cluster has no probe configuration (the manager serves no
	// webhook, or a chart from before the probe).
	Probe *Probe
}

// Probe is the outcome of a dry-run request that only the manager's probe
// webhook sees.
type Probe struct {
	// Answered names the manager replica that answered; empty when the
	// API server admitted the request without calling the webhook.
	Answered string
	// Err is why the API server refused the request; empty when it
	// admitted it.
	Err string
	// Forbidden is true when the refusal is the check's own
	// authorization, not the webhook's.
	Forbidden bool
	// Took is how long the request took.
	Took time.Duration
}

// Webhook is one webhook of an admission webhook configuration.
type Webhook struct {
	Configuration, Name string
	ClientConfig        admissionregistrationv1.WebhookClientConfig
	FailurePolicy       admissionregistrationv1.FailurePolicyType
}

// Check is one line of the report.
type Check struct {
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	// Details name what the message counts (nodes, webhooks), at most
	// maxDetails of them.
	Details []string `json:"details,omitempty"`
}

// Report is the checks, in order.
type Report struct {
	Checks []Check `json:"checks"`
	// Failed is Failed(), for JSON readers.
	Failed bool `json:"failed"`
}

// maxDetails bounds the names a check lists.
const maxDetails = 10

// Evaluate checks the snapshot.
func Evaluate(s *Snapshot, o Options) Report {
	var r Report
	add := func(c Check) { r.Checks = append(r.Checks, c) }
	add(checkCRDs(s))
	expected := func(c string) bool { return slices.Contains(o.Expect, c) }
	add(checkDeployment(s, o, Manager, o.ManagerLease, expected(Manager)))
	add(checkDeployment(s, o, Scheduler, o.SchedulerLease, expected(Scheduler)))
	add(checkAgents(s, expected(Agent)))
	add(checkNodeMetrics(s, o))
	if _, ok := s.Deployments[Manager]; ok || expected(Manager) {
		add(checkTierResources(s, o))
	}
	add(checkWebhooks(s))
	r.Failed = slices.ContainsFunc(r.Checks, func(c Check) bool { return c.Status == Failure })
	return r
}

func checkCRDs(s *Snapshot) Check {
	c := Check{Name: "CRDs"}
	var missing []string
	for _, res := range Resources {
		if !s.Served[res] {
			missing = append(missing, res)
		}
	}
	if len(missing) > 0 {
		c.Status = Failure
		c.Message = fmt.Sprintf("waterline.dev/v1alpha1 does not serve %s: install the chart's crds/", strings.Join(missing, ", "))
		return c
	}
	c.Message = strings.Join(Resources, ", ") + " served"
	return c
}

// checkDeployment checks that deployment name has an available replica
// and, unless lease is empty, that a leader renews the lease.
func checkDeployment(s *Snapshot, o Options, name, lease string, expected bool) Check {
	c := Check{Name: name}
	d, ok := s.Deployments[name]
	if !ok {
		if expected {
			c.Status = Failure
			c.Message = fmt.Sprintf("no Deployment %s/%s", s.Namespace, name)
		} else {
			c.Message = "not installed here"
		}
		return c
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	c.Message = fmt.Sprintf("%d/%d replicas available", d.Status.AvailableReplicas, want)
	if d.Status.AvailableReplicas == 0 {
		c.Status = Failure
		return c
	}
	if d.Status.AvailableReplicas < want {
		c.Status = Warning
	}
	if lease == "" {
		return c
	}
	l, ok := s.Leases[lease]
	if !ok {
		c.Status = Failure
		c.Message += fmt.Sprintf("; no lease %s: no replica has led (leader election off, or RBAC refuses leases)", leaseRef(s.Namespace, lease))
		return c
	}
	holder, renewed := "", time.Time{}
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if l.Spec.RenewTime != nil {
		renewed = l.Spec.RenewTime.Time
	}
	duration := 15 * time.Second
	if l.Spec.LeaseDurationSeconds != nil {
		duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	age := o.Now.Sub(renewed)
	switch {
	case holder == "":
		c.Status = Failure
		c.Message += fmt.Sprintf("; lease %s has no holder", lease)
	case age > 2*duration:
		c.Status = Failure
		c.Message += fmt.Sprintf("; leader %s last renewed lease %s %s ago (it lasts %s): no replica is leading", holder, lease, age.Round(time.Second), duration)
	default:
		c.Message += fmt.Sprintf("; leader %s", holder)
	}
	return c
}

func checkAgents(s *Snapshot, expected bool) Check {
	c := Check{Name: Agent}
	ds, ok := s.DaemonSets[Agent]
	if !ok {
		if expected {
			c.Status = Failure
			c.Message = fmt.Sprintf("no DaemonSet %s/%s", s.Namespace, Agent)
		} else {
			c.Message = "not installed here"
		}
		return c
	}
	st := ds.Status
	c.Message = fmt.Sprintf("%d/%d agents ready, %d up to date", st.NumberReady, st.DesiredNumberScheduled, st.UpdatedNumberScheduled)
	switch {
	case st.DesiredNumberScheduled == 0:
		c.Status = Warning
		c.Message += ": the DaemonSet selects no node (agent.nodeSelector, taints)"
	case st.NumberReady < st.DesiredNumberScheduled:
		c.Status = Failure
		c.Message += ": nodes without a ready agent are neither protected by node QoS nor reported"
		if st.CurrentNumberScheduled < st.DesiredNumberScheduled && len(s.AgentWarnings) > 0 {
			// Pods the controller could not create: its events say why
			// (kubectl describe daemonset shows the same).
			e := s.AgentWarnings[len(s.AgentWarnings)-1]
			c.Message += fmt.Sprintf("; %d not created, last event %s: %s", st.DesiredNumberScheduled-st.CurrentNumberScheduled, e.Reason, e.Message)
		}
	case st.UpdatedNumberScheduled < st.DesiredNumberScheduled:
		c.Status = Warning
		c.Message += ": a rollout is in progress"
	}
	return c
}

// checkNodeMetrics: every node running an agent reports, and no node's
// NodeMetric is stale (LoadAware refuses such a node, agent or not). A
// node without an agent whose NodeMetric was never reported is left out:
// LoadAware reads it as no NodeMetric, and node QoS does not run there.
func checkNodeMetrics(s *Snapshot, o Options) Check {
	c := Check{Name: "NodeMetrics"}
	var stale, silent, missing, skewed []string
	fresh, counted, agentless := 0, 0, 0
	for i := range s.Nodes {
		n := &s.Nodes[i]
		nm, ok := s.NodeMetrics[n.Name]
		reported := ok && nm.Status.UpdateTime != nil
		if !s.AgentNodes[n.Name] && !reported {
			agentless++
			continue
		}
		counted++
		switch {
		case !ok:
			missing = append(missing, n.Name)
			continue
		case !reported:
			silent = append(silent, n.Name+": never reported")
			continue
		}
		written, known := nodeload.ReportStored(nm)
		if expired(nm, o) {
			last := nm.Status.UpdateTime.Time
			if known {
				last = written
			}
			stale = append(stale, fmt.Sprintf("%s: last report %s ago", n.Name, o.Now.Sub(last).Round(time.Second)))
		} else {
			fresh++
		}
		if skew := nm.Status.UpdateTime.Sub(written); known && (skew > nodeload.MaxClockSkew || skew < -nodeload.MaxClockSkew) {
			way := "ahead of"
			if skew < 0 {
				skew, way = -skew, "behind"
			}
			skewed = append(skewed, fmt.Sprintf("%s: clock %s %s the API server's", n.Name, skew.Round(time.Second), way))
		}
	}
	c.Message = fmt.Sprintf("%d of %d nodes report fresh metrics", fresh, counted)
	if agentless > 0 {
		c.Message += fmt.Sprintf(" (%d without an agent, not colocated)", agentless)
	}
	if len(stale) > 0 {
		c.Status = Failure
		c.Message += fmt.Sprintf("; %d older than %s, which LoadAware refuses (metric_expired)", len(stale), o.StaleAfter)
	}
	if len(silent) > 0 {
		c.Status = Failure
		c.Message += fmt.Sprintf("; %d never reported by the node's agent", len(silent))
	}
	c.Details = append(stale, silent...)
	if len(missing) > 0 {
		c.Status = max(c.Status, Warning)
		c.Message += fmt.Sprintf("; %d without a NodeMetric (the manager has not made it yet)", len(missing))
		c.Details = append(c.Details, missing...)
	}
	if len(skewed) > 0 {
		// LoadAware ages reports by the API server's clock
		// (nodeload.Config.Observe); other readers of status.updateTime,
		// and the agent's own timestamps, go by the node's.
		c.Status = max(c.Status, Warning)
		c.Message += fmt.Sprintf("; %d with a clock more than %s off the API server's (LoadAware allows for it; readers of status.updateTime do not)", len(skewed), nodeload.MaxClockSkew)
		c.Details = append(c.Details, skewed...)
	}
	c.Details = c.Details[:min(len(c.Details), maxDetails)]
	return c
}

// expired is LoadAware's verdict on a NodeMetric, with o.StaleAfter as
// its nodeMetricExpirationSeconds, as it judges one it lists at start:
// never reported, or reported that long before o.Now, timed by when the
// API server stored the report (nodeload.ReportStored) or, without that
// time, by its updateTime. A running LoadAware times each later report
// from when it saw it arrive, about the same time.
func expired(nm *v1alpha1.NodeMetric, o Options) bool {
	c := nodeload.Config{MetricExpiration: o.StaleAfter}
	m := c.NewMetric(nm)
	c.Observe(nil, m, o.Now)
	return c.Expired(m, o.Now)
}

// checkTierResources: a node whose agent reports should carry the Mid and
// Batch tier resources the manager publishes.
func checkTierResources(s *Snapshot, o Options) Check {
	c := Check{Name: "tier resources"}
	var without []string
	reporting := 0
	for i := range s.Nodes {
		n := &s.Nodes[i]
		nm, ok := s.NodeMetrics[n.Name]
		if !ok || expired(nm, o) {
			continue
		}
		reporting++
		if _, ok := n.Status.Allocatable[extension.ResourceBatchCPU]; !ok {
			without = append(without, n.Name)
		}
	}
	c.Message = fmt.Sprintf("%d of %d reporting nodes carry %s", reporting-len(without), reporting, extension.ResourceBatchCPU)
	if len(without) > 0 {
		c.Status = Warning
		c.Message += ": the manager has not published their Mid and Batch resources (yet)"
		c.Details = without[:min(len(without), maxDetails)]
	}
	return c
}

func checkWebhooks(s *Snapshot) Check {
	c := Check{Name: "webhooks"}
	var problems []string
	status := OK
	// The probe's own configuration intercepts nothing but the probe,
	// which tests its path.
	webhooks := slices.DeleteFunc(slices.Clone(s.Webhooks), func(w Webhook) bool { return w.Configuration == webhookprobe.Configuration })
	for _, w := range webhooks {
		severity := Failure
		consequence := "requests it intercepts are refused (failurePolicy Fail)"
		if w.FailurePolicy == admissionregistrationv1.Ignore {
			severity, consequence = Warning, "requests it intercepts go through unchanged (failurePolicy Ignore)"
		}
		name := w.Configuration + "/" + w.Name
		svc := w.ClientConfig.Service
		switch {
		case svc != nil && len(w.ClientConfig.CABundle) == 0:
			problems = append(problems, fmt.Sprintf("%s: no CA bundle yet; %s", name, consequence))
		case svc != nil && s.ReadyEndpoints[svc.Namespace+"/"+svc.Name] == 0:
			problems = append(problems, fmt.Sprintf("%s: Service %s/%s has no ready endpoint; %s", name, svc.Namespace, svc.Name, consequence))
		default:
			continue
		}
		status = max(status, severity)
	}
	c.Status = status
	c.Message = fmt.Sprintf("%d webhook%s", len(webhooks), plural(len(webhooks)))
	if len(problems) > 0 {
		c.Message += fmt.Sprintf(", %d not reachable", len(problems))
		c.Details = problems[:min(len(problems), maxDetails)]
	} else if len(webhooks) > 0 {
		c.Message += ", each with a CA bundle and a ready endpoint (or a URL)"
	}
	probeWebhooks(&c, s)
	return c
}

// probeWebhooks adds what the webhook probe found to c. A probe the API
// server could not deliver means every Waterline webhook is unreachable:
// a failure when one of them fails closed, a warning when all fail open.
func probeWebhooks(c *Check, s *Snapshot) {
	p := s.Probe
	if p == nil {
		return
	}
	severity, consequence := Warning, "requests the webhooks intercept go through unchecked and unchanged (failurePolicy Ignore)"
	if !slices.ContainsFunc(s.Webhooks, func(w Webhook) bool { return w.Configuration != webhookprobe.Configuration }) {
		consequence = "no other Waterline webhook is installed"
	}
	for _, w := range s.Webhooks {
		if w.Configuration != webhookprobe.Configuration && w.FailurePolicy != admissionregistrationv1.Ignore {
			severity, consequence = Failure, fmt.Sprintf("requests %s intercepts are refused (failurePolicy Fail)", w.Configuration+"/"+w.Name)
			break
		}
	}
	switch {
	case p.Forbidden:
		c.Status = max(c.Status, Warning)
		c.Message += fmt.Sprintf("; the webhook server was not probed: these credentials may not create ConfigMaps in %s (%s)", s.Namespace, p.Err)
	case p.Err != "" && strings.Contains(p.Err, webhookprobe.Webhook):
		c.Status = max(c.Status, severity)
		c.Message += "; the API server cannot reach the manager's webhook server"
		c.Details = append([]string{fmt.Sprintf("probe: %s; %s", p.Err, consequence)}, c.Details...)[:min(len(c.Details)+1, maxDetails)]
	case p.Err != "":
		// Refused before the API server called the probe webhook: a
		// policy of the cluster's (another webhook, a quota).
		c.Status = max(c.Status, Warning)
		c.Message += fmt.Sprintf("; the webhook server was not probed: the probe's dry-run ConfigMap was refused before it reached it (%s)", p.Err)
	case p.Answered == "":
		c.Status = max(c.Status, Warning)
		c.Message += fmt.Sprintf("; the probe went through without reaching the manager (%s selects no dry-run ConfigMap labelled %s in %s)", webhookprobe.Configuration, webhookprobe.Label, s.Namespace)
	default:
		c.Message += fmt.Sprintf("; the API server reached the manager's webhook server (%s answered in %s)", p.Answered, p.Took.Round(time.Millisecond))
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
