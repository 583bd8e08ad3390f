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

// Package bandpreemption is the BandPreemption PostFilter plugin: the
// scheduler's default preemption, run by the framework's own preemption
// evaluator, with Waterline's victim rules
// (docs/design/preemption.md#victim-rules) plugged into its extension hooks:
//
//   - a running pod whose PriorityClass is annotated
//     waterline.dev/preemption-policy: NonPreemptible is never a victim of a
//     preemptor below the class's waterline.dev/preemptible-by-priority;
//   - DaemonSet pods and static/mirror pods are never victims;
//   - a preemptor whose pod or class has preemptionPolicy Never preempts
//     nobody.
//
// When those rules leave a pending pod without room, its FailedScheduling
// event and PodScheduled condition say so ("... pods of NonPreemptible
// PriorityClass "x", not preemptible by priority P below threshold T").
// A malformed annotation makes the class a normal class and is reported as
// a Warning Event on the PriorityClass.
//
// It decides nothing itself -- the rules are pkg/core/preemption -- and it
// must never pick victims, count PodDisruptionBudgets or delete pods any
// other way than DefaultPreemption does: all of that is the framework's.
package bandpreemption

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	frameworkpreemption "k8s.io/kubernetes/pkg/scheduler/framework/preemption"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/core/preemption"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
	// Lets kube-scheduler decode BandPreemptionArgs from its configuration file.
	_ "github.com/waterline-dev/waterline/pkg/scheduler/apis/config/scheme"
	configv1 "github.com/waterline-dev/waterline/pkg/scheduler/apis/config/v1"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config/validation"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "BandPreemption"

// EventReasonMalformedAnnotation is the reason of the Warning Event recorded
// on a PriorityClass whose Waterline annotations are ignored.
const EventReasonMalformedAnnotation = "MalformedPreemptionAnnotation"

// BandPreemption wraps DefaultPreemption; see the package doc.
type BandPreemption struct {
	inner   *defaultpreemption.DefaultPreemption
	classes schedulinglisters.PriorityClassLister
	handle  fwk.Handle
}

var (
	_ fwk.PostFilterPlugin          = &BandPreemption{}
	_ fwk.PreEnqueuePlugin          = &BandPreemption{}
	_ fwk.EnqueueExtensions         = &BandPreemption{}
	_ frameworkpreemption.Interface = &evaluatorHooks{}
)

// rejectedUpstream lists what DefaultPreemption implements and BandPreemption
// deliberately does not, with why. TestUpstreamSurface keeps it, and the
// forwarding above, equal to what k8s.io/kubernetes's DefaultPreemption
// offers: a Kubernetes bump that adds a hook, an extension point or a
// method fails that test until someone decides here.
var rejectedUpstream = map[string]string{
	// PodGroupPostFilter (framework.PodGroupPostFilterPlugin, behind the
	// alpha WorkloadAwarePreemption gate) is rejected, not forwarded:
	//   - the framework hands pod-group preemption only to the plugin
	//     *named* DefaultPreemption (frameworkImpl looks it up by name), so
	//     a forwarding method here would never be called;
	//   - DefaultPreemption runs it with its own PodGroupEvaluator, which
	//     does not consult IsEligiblePod: forwarded, it would preempt
	//     NonPreemptible, DaemonSet and static pods.
	"PodGroupPostFilter": "pod-group preemption bypasses the victim rules and is only called on DefaultPreemption",
}

// New is the plugin factory waterline-scheduler registers. Feature gates
// are read from the scheduler's global gate, as the in-tree registry does.
func New(ctx context.Context, obj runtime.Object, handle fwk.Handle) (fwk.Plugin, error) {
	return NewWithFeatures(ctx, obj, handle, feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate))
}

