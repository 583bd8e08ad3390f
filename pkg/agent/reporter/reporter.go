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

package reporter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	wlv1alpha1 "github.com/waterline-dev/waterline/pkg/client/clientset/versioned/typed/apis/v1alpha1"
)

// Name is the module's name in logs and metrics.
const Name = "reporter"

// pollInterval is how often Run looks whether a report is due. Looking is
// two informer reads, so it is cheap; it lets a changed report interval
// apply at the next second rather than after the old interval ran out,
// and bounds how late a report can be.
const pollInterval = time.Second

// ErrNoUsage is returned by Report when the metric cache has no node usage
// in the aggregate window yet; nothing was written.
var ErrNoUsage = errors.New("the metric cache has no node usage in the aggregate window yet")

// NodeState is the agent's view of its node; *agent.States is one.
type NodeState interface {
	// Node is the agent's Node, nil before the informer has it.
	Node() *corev1.Node
	// Pods are the node's pods that have not finished.
	Pods() []*corev1.Pod
	// NodeMetric is the informer's copy of the node's NodeMetric, nil
	// before it exists. Read-only.
	NodeMetric() *v1alpha1.NodeMetric
}

// Deps is what the reporter works with.
type Deps struct {
	// NodeName names the node, and so its NodeMetric.
	NodeName string
	// Client writes NodeMetrics.
	Client wlv1alpha1.NodeMetricInterface
	// State reads the node, its pods and its NodeMetric from informers.
	State NodeState
	// Cache holds the usage history.
	Cache UsageSource
	// Clock is the agent's clock.
	Clock clock.WithTicker
	// Requests delivers early-report requests (Agent.ReportRequests); nil
	// means none.
	Requests <-chan struct{}
	// Contributors add to every status written, in order, after the usage
	// fields are set (see ContributorsOf).
	Contributors []agent.StatusContributor
	// Prometheus, when set, registers the reporter's metrics.
	Prometheus prometheus.Registerer
}

// ContributorsOf returns the modules that contribute to the status, in
// the order they were added.
func ContributorsOf(modules []agent.CycleModule) []agent.StatusContributor {
	var out []agent.StatusContributor
	for _, m := range modules {
		if c, ok := m.(agent.StatusContributor); ok {
			out = append(out, c)
		}
	}
	return out
}

// Reporter writes the node's NodeMetric status. It is an agent module: its
// work is in Run, on its own goroutine.
type Reporter struct {
	cfg     Config
	deps    Deps
	metrics *metrics
}

var (
	_ agent.CycleModule = &Reporter{}
	_ agent.Runner      = &Reporter{}
)

// New returns a reporter; cfg is defaulted and validated.
func New(cfg Config, deps Deps) (*Reporter, error) {
	cfg.SetDefaults()
	errs := cfg.Validate(field.NewPath("reporter"))
	if deps.NodeName == "" {
		errs = append(errs, field.Required(field.NewPath("nodeName"), "the reporter writes the NodeMetric named after its node"))
	}
	for name, missing := range map[string]bool{"client": deps.Client == nil, "state": deps.State == nil, "cache": deps.Cache == nil, "clock": deps.Clock == nil} {
		if missing {
			errs = append(errs, field.Required(field.NewPath(name), "must be set"))
		}
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	m, err := newMetrics(deps.Prometheus)
	if err != nil {
		return nil, err
	}
	return &Reporter{cfg: cfg, deps: deps, metrics: m}, nil
}

// Name implements agent.CycleModule.
func (r *Reporter) Name() string { return Name }

// Cycle does nothing: the reporter writes from Run, so a slow API server
// never holds up the collect loop.
func (r *Reporter) Cycle(context.Context, *agent.Snapshot) error { return nil }

// Run reports until ctx ends: as soon as the cache has node usage, then
// every report interval of the NodeMetric's collect policy (re-read each
// time, so a policy change applies within a second), early when a module
// asks (at most once per MinReportSpacing), and after a failed write again
// after RetryInterval, doubling up to the report interval.
func (r *Reporter) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("module", Name, "node", r.deps.NodeName)
	ctx = klog.NewContext(ctx, logger)
	ticker := r.deps.Clock.NewTicker(pollInterval)
	defer ticker.Stop()
	var s schedule
	for {
		r.step(ctx, &s, r.deps.Clock.Now())
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		case <-r.deps.Requests:
			s.early = true
		}
	}
}

// schedule is Run's memory of what it did.
type schedule struct {
	// lastAttempt is when a write was last tried, lastSuccess when one
	// last succeeded; zero before the first.
	lastAttempt, lastSuccess time.Time
	// failures counts failed writes in a row.
	failures int
	// early is set by a request and cleared by the next write.
	early bool
	// waitingForData is set while the cache has no node usage, so that
	// is logged once.
	waitingForData bool
}

