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

package sweep

import (
	"fmt"

	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// Half names one half of a split workload.
type Half int

// The two halves.
const (
	// Even is the even-numbered nodes and jobs: the half settings are
	// chosen on.
	Even Half = 0
	// Odd is the odd-numbered nodes and jobs: the half they are reported
	// on.
	Odd Half = 1
)

func (h Half) String() string {
	if h == Odd {
		return "odd"
	}
	return "even"
}

// Split returns one half of w: its even- or odd-numbered nodes with the
// services on them, and its even- or odd-numbered jobs (so the half's
// batch load, relative to its CPU, stays about w's). Shapes are shared
// with w, which must not change afterwards.
//
// Why nodes: every shipped workload maps its trace onto nodes or
// services, so a node split gives the halves disjoint online load where
// the trace allows it -- alibaba's node i replays machine i mod 16, so the
// halves replay disjoint machines; openb and synthetic draw each node and
// service independently; bitbrains' service k replays VM k mod 50 with
// a 6 h shift per wrap, so the halves share VMs but mostly at different
// times. Both halves see the same day (a time split would train on the
// night and test on the evening peak) and the same job mix.
func Split(w *workload.Workload, h Half) (*workload.Workload, error) {
	if h != Even && h != Odd {
		return nil, fmt.Errorf("half %d: must be even (0) or odd (1)", int(h))
	}
	if len(w.Nodes) < 2 {
		return nil, fmt.Errorf("workload %s has %d nodes: splitting it needs at least 2", w.Name, len(w.Nodes))
	}
	out := &workload.Workload{
		Name:     fmt.Sprintf("%s, %s half", w.Name, h),
		Start:    w.Start,
		Duration: w.Duration,
		Shapes:   w.Shapes,
	}
	index := make([]int, len(w.Nodes))
	for i := range w.Nodes {
		index[i] = -1
		if i%2 == int(h) {
			index[i] = len(out.Nodes)
			out.Nodes = append(out.Nodes, w.Nodes[i])
		}
	}
	for _, s := range w.Services {
		if index[s.Node] < 0 {
			continue
		}
		s.Node = index[s.Node]
		out.Services = append(out.Services, s)
	}
	for i := range w.Jobs {
		if i%2 == int(h) {
			out.Jobs = append(out.Jobs, w.Jobs[i])
		}
	}
	if errs := out.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", out.Name, errs.ToAggregate())
	}
	return out, nil
}
