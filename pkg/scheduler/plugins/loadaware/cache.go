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
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/waterline-dev/waterline/pkg/core/nodeload"
)

// nodeCache is what LoadAware knows per node beyond the scheduler's
// snapshot: the node's NodeMetric and the pods assigned to it -- bound ones
// from the pod informer, assumed ones from Reserve -- each estimated once
// when it arrives. The excess of those pods is summed once and kept until a
// pod or the metric changes or a forced estimation window ends.
//
// The scheduling cycle takes no lock and hashes no string on its way to a
// node's load (the package README's "Live scheduler" section has the
// profiles behind this):
//
//   - PreFilter takes a read-only index (snapshot) that maps the scheduler
//     snapshot's NodeInfo objects -- which keep their address for the
//     node's life in the scheduler's cache -- to the node's slot in a
//     dense array, so Filter and Score find it by an 8-byte pointer hash
//     without touching the entry; a NodeInfo the index does not know (a
//     copy made for nominated pods or preemption, a node added since) is
//     looked up by name in the same index.
//   - Each entry publishes the node's load as an immutable nodeView behind
//     an atomic pointer, in the entry and in its slot: Filter and Score
//     read it without locking. Writers (informer handlers, Reserve) change
//     the entry under its lock and clear the view; the next reader derives
//     a new one under that lock. The view carries the node's
//     nodeload.NodeSummary, so judging the node reads neither the entry
//     nor the NodeMetric.
//   - Filter leaves the node's score for the cycle in the slot; Score, which
//     runs on the nodes Filter passed, reads it there.
type nodeCache struct {
	cfg *nodeload.Config

	mu    sync.Mutex
	nodes map[string]*nodeState
	// podNode is the node each counted pod is counted on, so that a pod
	// that moves or goes away is taken off the right node.
	podNode map[types.UID]string
	// index is the last index handed to a cycle; stale is set when an
	// entry was added or dropped since it was taken.
	index atomic.Pointer[nodeIndex]
	stale atomic.Bool
	// cycles numbers the scheduling cycles (newCycle), so that Score can
	// tell the score Filter left on an entry in this cycle from an older
	// one.
	cycles atomic.Uint64
}

// newCycle returns the number of a new scheduling cycle; never 0.
func (c *nodeCache) newCycle() uint64 { return c.cycles.Add(1) }

// nodeIndex is a read-only view of the cache's entries for scheduling
// cycles. The entries are shared; the maps are never written.
type nodeIndex struct {
	// byName is a copy of the cache's node map when the index was taken.
	byName map[string]*nodeState
	// byInfo maps the NodeInfos of the scheduler's node list to their
	// entries; nil when no list was given. It may be older than byName:
	// an entry in it may have been dropped since (nodeState.dropped), and
	// a node whose entry was created since is missing from it.
	byInfo *infoIndex
}

// infoIndex maps the NodeInfo objects of one node list of the scheduler to
// slots holding the entries of their nodes.
type infoIndex struct {
	m map[*framework.NodeInfo]*slot
	// slots are the nodes' slots, side by side: what a cycle reads of a
	// node before its view -- the view pointer, the score Filter left --
	// is here, 24 bytes a node (120 KB at 5,000 nodes, which stays in the
	// CPU's cache between cycles), not in the entries spread over the heap.
	slots []slot
	// head and n identify the list it was built from: the scheduler
	// allocates a new list when a node is added or removed.
	head *fwk.NodeInfo
	n    int
	// misses counts lookups it did not answer that the name did: once
	// they cost about what rebuilding it does, it is rebuilt.
	misses atomic.Int64
	// mismatched is set when a NodeInfo was found holding another node
	// than the one it was indexed for: it is rebuilt at the next cycle.
	mismatched atomic.Bool
}

// slot is a node's place in an infoIndex. Its view is the entry's view,
// published and cleared under the entry's lock while this is the entry's
// latest slot (nodeState.slot); an older index's slot is no longer
// filled, and its readers find the view through the entry.
type slot struct {
	view atomic.Pointer[nodeView]
	// scored is the score Filter worked out for the node in a cycle, as
	// cycle<<8 | score (0 when none): Score, which runs on the nodes
	// Filter just passed, finds it here instead of reading the view again.
	// Only Filter writes it; a word of another cycle is ignored.
	scored atomic.Uint64
	// ns is the node's entry; never changes.
	ns *nodeState
}

// builtFrom reports whether the index was built from this list.
func (ii *infoIndex) builtFrom(nodes []fwk.NodeInfo) bool {
	if len(nodes) != ii.n {
		return false
	}
	return len(nodes) == 0 || &nodes[0] == ii.head
}

