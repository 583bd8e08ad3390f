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

package predict

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Tracker keeps the usage histograms of one node for one resource: the
// node-level (Prod + system) history and one history per running Prod pod.
// It is the state behind a prediction; the agent keeps one per resource,
// feeds it on every histogram update and checkpoints it, and the
// simulator and the evaluation keep one per node.
//
// Pods keep the order they were added in (a removed pod's slot goes to the
// last pod), so predictions are reproducible for the same calls.
// A Tracker is not safe for concurrent use.
type Tracker struct {
	layout *Layout
	node   *Histogram
	pods   []trackedPod
	index  map[string]int
	input  Input
	// gen counts the changes to pods (Generation).
	gen uint64
}

type trackedPod struct {
	id      string
	start   time.Time
	request float64
	usage   *Histogram
}

// NewTracker returns an empty tracker whose histograms use layout l.
func NewTracker(l *Layout) *Tracker {
	return &Tracker{layout: l, node: l.NewHistogram(), index: map[string]int{}}
}

// Layout returns the layout of the tracker's histograms.
func (t *Tracker) Layout() *Layout { return t.layout }

// AddNodeSample adds a node-level (Prod + system) usage sample.
func (t *Tracker) AddNodeSample(value, weight float64, at time.Time) {
	t.node.AddSample(value, weight, at)
}

// SetPod adds a pod or updates its start time and request, keeping its
// history.
func (t *Tracker) SetPod(id string, start time.Time, request float64) {
	t.gen++
	if i, ok := t.index[id]; ok {
		t.pods[i].start, t.pods[i].request = start, request
		return
	}
	t.index[id] = len(t.pods)
	t.pods = append(t.pods, trackedPod{id: id, start: start, request: request, usage: t.layout.NewHistogram()})
}

// SystemPodID names the node's usage outside pods among a tracker's pods:
// Koordinator node prediction's special pod S
// (docs/design/prediction.md#what-is-predicted), so that the per-pod models
// (NSigmaV2's sum, ResourceCentral) count the system as the node-level ones do.
const SystemPodID = "system"

// AddSystemSample adds a sample of the node's usage outside pods as the
// pod SystemPodID (no request, never cold), tracking it the first time.
// The agent and the simulator both feed the system this way.
func (t *Tracker) AddSystemSample(value, weight float64, at time.Time) {
	if _, ok := t.index[SystemPodID]; !ok {
		t.SetPod(SystemPodID, time.Time{}, 0)
	}
	t.AddPodSample(SystemPodID, value, weight, at)
}

// AddPodSample adds a usage sample of pod id; it reports false (and adds
// nothing) when the pod is unknown, so a caller can SetPod first.
func (t *Tracker) AddPodSample(id string, value, weight float64, at time.Time) bool {
	i, ok := t.index[id]
	if !ok {
		return false
	}
	t.pods[i].usage.AddSample(value, weight, at)
	return true
}

// RemovePod forgets a pod that stopped running, with its history.
func (t *Tracker) RemovePod(id string) {
	i, ok := t.index[id]
	if !ok {
		return
	}
	t.gen++
	last := len(t.pods) - 1
	if i != last {
		t.pods[i] = t.pods[last]
		t.index[t.pods[i].id] = i
	}
	t.pods[last] = trackedPod{}
	t.pods = t.pods[:last]
	delete(t.index, id)
}

// Generation counts the calls that changed the tracked pods (SetPod,
// RemovePod, and AddSystemSample when it tracks the system). As long as it
// is the same, Input lists the same pods in the same order, with the same
// starts, requests and histograms: a caller may keep a copy of Input's
// Pods and only change its Now. Samples added to the histograms do not
// count.
func (t *Tracker) Generation() uint64 { return t.gen }

// Len returns the number of tracked pods.
func (t *Tracker) Len() int { return len(t.pods) }

// Node returns the node-level histogram (read-only by convention).
func (t *Tracker) Node() *Histogram { return t.node }

// Pod returns the history of pod id, or nil.
func (t *Tracker) Pod(id string) *Histogram {
	if i, ok := t.index[id]; ok {
		return t.pods[i].usage
	}
	return nil
}

// Input returns the predictor input at now. The returned Input and its
// Pods slice are reused by the next call and are valid until the tracker
// changes.
func (t *Tracker) Input(now time.Time) *Input {
	t.input.Now = now
	t.input.Node = t.node
	t.input.Pods = t.input.Pods[:0]
	for i := range t.pods {
		p := &t.pods[i]
		t.input.Pods = append(t.input.Pods, PodInput{Start: p.start, Request: p.request, Usage: p.usage})
	}
	return &t.input
}

// TrackerCheckpoint is the serialisable form of a Tracker.
type TrackerCheckpoint struct {
	Node HistogramCheckpoint `json:"node"`
	Pods []PodCheckpoint     `json:"pods,omitempty"`
}

// PodCheckpoint is one pod of a TrackerCheckpoint.
type PodCheckpoint struct {
	ID      string              `json:"id"`
	Start   time.Time           `json:"start"`
	Request float64             `json:"request"`
	Usage   HistogramCheckpoint `json:"usage"`
}

// Checkpoint returns the serialisable form of t.
func (t *Tracker) Checkpoint() TrackerCheckpoint {
	cp := TrackerCheckpoint{Node: t.node.Checkpoint()}
	for i := range t.pods {
		p := &t.pods[i]
		cp.Pods = append(cp.Pods, PodCheckpoint{ID: p.id, Start: p.start, Request: p.request, Usage: p.usage.Checkpoint()})
	}
	return cp
}

// RestoreTracker returns the tracker cp was taken from. Errors wrap
// ErrIncompatibleLayout when cp was written with another layout.
func (l *Layout) RestoreTracker(cp TrackerCheckpoint) (*Tracker, error) {
	node, err := l.Restore(cp.Node)
	if err != nil {
		return nil, fmt.Errorf("restoring node histogram: %w", err)
	}
	t := &Tracker{layout: l, node: node, index: make(map[string]int, len(cp.Pods))}
	var errs field.ErrorList
	for i, p := range cp.Pods {
		if _, dup := t.index[p.ID]; dup {
			errs = append(errs, field.Duplicate(field.NewPath("pods").Index(i).Child("id"), p.ID))
			continue
		}
		h, err := l.Restore(p.Usage)
		if err != nil {
			return nil, fmt.Errorf("restoring pod %q: %w", p.ID, err)
		}
		t.index[p.ID] = len(t.pods)
		t.pods = append(t.pods, trackedPod{id: p.ID, start: p.Start, request: p.Request, usage: h})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("restoring tracker: %w", errs.ToAggregate())
	}
	return t, nil
}
