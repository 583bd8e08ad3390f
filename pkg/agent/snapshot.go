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

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/atomicfile"
)

// NodeSnapshotFile is the node snapshot inside the agent's state directory.
const NodeSnapshotFile = "node-snapshot.json"

const nodeSnapshotVersion = 1

// nodeSnapshot is what the agent last knew of the API server for its node:
// the Node, its pods, its NodeMetric and every NodeQOS. It is written while
// the informers are synced, and read at start so that node protection runs
// from what the node knows when the API server cannot be reached -- a
// restart during a partition or a control-plane outage must not leave the
// node unprotected until the API server answers.
type nodeSnapshot struct {
	Version    int                  `json:"version"`
	Saved      time.Time            `json:"saved"`
	Node       *corev1.Node         `json:"node,omitempty"`
	Pods       []*corev1.Pod        `json:"pods"`
	NodeMetric *v1alpha1.NodeMetric `json:"nodeMetric,omitempty"`
	NodeQOSes  []*v1alpha1.NodeQOS  `json:"nodeQOSes"`
}

// UseSnapshot makes the States keep the node snapshot in path and loads the
// one a previous run left: until the informers sync, the States answer from
// it. Call it before Start. A missing file is a first start; an unreadable
// one is an error (the States then wait for the API server as before).
func (s *States) UseSnapshot(path string) error {
	s.snapPath = path
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the node snapshot %s: %w", path, err)
	}
	var snap nodeSnapshot
	if err := json.Unmarshal(b, &snap); err != nil {
		return fmt.Errorf("parsing the node snapshot %s: %w", path, err)
	}
	if snap.Version != nodeSnapshotVersion {
		return fmt.Errorf("node snapshot %s: version %d, want %d", path, snap.Version, nodeSnapshotVersion)
	}
	if snap.Node != nil && snap.Node.Name != s.nodeName {
		return fmt.Errorf("node snapshot %s is of node %q, not %q", path, snap.Node.Name, s.nodeName)
	}
	snap.Pods = slices.DeleteFunc(snap.Pods, func(p *corev1.Pod) bool {
		return p == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	snap.NodeQOSes = slices.DeleteFunc(snap.NodeQOSes, func(nq *v1alpha1.NodeQOS) bool { return nq == nil })
	s.snap = &snap
	return nil
}

// SnapshotTime is when the loaded snapshot was saved; zero without one.
func (s *States) SnapshotTime() time.Time {
	if s.snap == nil {
		return time.Time{}
	}
	return s.snap.Saved
}

// fromSnapshot reports whether the States answer from the snapshot: the
// informers have not synced and there is one.
func (s *States) fromSnapshot() bool { return !s.synced.Load() && s.snap != nil }

// Synced reports whether the informers have synced (the API server's view
// is in use).
func (s *States) Synced() bool { return s.synced.Load() }

// PodsComplete reports whether Pods is the node's whole pod list: the
// informers synced, or the snapshot stands in for them.
func (s *States) PodsComplete() bool { return s.synced.Load() || s.snap != nil }

// RunSnapshots saves the node snapshot every interval while the informers
// are synced and something changed, and once more when ctx ends.
func (s *States) RunSnapshots(ctx context.Context, interval time.Duration) {
	if s.snapPath == "" {
		return
	}
	logger := klog.FromContext(ctx)
	var last uint64
	save := func() {
		if !s.synced.Load() {
			return
		}
		h, err := s.saveSnapshot(last)
		if err != nil {
			logger.Error(err, "Saving the node snapshot")
			return
		}
		last = h
	}
	wait.UntilWithContext(ctx, func(context.Context) { save() }, interval)
	save()
}

// saveSnapshot writes the informers' view when it differs from the one
// with hash last, and returns its hash.
func (s *States) saveSnapshot(last uint64) (uint64, error) {
	pods, _ := s.pods.List(labels.Everything())
	qoses, _ := s.qoses.List(labels.Everything())
	node, nm := s.Node(), s.NodeMetric()
	h := fnv.New64a()
	add := func(parts ...string) {
		for _, p := range parts {
			_, _ = h.Write([]byte(p))
			_, _ = h.Write([]byte{0})
		}
	}
	if node != nil {
		add("node", node.ResourceVersion)
	}
	if nm != nil {
		add("nm", nm.ResourceVersion)
	}
	keys := make([]string, 0, len(pods)+len(qoses))
	for _, p := range pods {
		keys = append(keys, "pod/"+string(p.UID)+"/"+p.ResourceVersion)
	}
	for _, q := range qoses {
		keys = append(keys, "qos/"+string(q.UID)+"/"+q.ResourceVersion)
	}
	slices.Sort(keys)
	add(strings.Join(keys, ","))
	sum := h.Sum64()
	if sum == last {
		return sum, nil
	}
	snap := nodeSnapshot{Version: nodeSnapshotVersion, Saved: time.Now(), Node: node, Pods: pods, NodeMetric: nm, NodeQOSes: qoses}
	b, err := json.Marshal(&snap)
	if err != nil {
		return last, err
	}
	if err := atomicfile.Write(s.snapPath, b); err != nil {
		return last, fmt.Errorf("saving the node snapshot: %w", err)
	}
	return sum, nil
}