// snapshot returns the index for a scheduling cycle. nodes is the
// scheduler's list of every node (PreFilter's argument), or nil when the
// caller has none (a profile with LoadAware for scoring only): then
// NodeInfos are only looked up by name unless an earlier list built the
// pointer index. The name map is copied again only when an entry was
// added or dropped since the last call, the pointer index only when the
// scheduler's list changed or its misses cost more than a rebuild.
func (c *nodeCache) snapshot(nodes []fwk.NodeInfo) *nodeIndex {
	idx := c.index.Load()
	rebuildInfo := func(idx *nodeIndex) bool {
		if nodes == nil {
			return false
		}
		ii := idx.byInfo
		return ii == nil || !ii.builtFrom(nodes) || ii.misses.Load() >= int64(max(ii.n, 1)) || ii.mismatched.Load()
	}
	if idx != nil && !c.stale.Load() && !rebuildInfo(idx) {
		return idx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	next := &nodeIndex{}
	if idx == nil || c.stale.Load() {
		c.stale.Store(false)
		next.byName = maps.Clone(c.nodes)
		if next.byName == nil {
			next.byName = map[string]*nodeState{}
		}
	} else {
		next.byName = idx.byName
	}
	if idx != nil {
		next.byInfo = idx.byInfo
	}
	if idx == nil || rebuildInfo(idx) {
		if nodes != nil {
			next.byInfo = c.infoIndexLocked(nodes)
		}
	}
	c.index.Store(next)
	return next
}

// infoIndexLocked maps the NodeInfos of nodes to slots of the current
// entries, which become the entries' latest slots. Callers hold c.mu.
func (c *nodeCache) infoIndexLocked(nodes []fwk.NodeInfo) *infoIndex {
	ii := &infoIndex{m: make(map[*framework.NodeInfo]*slot, len(c.nodes)), n: len(nodes)}
	if len(nodes) > 0 {
		ii.head = &nodes[0]
	}
	type found struct {
		p  *framework.NodeInfo
		ns *nodeState
	}
	var entries []found
	for _, ni := range nodes {
		p, ok := ni.(*framework.NodeInfo)
		if !ok || p == nil || p.Node() == nil {
			continue
		}
		if ns := c.nodes[p.Node().Name]; ns != nil {
			entries = append(entries, found{p, ns})
		}
	}
	// One array, never grown after this, so that the map's pointers into
	// it stay valid.
	ii.slots = make([]slot, len(entries))
	for i, e := range entries {
		sl := &ii.slots[i]
		sl.ns = e.ns
		ii.m[e.p] = sl
		e.ns.mu.Lock()
		if e.ns.slot != nil {
			// The older index's slot is not cleared at the next change
			// any more: empty for good, it sends a cycle still on that
			// index to the entry.
			e.ns.slot.view.Store(nil)
		}
		e.ns.slot = sl
		e.ns.mu.Unlock()
	}
	return ii
}

// nodeState is one node's entry. view and dropped are read without a
// lock; the rest is guarded by mu.
type nodeState struct {
	// view is the node's load as Filter and Score read it; nil after a
	// change, until a reader derives it again (nodeCache.refresh).
	view atomic.Pointer[nodeView]
	// dropped is set when the entry left the cache (it knew nothing about
	// the node any more); an index that still holds it looks the node up
	// by name.
	dropped atomic.Bool

	// name is the node's name; it never changes.
	name string

	mu sync.Mutex
	// slot is the entry's slot in the latest NodeInfo index; its view is
	// set and cleared with view. nil when no index holds the entry.
	slot *slot
	pods map[types.UID]*assignedPod
	// metric is the node's NodeMetric; nil while it has none.
	metric *nodeload.Metric
	// node is the Node object allocatable and thresholds were derived
	// from; a new object in the snapshot derives them again.
	node        *corev1.Node
	allocatable nodeload.Vector
	thresholds  nodeload.Thresholds
	// annotationErr is the last error of the node's annotations, so each
	// new one is reported once, not once per Node object (every status
	// heartbeat is a new object).
	annotationErr string
	// excess and prodExcess are nodeload.NodeExcess of pods under metric;
	// excessFresh is false after any change of metric or pods, and
	// excessUntil is when a forced window ends and the sums must be redone.
	excess, prodExcess nodeload.Vector
	excessFresh        bool
	excessUntil        time.Time
}

// nodeView is a node's load derived for one Node object, never changed
// once published: Filter and Score read it on many goroutines at once.
// What they read comes first -- the node, until and the summary, in two
// or three cache lines for cpu and memory; the NodeLoad behind the summary
// is only read to log a refusal's numbers.
type nodeView struct {
	// node is the Node object the view was derived for.
	node *corev1.Node
	// until is when, in Unix nanoseconds, a forced estimation window ends
	// and the excess must be summed again; 0 when only a change does.
	until int64
	// sum is load reduced to what Filter and Score read, the NodeMetric's
	// expiry and forbid-scheduling flag included, so that judging a node
	// does not also read its Metric.
	sum  nodeload.NodeSummary
	load nodeload.NodeLoad
}

// scoredWord packs the score Filter leaves for a cycle (slot.scored).
func scoredWord(cycle uint64, score int64) uint64 { return cycle<<8 | uint64(score) }

// scoreOf returns the score Filter left in the slot in cycle.
func (sl *slot) scoreOf(cycle uint64) (int64, bool) {
	w := sl.scored.Load()
	if w>>8 != cycle {
		return 0, false
	}
	return int64(w & 0xff), true
}

// current reports whether the view holds for node at now.
func (v *nodeView) current(node *corev1.Node, now int64) bool {
	return v.node == node && (v.until == 0 || now < v.until)
}

type assignedPod struct {
	nodeload.AssignedPod
	// assumed is true from Reserve until the pod informer shows the pod
	// bound: only such an entry may be taken back by Unreserve.
	assumed bool
}

func newNodeCache(cfg *nodeload.Config) *nodeCache {
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
		ns = &nodeState{name: name, pods: map[types.UID]*assignedPod{}}
		c.nodes[name] = ns
		c.stale.Store(true)
	}
	return ns
}

