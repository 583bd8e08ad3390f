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

package loadaware

import (
	"errors"
	"iter"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	core "github.com/waterline-dev/waterline/pkg/core/loadaware"
)

// nodeCache is what LoadAware knows per node beyond the scheduler's
// snapshot: the node's NodeMetric and the pods assigned to it -- bound ones
// from the pod informer, assumed ones from Reserve -- each estimated once
// when it arrives. The excess of those pods is summed once and kept until a
// pod or the metric changes or a forced estimation window ends, so Filter
// and Score read a few vectors under a per-node lock and allocate nothing.
//
// The scheduling cycle does not take the cache's lock: PreFilter takes a
// read-only snapshot of the node index (snapshot), rebuilt only when a
// node entry was added or dropped since the last one, and Filter and Score
// look nodes up in it without locking -- only the node's own state is
// locked while it is read. (A global RWMutex taken twice per node per
// cycle by 16 parallel Filter goroutines cost more than the decisions.)
type nodeCache struct {
	cfg *core.Config

	mu    sync.Mutex
	nodes map[string]*nodeState
	// podNode is the node each counted pod is counted on, so that a pod
	// that moves or goes away is taken off the right node.
	podNode map[types.UID]string
	// index is the last snapshot of nodes; stale is set when an entry was
	// added or dropped since it was taken.
	index atomic.Pointer[nodeIndex]
	stale atomic.Bool
}

// nodeIndex is a read-only copy of the cache's node map: the entries are
// shared (each guarded by its own lock), the map is never written.
type nodeIndex map[string]*nodeState

// snapshot returns the node index, rebuilding it when entries were added
// or dropped since the last call. Scheduling cycles call it once, in
// PreFilter or PreScore.
func (c *nodeCache) snapshot() nodeIndex {
	if idx := c.index.Load(); idx != nil && !c.stale.Load() {
		return *idx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stale.Store(false)
	idx := maps.Clone(c.nodes)
	if idx == nil {
		idx = map[string]*nodeState{}
	}
	ni := nodeIndex(idx)
	c.index.Store(&ni)
	return ni
}

// nodeState is one node's entry; its fields are guarded by mu.
type nodeState struct {
	mu   sync.Mutex
	pods map[types.UID]*assignedPod

	// load is what the core decisions read; load.Metric is nil while the
	// node has no NodeMetric. Its other fields are derived and refreshed
	// by acquire.
	load core.NodeLoad
	// node is the Node object load.Allocatable and load.Thresholds were
	// derived from; a new object in the snapshot derives them again.
	node *corev1.Node
	// annotationErr is the last error of the node's annotations, so each
	// new one is reported once, not once per Node object (every status
	// heartbeat is a new object).
	annotationErr string
	// excessFresh is false after any change of metric or pods; excessUntil
	// is when a forced window ends and the sums must be redone.
	excessFresh bool
	excessUntil time.Time
}

type assignedPod struct {
	core.AssignedPod
	// assumed is true from Reserve until the pod informer shows the pod
	// bound: only such an entry may be taken back by Unreserve.
	assumed bool
}

func newNodeCache(cfg *core.Config) *nodeCache {
	return &nodeCache{cfg: cfg, nodes: map[string]*nodeState{}, podNode: map[types.UID]string{}}
}

// get returns a node's state, or nil when LoadAware knows nothing about it,
// off the scheduling path (handlers, tests).
func (c *nodeCache) get(name string) *nodeState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[name]
}

// getOrCreate returns a node's state, creating it. Callers hold c.mu.
func (c *nodeCache) getOrCreateLocked(name string) *nodeState {
	ns := c.nodes[name]
	if ns == nil {
		ns = &nodeState{pods: map[types.UID]*assignedPod{}}
		c.nodes[name] = ns
		c.stale.Store(true)
	}
	return ns
}

// setMetric records a node's NodeMetric, or its deletion when m is nil,
// and returns the one it replaced; applied is false when m was ignored. A
// metric reported earlier than the one held is ignored, so that a late
// delivery (a relist) never takes the view back.
func (c *nodeCache) setMetric(name string, m *core.Metric) (prev *core.Metric, applied bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ns := c.getOrCreateLocked(name)
	ns.mu.Lock()
	defer ns.mu.Unlock()
	prev = ns.load.Metric
	if m != nil && prev != nil && prev.UpdateTime.After(m.UpdateTime) {
		c.dropIfEmptyLocked(name, ns)
		return prev, false
	}
	ns.load.Metric = m
	ns.excessFresh = false
	c.dropIfEmptyLocked(name, ns)
	return prev, true
}

