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

package bandpreemption

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	clientsetfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	frameworkpreemption "k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	st "k8s.io/kubernetes/pkg/scheduler/testing"
	tf "k8s.io/kubernetes/pkg/scheduler/testing/framework"

	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
)

// BenchmarkDryRunPreemption compares the preemption dry run -- the
// expensive part of PostFilter, where the victim hooks run -- of
// BandPreemption's evaluator and of plain DefaultPreemption's (the
// baseline), on the same framework and cluster: 200 full nodes of 4 pods
// (free 3500, batch 5000, NonPreemptible mid 7500, prod 9500) and a
// preemptor at 8000; both dry-run 100 nodes from the same offset and find
// the free pod the victim on each. Deleting victims is left out: it would
// change the cluster between iterations.
func BenchmarkDryRunPreemption(b *testing.B) {
	const numNodes, dryRunNodes = 200, 100
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var nodes []*corev1.Node
	var pods []*corev1.Pod
	objs := []runtime.Object{}
	for _, pc := range testClasses() {
		objs = append(objs, pc)
	}
	for n := range numNodes {
		name := fmt.Sprintf("node-%03d", n)
		nodes = append(nodes, st.MakeNode().Name(name).Capacity(map[corev1.ResourceName]string{corev1.ResourcePods: "4"}).Obj())
		for i, c := range []struct {
			class string
			prio  int32
		}{{"", 3500}, {"batch", 5000}, {"mid-np", 7500}, {"prod", 9500}} {
			p := runningPod(fmt.Sprintf("%s-%d", name, i), name, c.class, c.prio).Obj()
			pods = append(pods, p)
			objs = append(objs, p)
		}
	}
	preemptor := pendingPod("", 8000).Obj()
	objs = append(objs, preemptor)

	client := clientsetfake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	fit := func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return noderesources.NewFit(ctx, &schedconfig.NodeResourcesFitArgs{
			ScoringStrategy: &schedconfig.ScoringStrategy{Type: schedconfig.LeastAllocated,
				Resources: []schedconfig.ResourceSpec{{Name: "cpu", Weight: 1}}},
		}, h, feature.Features{})
	}
	fw, err := tf.NewFramework(ctx, []tf.RegisterPluginFunc{
		tf.RegisterQueueSortPlugin(queuesort.Name, queuesort.New),
		tf.RegisterPluginAsExtensions(noderesources.Name, fit, "Filter", "PreFilter"),
		tf.RegisterBindPlugin(defaultbinder.Name, defaultbinder.New),
	}, "",
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithEventRecorder(&events.FakeRecorder{}),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithPodNominator(internalqueue.NewSchedulingQueue(nil, factory)),
		frameworkruntime.WithSnapshotSharedLister(internalcache.NewSnapshot(pods, nodes)),
		frameworkruntime.WithWaitingPods(frameworkruntime.NewWaitingPodsMap()),
		frameworkruntime.WithPodsInPreBind(frameworkruntime.NewPodsInPreBindMap()),
	)
	if err != nil {
		b.Fatal(err)
	}
	band, err := NewWithFeatures(ctx, &config.BandPreemptionArgs{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: dryRunNodes}, fw, feature.Features{})
	if err != nil {
		b.Fatal(err)
	}
	def, err := defaultpreemption.New(ctx, &schedconfig.DefaultPreemptionArgs{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: dryRunNodes}, fw, feature.Features{})
	if err != nil {
		b.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	state := framework.NewCycleState()
	if _, status, _ := fw.RunPreFilterPlugins(ctx, state, preemptor); !status.IsSuccess() {
		b.Fatal(status)
	}
	nodeInfos, err := fw.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		b.Fatal(err)
	}

	for _, bc := range []struct {
		name string
		ev   *frameworkpreemption.Evaluator
	}{
		{"baseline-DefaultPreemption", def.Evaluator},
		{"BandPreemption", band.inner.Evaluator},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var candidates []frameworkpreemption.Candidate
			for b.Loop() {
				candidates, _, err = bc.ev.DryRunPreemption(ctx, state, preemptor, nodeInfos, nil, 0, dryRunNodes)
				if err != nil {
					b.Fatal(err)
				}
			}
			if len(candidates) != dryRunNodes || len(candidates[0].Victims().Pods) != 1 || candidates[0].Victims().Pods[0].Spec.Priority == nil ||
				*candidates[0].Victims().Pods[0].Spec.Priority != 3500 {
				b.Fatalf("got %d candidates, first %+v; want %d, each with the free pod as the only victim", len(candidates), candidates[0].Victims(), dryRunNodes)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/dryRunNodes, "ns/node")
		})
	}
}