// NewWithFeatures builds the plugin with explicit feature gates (tests).
// obj is a *config.BandPreemptionArgs or nil for the defaults.
func NewWithFeatures(ctx context.Context, obj runtime.Object, handle fwk.Handle, fts feature.Features) (*BandPreemption, error) {
	var args config.BandPreemptionArgs
	switch a := obj.(type) {
	case nil:
		args = configv1.DefaultedBandPreemptionArgs()
	case *config.BandPreemptionArgs:
		args = *a
	default:
		return nil, fmt.Errorf("got args of type %T, want *BandPreemptionArgs", obj)
	}
	if err := validation.ValidateBandPreemptionArgs(nil, &args).ToAggregate(); err != nil {
		return nil, fmt.Errorf("invalid %s args: %w", Name, err)
	}
	inner, err := defaultpreemption.New(ctx, &schedconfig.DefaultPreemptionArgs{
		MinCandidateNodesPercentage: args.MinCandidateNodesPercentage,
		MinCandidateNodesAbsolute:   args.MinCandidateNodesAbsolute,
	}, handle, fts)
	if err != nil {
		return nil, fmt.Errorf("building the default preemption: %w", err)
	}
	if fts.EnableWorkloadAwarePreemption {
		klog.FromContext(ctx).Info("WorkloadAwarePreemption is on, but BandPreemption does not preempt for pod groups (see rejectedUpstream): pods of a pod group are not preempted for", "plugin", Name)
	}
	informer := handle.SharedInformerFactory().Scheduling().V1().PriorityClasses()
	pl := &BandPreemption{inner: inner, classes: informer.Lister(), handle: handle}
	inner.IsEligiblePod = pl.isEligibleVictim
	// The evaluator is DefaultPreemption's own, under our name and with our
	// hooks; DefaultPreemption.PostFilter still drives it, so pod-group
	// gating, metrics and message wording stay upstream's.
	inner.Evaluator = frameworkpreemption.NewEvaluator(Name, handle, &evaluatorHooks{pl: pl}, inner.Executor)

	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { pl.checkClass(ctx, nil, obj) },
		UpdateFunc: func(old, obj any) { pl.checkClass(ctx, old, obj) },
	}); err != nil {
		return nil, fmt.Errorf("watching PriorityClasses: %w", err)
	}
	return pl, nil
}

// Name implements fwk.Plugin.
func (pl *BandPreemption) Name() string { return Name }

// PostFilter implements fwk.PostFilterPlugin.
func (pl *BandPreemption) PostFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	return pl.inner.PostFilter(ctx, state, pod, m)
}

// PreEnqueue implements fwk.PreEnqueuePlugin: with async preemption a pod
// waits while its victims are being deleted.
func (pl *BandPreemption) PreEnqueue(ctx context.Context, pod *corev1.Pod) *fwk.Status {
	return pl.inner.PreEnqueue(ctx, pod)
}

// EventsToRegister implements fwk.EnqueueExtensions.
func (pl *BandPreemption) EventsToRegister(ctx context.Context) ([]fwk.ClusterEventWithHint, error) {
	return pl.inner.EventsToRegister(ctx)
}

// classLookup resolves a class through the informer's lister. Parsing on
// every call is a couple of map reads and one ParseInt; the dry-run
// benchmark shows no cost over DefaultPreemption, so a cache of parsed
// classes (and its invalidation) is not worth having.
func (pl *BandPreemption) classLookup(name string) (preemption.Class, bool) {
	pc, err := pl.classes.Get(name)
	if err != nil {
		return preemption.Class{}, false
	}
	// A malformed class is a normal class here; checkClass reports it.
	c, _ := preemption.ParseClass(pc)
	return c, true
}

// isEligibleVictim is DefaultPreemption's IsEligiblePod hook.
func (pl *BandPreemption) isEligibleVictim(_ fwk.NodeInfo, victim fwk.PodInfo, preemptor *corev1.Pod) bool {
	return preemption.VictimVerdict(victim.GetPod(), preemptor, pl.classLookup).Eligible()
}

