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

package resctltest

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/collector"
	"github.com/waterline-dev/waterline/pkg/agent/metriccache"
)

// Driver runs agent cycles the way agent.Agent.Cycle does -- collect, store
// in the metric cache, then every module in order -- with the node, pods
// and NodeQOS objects the test sets instead of informers, so a test can
// drive modules against real cgroups without an API server.
type Driver struct {
	Collector *collector.Collector
	Cache     *metriccache.Cache
	// Proc, when set, is updated right before each collect.
	Proc *FakeProc

	Node       *corev1.Node
	Pods       []*corev1.Pod
	NodeQOSes  []*v1alpha1.NodeQOS
	NodeMetric *v1alpha1.NodeMetric
	Modules    []agent.CycleModule
}

// NewDriver returns a driver collecting under layout, reading /proc from
// procRoot, on the real clock.
func NewDriver(t testing.TB, layout *cgroups.Layout, procRoot string) *Driver {
	t.Helper()
	col, err := collector.New(collector.Config{ProcRoot: procRoot, ContainerInterval: ptr.To(time.Duration(0))}, layout, clock.RealClock{})
	if err != nil {
		t.Fatalf("Collector: %v", err)
	}
	t.Cleanup(func() { _ = col.Close() })
	cache, err := metriccache.New(t.Context(), metriccache.Config{}, clock.RealClock{})
	if err != nil {
		t.Fatalf("Metric cache: %v", err)
	}
	return &Driver{Collector: col, Cache: cache}
}

// Cycle runs one cycle and returns its snapshot and the modules' errors.
func (d *Driver) Cycle(ctx context.Context) (*agent.Snapshot, error) {
	if d.Proc != nil {
		if err := d.Proc.write(); err != nil {
			return nil, err
		}
	}
	refs := make([]collector.PodRef, len(d.Pods))
	for i, p := range d.Pods {
		refs[i] = collector.PodRefOf(p)
	}
	sample, err := d.Collector.Collect(ctx, refs)
	if err != nil {
		return nil, err
	}
	if err := d.Cache.AppendSample(sample); err != nil {
		return nil, err
	}
	snap := &agent.Snapshot{
		Time: sample.Time, Sample: sample, Cache: d.Cache,
		Node: d.Node, Pods: d.Pods, NodeMetric: d.NodeMetric, NodeQOSes: d.NodeQOSes,
	}
	var errs []error
	for _, m := range d.Modules {
		if err := m.Cycle(ctx, snap); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Name(), err))
		}
	}
	if len(errs) > 0 {
		return snap, fmt.Errorf("module errors: %v", errs)
	}
	return snap, nil
}