// step reports when a report is due at now and records the outcome.
func (r *Reporter) step(ctx context.Context, s *schedule, now time.Time) {
	logger := klog.FromContext(ctx)
	interval := r.reportInterval()
	var due bool
	switch {
	case s.failures > 0:
		due = !now.Before(s.lastAttempt.Add(r.backoff(s.failures, interval)))
	case s.lastSuccess.IsZero() || !now.Before(s.lastSuccess.Add(interval)):
		due = true
	case s.early:
		due = !now.Before(s.lastAttempt.Add(r.cfg.MinReportSpacing))
	}
	if !due {
		return
	}
	err := r.Report(ctx)
	switch {
	case errors.Is(err, ErrNoUsage):
		// Not an attempt: nothing was sent. Poll until the cache has
		// data; say so once.
		if !s.waitingForData {
			logger.Info("Not reporting until the metric cache has node usage")
			s.waitingForData = true
		}
	case err != nil:
		s.lastAttempt = now
		s.failures++
		s.early = false
		logger.Error(err, "Reporting the NodeMetric status failed", "failures", s.failures, "retryIn", r.backoff(s.failures, interval))
	default:
		s.lastAttempt, s.lastSuccess = now, now
		s.failures = 0
		s.early = false
		s.waitingForData = false
	}
}

// backoff is the wait after the n-th failure in a row.
func (r *Reporter) backoff(n int, interval time.Duration) time.Duration {
	d := r.cfg.RetryInterval
	for i := 1; i < n && d < interval; i++ {
		d *= 2
	}
	return min(d, max(interval, r.cfg.RetryInterval))
}

func (r *Reporter) collectPolicy() *v1alpha1.NodeMetricCollectPolicy {
	nm := r.deps.State.NodeMetric()
	if nm == nil {
		return v1alpha1.CollectPolicyWithDefaults(nil)
	}
	return v1alpha1.CollectPolicyWithDefaults(nm.Spec.CollectPolicy)
}

func (r *Reporter) reportInterval() time.Duration {
	return time.Duration(*r.collectPolicy().ReportIntervalSeconds) * time.Second
}

// Report writes the status once: the usage fields from the cache, then
// every contributor's part, onto the NodeMetric as it is on the API server
// (creating it if missing), retrying on conflict with a fresh copy. It
// returns ErrNoUsage, writing nothing, while the cache has no node usage.
func (r *Reporter) Report(ctx context.Context) error {
	start := r.deps.Clock.Now()
	err := r.report(ctx, start)
	r.metrics.observe(err, r.deps.Clock.Since(start), start)
	return err
}

func (r *Reporter) report(ctx context.Context, now time.Time) error {
	logger := klog.FromContext(ctx)
	usage, ok := BuildUsage(r.deps.Cache, r.collectPolicy(), r.deps.State.Pods())
	if !ok {
		return ErrNoUsage
	}
	// The informer's copy saves a GET in the usual case; after a conflict
	// (or when the informer is behind) the live object is read.
	current := r.deps.State.NodeMetric()
	fresh := false
	attempts := 0
	err := retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsNotFound(err)
	}, func() error {
		attempts++
		if fresh || current == nil {
			got, err := r.getOrCreate(ctx)
			if err != nil {
				return err
			}
			current = got
		}
		nm := current.DeepCopy()
		nm.Status.UpdateTime = &metav1.Time{Time: now}
		nm.Status.NodeMetric = usage.NodeMetric.DeepCopy()
		nm.Status.PodsMetric = append([]v1alpha1.PodMetricInfo(nil), usage.PodsMetric...)
		for _, c := range r.deps.Contributors {
			c.ContributeStatus(&nm.Status)
		}
		_, err := r.deps.Client.UpdateStatus(ctx, nm, metav1.UpdateOptions{})
		if err != nil {
			fresh = true
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("updating the status of NodeMetric %s: %w", r.deps.NodeName, err)
	}
	logger.V(4).Info("Reported the NodeMetric status", "pods", len(usage.PodsMetric), "attempts", attempts,
		"cpu", usage.NodeMetric.NodeUsage.Cpu().String(), "memory", usage.NodeMetric.NodeUsage.Memory().String())
	return nil
}

// getOrCreate reads the NodeMetric from the API server, creating it when
// the manager has not: owned by the Node (when the informer has it) like
// the manager's, so it goes with the node; the manager adopts one created
// without owner.
func (r *Reporter) getOrCreate(ctx context.Context) (*v1alpha1.NodeMetric, error) {
	nm, err := r.deps.Client.Get(ctx, r.deps.NodeName, metav1.GetOptions{})
	if err == nil {
		return nm, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("getting NodeMetric %s: %w", r.deps.NodeName, err)
	}
	obj := &v1alpha1.NodeMetric{ObjectMeta: metav1.ObjectMeta{Name: r.deps.NodeName}}
	if node := r.deps.State.Node(); node != nil {
		obj.OwnerReferences = []metav1.OwnerReference{{
			APIVersion:         "v1",
			Kind:               "Node",
			Name:               node.Name,
			UID:                node.UID,
			BlockOwnerDeletion: ptr.To(false),
		}}
	}
	created, err := r.deps.Client.Create(ctx, obj, metav1.CreateOptions{})
	switch {
	case err == nil:
		klog.FromContext(ctx).V(2).Info("Created the NodeMetric, the manager had not", "owned", len(obj.OwnerReferences) > 0)
		return created, nil
	case apierrors.IsAlreadyExists(err):
		// The manager created it in between.
		nm, err := r.deps.Client.Get(ctx, r.deps.NodeName, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("getting NodeMetric %s: %w", r.deps.NodeName, err)
		}
		return nm, nil
	default:
		return nil, fmt.Errorf("creating NodeMetric %s: %w", r.deps.NodeName, err)
	}
}