// changedLocked marks the node's load as changed: the excess is summed
// again and a new view derived at the next read. Callers hold ns.mu.
func (ns *nodeState) changedLocked() {
	ns.excessFresh = false
	ns.publishLocked(nil)
}

// publishLocked sets the view readers find, in the entry and its latest
// slot. Callers hold ns.mu: a view derived from an older state can never
// be published after the change that cleared it.
func (ns *nodeState) publishLocked(v *nodeView) {
	ns.view.Store(v)
	if ns.slot != nil {
		ns.slot.view.Store(v)
	}
}

// metricOf is the NodeMetric recorded for node name; nil if none.
func (c *nodeCache) metricOf(name string) *nodeload.Metric {
	ns := c.get(name)
	if ns == nil {
		return nil
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.metric
}

// setMetric records a node's NodeMetric, or its deletion when m is nil,
// and returns the one it replaced. The plugin's
// informer is the only writer and delivers a NodeMetric's versions in the
// API server's order -- a relist lists no older version than it has seen
// -- so the latest delivery is the latest report, whatever its updateTime
// says. Keeping the later updateTime instead froze the node on a report
// stamped by an agent clock that ran ahead and was then corrected: that
// report never expires while it is in the future.
func (c *nodeCache) setMetric(name string, m *nodeload.Metric) (prev *nodeload.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ns := c.getOrCreateLocked(name)
	ns.mu.Lock()
	defer ns.mu.Unlock()
	prev = ns.metric
	ns.metric = m
	ns.changedLocked()
	c.dropIfEmptyLocked(name, ns)
	return prev
}

// excessShrinks reports whether the pods counted on node name add less
// excess under cur than under old at now (nodeload.ExcessShrinks).
func (c *nodeCache) excessShrinks(name string, old, cur *nodeload.Metric, now time.Time) bool {
	ns := c.get(name)
	if ns == nil {
		return false
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return nodeload.ExcessShrinks(ns.podSeq(), old, cur, now)
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
	ns.changedLocked()
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
	ns.changedLocked()
	c.dropIfEmptyLocked(name, ns)
}

// dropIfEmptyLocked forgets a node LoadAware knows nothing about any more,
// so deleted nodes do not pile up. Callers hold c.mu and ns.mu.
func (c *nodeCache) dropIfEmptyLocked(name string, ns *nodeState) {
	if ns.metric == nil && len(ns.pods) == 0 {
		ns.dropped.Store(true)
		ns.publishLocked(nil)
		ns.slot = nil
		delete(c.nodes, name)
		c.stale.Store(true)
	}
}

// viewOf returns the load of the node nodeInfo holds at now (nowNano is
// the same instant in Unix nanoseconds), or nil when LoadAware knows
// nothing about the node, and the node's slot when the NodeInfo index has
// one for it. The error is the node's malformed annotations, returned only
// when it differs from the last one returned for the node, so that a
// caller reports each once.
//
// The steady state reads the map, the slot and the view: the view's node
// being the NodeInfo's node proves the slot's entry is the node's.
func (c *nodeCache) viewOf(idx *nodeIndex, nodeInfo fwk.NodeInfo, node *corev1.Node, now time.Time, nowNano int64) (*slot, *nodeView, error) {
	ii := idx.byInfo
	if ii != nil {
		if p, ok := nodeInfo.(*framework.NodeInfo); ok {
			if sl := ii.m[p]; sl != nil {
				if v := sl.view.Load(); v != nil && v.current(node, nowNano) {
					return sl, v, nil
				}
				ns := sl.ns
				switch {
				case ns.dropped.Load():
					// Forgotten since the index was built: by name.
				case ns.name == node.Name:
					v, err := c.refresh(ns, node, now, nowNano)
					return sl, v, err
				default:
					// The NodeInfo holds another node than when it was
					// indexed (not the scheduler's own snapshot): go by
					// name, and trust neither Filter's scores (scoredBy)
					// nor the index after this cycle.
					ii.mismatched.Store(true)
					v, err := c.viewByName(idx, node, now, nowNano)
					return nil, v, err
				}
			}
		}
	}
	v, err := c.viewByName(idx, node, now, nowNano)
	if v != nil && ii != nil {
		ii.misses.Add(1)
	}
	return nil, v, err
}

// viewByName is viewOf for a node the NodeInfo index does not answer for.
func (c *nodeCache) viewByName(idx *nodeIndex, node *corev1.Node, now time.Time, nowNano int64) (*nodeView, error) {
	ns := idx.byName[node.Name]
	if ns == nil {
		return nil, nil
	}
	if v := ns.view.Load(); v != nil && v.current(node, nowNano) {
		return v, nil
	}
	return c.refresh(ns, node, now, nowNano)
}

// scoredBy returns the score Filter left in cycle for the node nodeInfo
// holds; false when there is none (Filter did not pass the node in this
// cycle, or found it by name).
func (idx *nodeIndex) scoredBy(nodeInfo fwk.NodeInfo, cycle uint64) (int64, bool) {
	ii := idx.byInfo
	if ii == nil || ii.mismatched.Load() {
		return 0, false
	}
	p, ok := nodeInfo.(*framework.NodeInfo)
	if !ok {
		return 0, false
	}
	sl := ii.m[p]
	if sl == nil {
		return 0, false
	}
	return sl.scoreOf(cycle)
}

// refresh derives and publishes the node's view for node at now, under
// the entry's lock; a reader that waited for another's refresh takes its
// view.
func (c *nodeCache) refresh(ns *nodeState, node *corev1.Node, now time.Time, nowNano int64) (*nodeView, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if v := ns.view.Load(); v != nil && v.current(node, nowNano) {
		if ns.slot != nil && ns.slot.view.Load() != v {
			ns.slot.view.Store(v)
		}
		return v, nil
	}
	var err error
	if ns.node != node {
		var allocErr, thrErr error
		ns.allocatable, allocErr = c.cfg.Allocatable(node)
		ns.thresholds, thrErr = c.cfg.NodeThresholds(node)
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
	if m := ns.metric; m != nil && (!ns.excessFresh || !ns.excessUntil.IsZero() && !now.Before(ns.excessUntil)) {
		ns.excess, ns.prodExcess, ns.excessUntil = nodeload.NodeExcess(ns.podSeq(), m, now)
		ns.excessFresh = true
	}
	v := &nodeView{node: node, load: nodeload.NodeLoad{
		Allocatable: ns.allocatable,
		Thresholds:  ns.thresholds,
		Metric:      ns.metric,
	}}
	if ns.metric != nil {
		v.load.Excess, v.load.ProdExcess = ns.excess, ns.prodExcess
		if !ns.excessUntil.IsZero() {
			v.until = ns.excessUntil.UnixNano()
		}
	}
	v.sum = c.cfg.Summarize(&v.load)
	ns.publishLocked(v)
	return v, err
}

// load returns a copy of a node's load at now, for tests and callers off
// the hot path.
func (c *nodeCache) load(node *corev1.Node, now time.Time) (nodeload.NodeLoad, error) {
	ns := c.get(node.Name)
	if ns == nil {
		return nodeload.NodeLoad{}, nil
	}
	v, err := c.refresh(ns, node, now, now.UnixNano())
	return v.load, err
}

func (ns *nodeState) podSeq() iter.Seq[*nodeload.AssignedPod] {
	return func(yield func(*nodeload.AssignedPod) bool) {
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
