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

package controlplane

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/client/clientset/versioned"
	wlv1alpha1 "github.com/waterline-dev/waterline/pkg/client/clientset/versioned/typed/apis/v1alpha1"
)

// gate sits between the simulated agents' reporters and the API server.
// Open, a status write goes through and is counted; closed, it is dropped
// and answered as if written, so every reporter keeps its schedule (its
// phase within the report interval) and the fleet's writes resume at an
// even rate the moment the gate opens, without a burst. Everything else
// (informers, gets, creates) always goes through.
type gate struct {
	open              atomic.Bool
	sent, ok, dropped atomic.Int64
}

// clientset wraps c so that NodeMetric status writes pass the gate.
func (g *gate) clientset(c versioned.Interface) versioned.Interface {
	return gatedClientset{Interface: c, g: g}
}

type gatedClientset struct {
	versioned.Interface
	g *gate
}

func (c gatedClientset) WaterlineV1alpha1() wlv1alpha1.WaterlineV1alpha1Interface {
	return gatedGroup{WaterlineV1alpha1Interface: c.Interface.WaterlineV1alpha1(), g: c.g}
}

type gatedGroup struct {
	wlv1alpha1.WaterlineV1alpha1Interface
	g *gate
}

func (c gatedGroup) NodeMetrics() wlv1alpha1.NodeMetricInterface {
	return gatedNodeMetrics{NodeMetricInterface: c.WaterlineV1alpha1Interface.NodeMetrics(), g: c.g}
}

type gatedNodeMetrics struct {
	wlv1alpha1.NodeMetricInterface
	g *gate
}

func (c gatedNodeMetrics) UpdateStatus(ctx context.Context, nm *v1alpha1.NodeMetric, opts metav1.UpdateOptions) (*v1alpha1.NodeMetric, error) {
	if !c.g.open.Load() {
		c.g.dropped.Add(1)
		return nm, nil
	}
	c.g.sent.Add(1)
	out, err := c.NodeMetricInterface.UpdateStatus(ctx, nm, opts)
	if err == nil {
		c.g.ok.Add(1)
	}
	return out, err
}
