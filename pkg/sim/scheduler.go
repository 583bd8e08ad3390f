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

package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/core/nodeload"
	"github.com/waterline-dev/waterline/pkg/sim/workload"
)

// Scheduler is the simulation's scheduler on its own, fed from API
// objects: what a policy of a simulation does to place a pod, so that it
// can be held against a real scheduler running a profile with the same
// plugins (NewScheduler: the waterline policies' profile, the chart's,
// the default plugins with LoadAware at weight laWeight;
// NewDefaultScheduler: the baselines', kube-scheduler's default profile;
// see the scheduler type).
// It is not safe for concurrent use.
type Scheduler struct {
	s      scheduler
	la     *nodeload.Config
	nodes  []*node
	byName map[string]*node
	seq    int64
}

// NodeScore is the verdict on one node for one pod.
type NodeScore struct {
	Node string
	// Fits says the pod passes every filter on the node.
	Fits bool
	// Score is the node's score for the pod: the weighted sum of the
	// profile's scores (see the scheduler type), comparable between the
	// nodes of one pod; 0 when it does not fit.
	Score int64
}

// NewScheduler returns a Scheduler over nodes with LoadAware args spec
// (nodeload.Spec as the plugin's args give it) and LoadAware's score
// weight laWeight (the chart's scheduler.loadAwareWeight, 1 to 100); seed
// breaks ties. Node allocatable, tier resources included, comes from
// status.allocatable.
func NewScheduler(spec nodeload.Spec, laWeight int64, nodes []*corev1.Node, seed int64) (*Scheduler, error) {
	la, err := nodeload.NewConfig(spec)
	if err != nil {
		return nil, fmt.Errorf("LoadAware args: %w", err)
	}
	if laWeight < 1 || laWeight > 100 {
		return nil, fmt.Errorf("LoadAware weight %d: must be in [1, 100]", laWeight)
	}
	return newScheduler(la, laWeight, nodes, seed, PolicyWaterline), nil
}

// NewDefaultScheduler returns a Scheduler over nodes that places pods as
// the simulation's plain-Kubernetes policies (k8s-default,
// k8s-besteffort) do: kube-scheduler's default profile, so that it can be
// held against a real kube-scheduler running that profile. seed breaks
// ties. It has no LoadAware, so SetNodeMetric refuses.
func NewDefaultScheduler(nodes []*corev1.Node, seed int64) *Scheduler {
	return newScheduler(nil, 0, nodes, seed, PolicyK8sDefault)
}

// newScheduler is a Scheduler over nodes with LoadAware config la (nil:
// off) at weight laWeight, its tie-breaks drawn as policy's are.
func newScheduler(la *nodeload.Config, laWeight int64, nodes []*corev1.Node, seed int64, policy Policy) *Scheduler {
	s := &Scheduler{
		s:      scheduler{la: la, laWeight: laWeight, rng: rand.New(rand.NewPCG(uint64(seed), policySeed(policy)))},
		la:     la,
		byName: map[string]*node{},
	}
	s.s.index = newFitIndex(len(nodes))
	for i, obj := range nodes {
		alloc := resVecOf(obj.Status.Allocatable)
		n := &node{
			idx:      i,
			spec:     &workload.Node{Name: obj.Name, CPUMilli: alloc[resCPU], MemoryBytes: alloc[resMemory], Pods: alloc[resPods]},
			obj:      obj,
			alloc:    alloc,
			fit:      &s.s.index.views[i],
			fitIndex: &s.s.index,
		}
		n.balanceWithout = balanceOf(&n.req, &n.alloc)
		n.syncFit()
		n.assigned = n.assignedSeq()
		if la != nil {
			// A malformed annotation is ignored, as the plugin does.
			n.load.Allocatable, _ = la.Allocatable(obj)
			n.load.Thresholds, _ = la.NodeThresholds(obj)
		}
		s.nodes = append(s.nodes, n)
		s.byName[obj.Name] = n
	}
	return s
}

// SetNodeMetric records a node's NodeMetric, as the plugin's informer
// does; one for a node the Scheduler does not know is an error.
func (s *Scheduler) SetNodeMetric(nm *v1alpha1.NodeMetric) error {
	if s.la == nil {
		return fmt.Errorf("NodeMetric %s: the default profile has no LoadAware to read it", nm.Name)
	}
	n, ok := s.byName[nm.Name]
	if !ok {
		return fmt.Errorf("NodeMetric %s: no such node", nm.Name)
	}
	n.load.Metric = s.la.NewMetric(nm)
	n.excessFresh, n.sumFresh = false, false
	return nil
}

// Evaluate filters and scores every node for pod at now, in node order.
func (s *Scheduler) Evaluate(pod *corev1.Pod, now time.Time) []NodeScore {
	p := newPod(pod, s.la, s.seq)
	out := make([]NodeScore, len(s.nodes))
	for i, n := range s.nodes {
		out[i].Node = n.spec.Name
		if s.s.fits(p, n, now) {
			out[i].Fits = true
			out[i].Score = s.s.score(p, n, now)
		}
	}
	return out
}

// Schedule picks pod's node at now as the simulation does (sampling nodes
// like kube-scheduler, ties broken at random), or "" when none fits. It
// does not bind: call Bind with the node the pod went to.
func (s *Scheduler) Schedule(pod *corev1.Pod, now time.Time) string {
	if n := s.s.pick(newPod(pod, s.la, s.seq), s.nodes, now); n != nil {
		return n.spec.Name
	}
	return ""
}

// Bind counts pod on the named node from now, as the plugin's Reserve and
// pod informer do.
func (s *Scheduler) Bind(pod *corev1.Pod, nodeName string, now time.Time) error {
	n, ok := s.byName[nodeName]
	if !ok {
		return fmt.Errorf("binding pod %s/%s: no node %s", pod.Namespace, pod.Name, nodeName)
	}
	s.seq++
	n.place(newPod(pod, s.la, s.seq), s.la, now)
	return nil
}
