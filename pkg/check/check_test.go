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
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/webhookprobe"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// healthy is a working installation: two nodes reporting.
func healthy() *Snapshot {
	s := &Snapshot{
		Namespace:      "waterline-system",
		Served:         map[string]bool{"nodemetrics": true, "nodeqoses": true, "colocationpolicies": true},
		Deployments:    map[string]*appsv1.Deployment{},
		DaemonSets:     map[string]*appsv1.DaemonSet{},
		Leases:         map[string]*coordinationv1.Lease{},
		NodeMetrics:    map[string]*v1alpha1.NodeMetric{},
		ReadyEndpoints: map[string]int{"waterline-system/waterline-webhook": 2},
	}
	for _, name := range []string{Manager, Scheduler} {
		s.Deployments[name] = &appsv1.Deployment{
			Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.DeploymentStatus{AvailableReplicas: 2},
		}
	}
	for _, name := range []string{DefaultManagerLease, Scheduler} {
		s.Leases[name] = &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(name + "-0"), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: &metav1.MicroTime{Time: now.Add(-3 * time.Second)},
		}}
	}
	s.DaemonSets[Agent] = &appsv1.DaemonSet{Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 2, CurrentNumberScheduled: 2, NumberReady: 2, UpdatedNumberScheduled: 2}}
	s.AgentNodes = map[string]bool{"node-a": true, "node-b": true}
	for _, n := range []string{"node-a", "node-b"} {
		s.Nodes = append(s.Nodes, corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{extension.ResourceBatchCPU: resource.MustParse("1000")}},
		})
		s.NodeMetrics[n] = &v1alpha1.NodeMetric{Status: v1alpha1.NodeMetricStatus{UpdateTime: &metav1.Time{Time: now.Add(-30 * time.Second)}}}
	}
	s.Webhooks = []Webhook{{
		Configuration: "waterline-colocation-profiles", Name: "profiles.waterline.dev", FailurePolicy: admissionregistrationv1.Fail,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			CABundle: []byte("ca"),
			Service:  &admissionregistrationv1.ServiceReference{Namespace: "waterline-system", Name: "waterline-webhook"},
		},
	}, {
		Configuration: webhookprobe.Configuration, Name: "probe.waterline.dev", FailurePolicy: admissionregistrationv1.Fail,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{
			CABundle: []byte("ca"),
			Service:  &admissionregistrationv1.ServiceReference{Namespace: "waterline-system", Name: "waterline-webhook"},
		},
	}}
	s.Probe = &Probe{Answered: "waterline-manager-0", Took: 12 * time.Millisecond}
	return s
}

// unreachable is the API server's refusal of the probe when it cannot call
// the webhook.
const unreachable = `Internal error occurred: failed calling webhook "probe.waterline.dev": failed to call webhook: Post "https://waterline-webhook.waterline-system.svc:443/validate-waterline-webhook-probe?timeout=10s": context deadline exceeded`

// reportFields are the fields an agent's report sets, as managedFields
// record them.
var reportFields = metav1.NewFieldsV1(`{"f:status":{".":{},"f:nodeMetric":{},"f:updateTime":{}}}`)

var opts = Options{Now: now, Expect: []string{Manager, Scheduler, Agent}, ManagerLease: DefaultManagerLease, SchedulerLease: Scheduler, StaleAfter: 3 * time.Minute}