// assign counts a pod on nodeName: bound (assumed false) or reserved by this
// scheduler (assumed true). A pod counted on another node is moved. The
// pod is estimated here, once; scheduledAt is when it was assigned.
// A malformed estimation annotation is returned for the caller to log.
func (c *nodeCache) assign(pod *corev1.Pod, nodeName string, assumed bool, scheduledAt time.Time) error {
	ap, err := c.cfg.NewAssignedPod(pod, scheduledAt)
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.podNode[pod.UID]; ok && prev != nodeName {
		c.removeLocked(pod.UID, false)
	}
	ns := c.getOrCreateLocked(nodeName)
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.pods[pod.UID] = &assignedPod{AssignedPod: ap, assumed: assumed}
	ns.excessFresh = false
	c.podNode[pod.UID] = nodeName
	return err
}

// scheduledAt returns when a counted pod was assigned, and false if it is
// not counted.
func (c *nodeCache) scheduledAt(uid types.UID) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name, ok := c.podNode[uid]
	if !ok {
		return time.Time{}, false
	}
	ns := c.nodes[name]
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.pods[uid].ScheduledAt, true
}

// remove stops counting a pod; with onlyAssumed it only takes back a pod
// still assumed (Unreserve), never one the informer showed bound.
func (c *nodeCache) remove(uid types.UID, onlyAssumed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(uid, onlyAssumed)
}

func (c *nodeCache) removeLocked(uid types.UID, onlyAssumed bool) {
	name, ok := c.podNode[uid]
	if !ok {
		return
	}
	ns := c.nodes[name]
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if onlyAssumed && !ns.pods[uid].assumed {
		return
	}
	delete(ns.pods, uid)
	delete(c.podNode, uid)
	ns.excessFresh = false
	c.dropIfEmptyLocked(name, ns)
}

// dropIfEmptyLocked forgets a node LoadAware knows nothing about any more,
// so deleted nodes do not pile up. Callers hold c.mu and ns.mu.
func (c *nodeCache) dropIfEmptyLocked(name string, ns *nodeState) {
	if ns.load.Metric == nil && len(ns.pods) == 0 {
		delete(c.nodes, name)
		c.stale.Store(true)
	}
}

// acquire returns a node's state locked, with its load refreshed for now;
// the caller reads ns.load and unlocks ns.mu. It returns nil when LoadAware
// knows nothing about the node. Handing out the locked state rather than a
// copy of the load keeps Filter and Score from copying half a kilobyte per
// node. The error is the node's malformed annotations, returned only when
// it differs from the last one returned for the node, so that a caller
// reports each once.
func (c *nodeCache) acquire(idx nodeIndex, node *corev1.Node, now time.Time) (*nodeState, error) {
	ns := idx[node.Name]
	if ns == nil {
		return nil, nil
	}
	ns.mu.Lock()
	var err error
	if ns.node != node {
		var allocErr, thrErr error
		ns.load.Allocatable, allocErr = c.cfg.Allocatable(node)
		ns.load.Thresholds, thrErr = c.cfg.NodeThresholds(node)
		ns.node = node
		err = errors.Join(allocErr, thrErr)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if msg == ns.annotationErr {
			err = nil
		}
		ns.annotationErr = msg
	}
	if m := ns.load.Metric; m != nil && (!ns.excessFresh || !ns.excessUntil.IsZero() && !now.Before(ns.excessUntil)) {
		ns.load.Excess, ns.load.ProdExcess, ns.excessUntil = core.NodeExcess(ns.podSeq(), m, now)
		ns.excessFresh = true
	}
	return ns, err
}

// load returns a copy of a node's load at now, for tests and callers off
// the hot path.
func (c *nodeCache) load(node *corev1.Node, now time.Time) (core.NodeLoad, error) {
	ns, err := c.acquire(c.snapshot(), node, now)
	if ns == nil {
		return core.NodeLoad{}, err
	}
	defer ns.mu.Unlock()
	return ns.load, err
}

func (ns *nodeState) podSeq() iter.Seq[*core.AssignedPod] {
	return func(yield func(*core.AssignedPod) bool) {
		for _, p := range ns.pods {
			if !yield(&p.AssignedPod) {
				return
			}
		}
	}
}

// counted returns the pods counted on a node, for tests.
func (c *nodeCache) counted(name string) map[types.UID]bool {
	out := map[types.UID]bool{}
	ns := c.get(name)
	if ns == nil {
		return out
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	for uid, p := range ns.pods {
		out[uid] = p.assumed
	}
	return out
}