// checkClass records a Warning Event on a PriorityClass whose Waterline
// annotations are malformed, once per change of its annotations.
func (pl *BandPreemption) checkClass(ctx context.Context, oldObj, obj any) {
	pc, ok := obj.(*schedulingv1.PriorityClass)
	if !ok {
		return
	}
	if old, ok := oldObj.(*schedulingv1.PriorityClass); ok && sameWaterlineAnnotations(old, pc) {
		return
	}
	if _, err := preemption.ParseClass(pc); err != nil {
		logger := klog.FromContext(ctx)
		logger.Info("Ignoring malformed preemption annotations of PriorityClass", "priorityClass", klog.KObj(pc), "err", err)
		pl.handle.EventRecorder().Eventf(pc, nil, corev1.EventTypeWarning, EventReasonMalformedAnnotation, "Scheduling", "%s", err.Error())
	}
}

func sameWaterlineAnnotations(a, b *schedulingv1.PriorityClass) bool {
	for _, k := range []string{extension.AnnotationPreemptionPolicy, extension.AnnotationPreemptibleByPriority} {
		if a.Annotations[k] != b.Annotations[k] {
			return false
		}
	}
	return a.Value == b.Value
}

// evaluatorHooks is the preemption.Interface the evaluator calls:
// DefaultPreemption's, with the preemptor check and the explanation of
// spared pods added.
type evaluatorHooks struct{ pl *BandPreemption }

func (h *evaluatorHooks) GetOffsetAndNumCandidates(nodes int32) (int32, int32) {
	return h.pl.inner.GetOffsetAndNumCandidates(nodes)
}

func (h *evaluatorHooks) CandidatesToVictimsMap(candidates []frameworkpreemption.Candidate) map[string]*extenderv1.Victims {
	return h.pl.inner.CandidatesToVictimsMap(candidates)
}

func (h *evaluatorHooks) OrderedScoreFuncs(ctx context.Context, nodesToVictims map[string]*extenderv1.Victims) []func(node string) int64 {
	return h.pl.inner.OrderedScoreFuncs(ctx, nodesToVictims)
}

// PodEligibleToPreemptOthers adds the class's preemptionPolicy to the pod's.
func (h *evaluatorHooks) PodEligibleToPreemptOthers(ctx context.Context, pod *corev1.Pod, nominatedNodeStatus *fwk.Status) (bool, string) {
	if ok, msg := preemption.PreemptorVerdict(pod, h.pl.classLookup); !ok {
		return false, msg
	}
	return h.pl.inner.PodEligibleToPreemptOthers(ctx, pod, nominatedNodeStatus)
}

// SelectVictimsOnNode runs DefaultPreemption's victim selection unchanged.
// When it finds no way onto the node and lower-priority pods were spared by
// Waterline's rules, it adds why to the node's reasons, which the scheduler
// counts into the pending pod's FailedScheduling message.
func (h *evaluatorHooks) SelectVictimsOnNode(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, nodeInfo fwk.NodeInfo,
	pdbs []*policyv1.PodDisruptionBudget) ([]*corev1.Pod, int, *fwk.Status) {
	// Collected before the call: DefaultPreemption removes pods from nodeInfo.
	var spared []preemption.Verdict
	for _, pi := range nodeInfo.GetPods() {
		v := preemption.VictimVerdict(pi.GetPod(), pod, h.pl.classLookup)
		if v.Eligible() || v.Reason == preemption.NotLowerPriority {
			continue
		}
		// One reason per rule and class, not per pod.
		v.VictimPriority = 0
		if !slices.Contains(spared, v) {
			spared = append(spared, v)
		}
	}
	victims, violations, status := h.pl.inner.SelectVictimsOnNode(ctx, state, pod, nodeInfo, pdbs)
	if status.IsSuccess() || status.Code() == fwk.Error || len(spared) == 0 {
		return victims, violations, status
	}
	reasons := slices.Clone(status.Reasons())
	for _, v := range spared {
		reasons = append(reasons, v.String())
	}
	klog.FromContext(ctx).V(4).Info("Preemption spared pods on node", "pod", klog.KObj(pod), "node", klog.KObj(nodeInfo.Node()), "reasons", reasons)
	return victims, violations, fwk.NewStatus(status.Code(), reasons...).WithPlugin(status.Plugin())
}