func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Snapshot)
		opts   func(*Options)
		// want is the status of the check named, and a part of its
		// message or details.
		check  string
		want   Status
		saying string
	}{
		{name: "healthy", check: "NodeMetrics", want: OK, saying: "2 of 2 nodes report fresh metrics"},
		{name: "CRD missing", mutate: func(s *Snapshot) { delete(s.Served, "nodeqoses") }, check: "CRDs", want: Failure, saying: "does not serve nodeqoses"},
		{name: "manager not available", mutate: func(s *Snapshot) { s.Deployments[Manager].Status.AvailableReplicas = 0 }, check: Manager, want: Failure, saying: "0/2 replicas available"},
		{name: "manager one replica short", mutate: func(s *Snapshot) { s.Deployments[Manager].Status.AvailableReplicas = 1 }, check: Manager, want: Warning, saying: "1/2"},
		{name: "scheduler lease not renewed", mutate: func(s *Snapshot) {
			s.Leases[Scheduler].Spec.RenewTime = &metav1.MicroTime{Time: now.Add(-5 * time.Minute)}
		}, check: Scheduler, want: Failure, saying: "last renewed lease waterline-scheduler 5m0s ago"},
		{name: "scheduler never led", mutate: func(s *Snapshot) { delete(s.Leases, Scheduler) }, check: Scheduler, want: Failure, saying: "no replica has led"},
		{name: "scheduler replacing kube-scheduler leads through its Lease", mutate: func(s *Snapshot) {
			s.Leases["kube-system/kube-scheduler"] = s.Leases[Scheduler]
			delete(s.Leases, Scheduler)
		}, opts: func(o *Options) { o.SchedulerLease = SchedulerLeaseOf("default-scheduler") }, check: Scheduler, want: OK, saying: "leader waterline-scheduler-0"},
		{name: "scheduler replacing kube-scheduler, no one led", mutate: func(s *Snapshot) { delete(s.Leases, Scheduler) },
			opts: func(o *Options) { o.SchedulerLease = SchedulerLeaseOf("default-scheduler") }, check: Scheduler, want: Failure, saying: "no lease kube-system/kube-scheduler"},
		{name: "manager without leader election", mutate: func(s *Snapshot) { delete(s.Leases, DefaultManagerLease) },
			opts: func(o *Options) { o.ManagerLease = "" }, check: Manager, want: OK, saying: "2/2 replicas available"},
		{name: "scheduler not installed, not expected", mutate: func(s *Snapshot) { delete(s.Deployments, Scheduler) },
			opts: func(o *Options) { o.Expect = []string{Manager, Agent} }, check: Scheduler, want: OK, saying: "not installed here"},
		{name: "scheduler not installed, expected", mutate: func(s *Snapshot) { delete(s.Deployments, Scheduler) }, check: Scheduler, want: Failure, saying: "no Deployment waterline-system/waterline-scheduler"},
		{name: "agent not ready", mutate: func(s *Snapshot) { s.DaemonSets[Agent].Status.NumberReady = 1 }, check: Agent, want: Failure, saying: "1/2 agents ready"},
		{name: "agent pods refused", mutate: func(s *Snapshot) {
			st := &s.DaemonSets[Agent].Status
			st.CurrentNumberScheduled, st.NumberReady, st.UpdatedNumberScheduled = 0, 0, 0
			s.AgentNodes = map[string]bool{}
			s.AgentWarnings = []corev1.Event{
				{Reason: "FailedCreate", Message: `Error creating: pods "waterline-agent-1" is forbidden: exceeded quota`},
				{Reason: "FailedCreate", Message: `Error creating: pods "waterline-agent-2" is forbidden: violates PodSecurity "baseline:latest": privileged`},
			}
		}, check: Agent, want: Failure, saying: `0/2 agents ready, 0 up to date: nodes without a ready agent are neither protected by node QoS nor reported; 2 not created, last event FailedCreate: Error creating: pods "waterline-agent-2" is forbidden: violates PodSecurity`},
		{name: "agent rolling", mutate: func(s *Snapshot) { s.DaemonSets[Agent].Status.UpdatedNumberScheduled = 1 }, check: Agent, want: Warning, saying: "rollout"},
		{name: "stale NodeMetric", mutate: func(s *Snapshot) {
			s.NodeMetrics["node-b"].Status.UpdateTime = &metav1.Time{Time: now.Add(-12 * time.Minute)}
		}, check: "NodeMetrics", want: Failure, saying: "node-b: last report 12m0s ago"},
		{name: "NodeMetric exactly at the expiry, as LoadAware counts it", mutate: func(s *Snapshot) {
			s.NodeMetrics["node-b"].Status.UpdateTime = &metav1.Time{Time: now.Add(-3 * time.Minute)}
		}, check: "NodeMetrics", want: Failure, saying: "node-b: last report 3m0s ago"},
		{name: "never reported", mutate: func(s *Snapshot) { s.NodeMetrics["node-b"].Status.UpdateTime = nil }, check: "NodeMetrics", want: Failure, saying: "node-b: never reported"},
		{name: "node without an agent, never reported", mutate: func(s *Snapshot) {
			delete(s.AgentNodes, "node-b")
			s.NodeMetrics["node-b"].Status.UpdateTime = nil
		}, check: "NodeMetrics", want: OK, saying: "1 of 1 nodes report fresh metrics (1 without an agent, not colocated)"},
		{name: "node without an agent, no NodeMetric", mutate: func(s *Snapshot) {
			delete(s.AgentNodes, "node-b")
			delete(s.NodeMetrics, "node-b")
		}, check: "NodeMetrics", want: OK, saying: "(1 without an agent, not colocated)"},
		{name: "node whose agent left a stale NodeMetric", mutate: func(s *Snapshot) {
			delete(s.AgentNodes, "node-b")
			s.NodeMetrics["node-b"].Status.UpdateTime = &metav1.Time{Time: now.Add(-12 * time.Minute)}
		}, check: "NodeMetrics", want: Failure, saying: "node-b: last report 12m0s ago"},
		{name: "node clock behind, reporting", mutate: func(s *Snapshot) {
			nm := s.NodeMetrics["node-b"]
			nm.Status.UpdateTime = &metav1.Time{Time: now.Add(-4 * time.Minute)}
			nm.ManagedFields = []metav1.ManagedFieldsEntry{
				{Manager: "waterline-manager", Operation: metav1.ManagedFieldsOperationUpdate, Time: &metav1.Time{Time: now.Add(-time.Hour)}},
				{Manager: "waterline-agent", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &metav1.Time{Time: now.Add(-20 * time.Second)}, FieldsV1: reportFields},
				// Another writer of the status, later: not a report.
				{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &metav1.Time{Time: now}, FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{}}}`)},
			}
		}, check: "NodeMetrics", want: Warning, saying: "2 of 2 nodes report fresh metrics; 1 with a clock more than 30s off the API server's (LoadAware allows for it; readers of status.updateTime do not) node-b: clock 3m40s behind the API server's"},
		{name: "node clock ahead, stopped reporting", mutate: func(s *Snapshot) {
			nm := s.NodeMetrics["node-b"]
			nm.Status.UpdateTime = &metav1.Time{Time: now.Add(time.Minute)}
			nm.ManagedFields = []metav1.ManagedFieldsEntry{{Subresource: "status", Time: &metav1.Time{Time: now.Add(-4 * time.Minute)}, FieldsV1: reportFields}}
		}, check: "NodeMetrics", want: Failure, saying: "node-b: last report 4m0s ago node-b: clock 5m0s ahead of the API server's"},
		{name: "node clock within the tolerance", mutate: func(s *Snapshot) {
			nm := s.NodeMetrics["node-b"]
			nm.ManagedFields = []metav1.ManagedFieldsEntry{{Subresource: "status", Time: &metav1.Time{Time: now.Add(-55 * time.Second)}, FieldsV1: reportFields}}
		}, check: "NodeMetrics", want: OK, saying: "2 of 2 nodes report fresh metrics"},
		{name: "no NodeMetric", mutate: func(s *Snapshot) { delete(s.NodeMetrics, "node-a") }, check: "NodeMetrics", want: Warning, saying: "node-a"},
		{name: "tier resources not published", mutate: func(s *Snapshot) { s.Nodes[1].Status.Allocatable = nil }, check: "tier resources", want: Warning, saying: "node-b"},
		{name: "webhook without endpoints", mutate: func(s *Snapshot) { s.ReadyEndpoints["waterline-system/waterline-webhook"] = 0 },
			check: "webhooks", want: Failure, saying: "has no ready endpoint; requests it intercepts are refused"},
		{name: "ignored webhook without endpoints", mutate: func(s *Snapshot) {
			s.ReadyEndpoints["waterline-system/waterline-webhook"] = 0
			s.Webhooks[0].FailurePolicy = admissionregistrationv1.Ignore
		}, check: "webhooks", want: Warning, saying: "go through unchanged"},
		{name: "webhook without CA bundle", mutate: func(s *Snapshot) { s.Webhooks[0].ClientConfig.CABundle = nil }, check: "webhooks", want: Failure, saying: "no CA bundle"},
		{name: "webhook by URL", mutate: func(s *Snapshot) {
			s.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9443/mutate")}
		}, check: "webhooks", want: OK, saying: "1 webhook,"},
		{name: "webhook server reached", check: "webhooks", want: OK,
			saying: "each with a CA bundle and a ready endpoint (or a URL); the API server reached the manager's webhook server (waterline-manager-0 answered in 12ms)"},
		{name: "webhook server unreachable", mutate: func(s *Snapshot) { s.Probe = &Probe{Err: unreachable} }, check: "webhooks", want: Failure,
			saying: "probe: " + unreachable + "; requests waterline-colocation-profiles/profiles.waterline.dev intercepts are refused (failurePolicy Fail)"},
		{name: "webhook server unreachable, every webhook failing open", mutate: func(s *Snapshot) {
			s.Probe = &Probe{Err: unreachable}
			s.Webhooks[0].FailurePolicy = admissionregistrationv1.Ignore
		}, check: "webhooks", want: Warning, saying: "the API server cannot reach the manager's webhook server"},
		{name: "webhook probe not allowed to the check", mutate: func(s *Snapshot) {
			s.Probe = &Probe{Forbidden: true, Err: `configmaps is forbidden: User "x" cannot create resource "configmaps"`}
		}, check: "webhooks", want: Warning, saying: "not probed: these credentials may not create ConfigMaps in waterline-system"},
		{name: "webhook probe refused by another policy", mutate: func(s *Snapshot) {
			s.Probe = &Probe{Err: `admission webhook "validation.gatekeeper.sh" denied the request: [required-labels] you must provide labels: {"team"}`}
		}, check: "webhooks", want: Warning, saying: "the probe's dry-run ConfigMap was refused before it reached it (admission webhook \"validation.gatekeeper.sh\" denied"},
		{name: "webhook probe not selected", mutate: func(s *Snapshot) { s.Probe = &Probe{} }, check: "webhooks", want: Warning,
			saying: "the probe went through without reaching the manager"},
		{name: "no webhook probe (an older chart)", mutate: func(s *Snapshot) {
			s.Probe, s.Webhooks = nil, s.Webhooks[:1]
		}, check: "webhooks", want: OK, saying: "1 webhook, each with a CA bundle and a ready endpoint (or a URL)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := healthy()
			if tc.mutate != nil {
				tc.mutate(s)
			}
			o := opts
			if tc.opts != nil {
				tc.opts(&o)
			}
			r := Evaluate(s, o)
			var buf bytes.Buffer
			if err := r.WriteTable(&buf); err != nil {
				t.Fatal(err)
			}
			for _, c := range r.Checks {
				if c.Name != tc.check {
					// Only the broken part may be off.
					if c.Status != OK {
						t.Errorf("check %s is %s (%s), want ok: only %s is broken\n%s", c.Name, c.Status, c.Message, tc.check, buf.String())
					}
					continue
				}
				text := c.Message + " " + strings.Join(c.Details, " ")
				if c.Status != tc.want || !strings.Contains(text, tc.saying) {
					t.Errorf("check %s: %s %q, want %s saying %q\n%s", c.Name, c.Status, text, tc.want, tc.saying, buf.String())
				}
			}
			if r.Failed != (tc.want == Failure) {
				t.Errorf("Failed = %v, want %v", r.Failed, tc.want == Failure)
			}
		})
	}
}

// TestWriteJSON: statuses are words, and failed says whether any check
// failed.
func TestWriteJSON(t *testing.T) {
	s := healthy()
	s.NodeMetrics["node-b"].Status.UpdateTime = nil
	r := Evaluate(s, opts)
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Checks []struct {
			Name, Status string
			Details      []string
		}
		Failed bool
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if !got.Failed || len(got.Checks) != len(r.Checks) {
		t.Fatalf("JSON report %+v, want %d checks and failed\n%s", got, len(r.Checks), buf.String())
	}
	for _, c := range got.Checks {
		want := "ok"
		if c.Name == "NodeMetrics" {
			want = "FAIL"
		}
		if c.Status != want {
			t.Errorf("check %s: status %q, want %q\n%s", c.Name, c.Status, want, buf.String())
		}
	}
}

// A report written as JSON reads back the same.
func TestReportJSONRoundTrip(t *testing.T) {
	want := Evaluate(healthy(), opts)
	want.Checks[0].Status, want.Checks[1].Status = Warning, Failure
	data, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("reading back %s: %v", data, err)
	}
	if got.Checks[0].Status != Warning || got.Checks[1].Status != Failure || got.Checks[2].Status != OK || len(got.Checks) != len(want.Checks) {
		t.Errorf("read back %+v, want %+v", got, want)
	}
	if err := json.Unmarshal([]byte(`{"checks":[{"status":"fine"}]}`), &got); err == nil || !strings.Contains(err.Error(), `"fine"`) {
		t.Errorf("an unknown status read without an error naming it: %v", err)
	}
}
