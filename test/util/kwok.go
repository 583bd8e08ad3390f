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

package util

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// kwok manages the nodes that carry this annotation, and the pods bound to them.
const (
	KWOKNodeAnnotation = "kwok.x-k8s.io/node"
	KWOKNodeValue      = "fake"
	// LabelFakeNode marks the nodes a test created, so tests can select them.
	LabelFakeNode = "waterline.dev/test-fake-node"
)

func (c *Cluster) startKWOK(t testing.TB) {
	t.Helper()
	path, err := toolPath("kwok")
	if err != nil {
		t.Fatal(err)
	}
	stages, err := toolPath("kwok-stages.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c.kwok = StartProcess(t, "kwok", path,
		"--kubeconfig", c.Kubeconfig,
		"--config", stages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector", KWOKNodeAnnotation+"="+KWOKNodeValue,
		"--node-lease-duration-seconds", "40",
		"--cidr", "10.128.0.0/12",
	)
}

// NodeOptions describes fake nodes to create.
type NodeOptions struct {
	// Capacity is each node's capacity and allocatable. Default 32 CPU,
	// 128Gi memory, 110 pods.
	Capacity corev1.ResourceList
	// Labels added to each node (besides kubernetes.io/hostname,
	// kubernetes.io/os=linux, kubernetes.io/arch and LabelFakeNode; a
	// label given here replaces those).
	Labels map[string]string
	// Annotations added to each node.
	Annotations map[string]string
	// Taints of each node.
	Taints []corev1.Taint
}

// DefaultNodeCapacity is the capacity of a fake node when none is given.
func DefaultNodeCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resourceMust("32"),
		corev1.ResourceMemory: resourceMust("128Gi"),
		corev1.ResourcePods:   resourceMust("110"),
	}
}

// CreateNodes creates n kwok-managed nodes named <prefix>-0..n-1 and waits
// until all are Ready. It needs a cluster started with KWOK.
func (c *Cluster) CreateNodes(t testing.TB, prefix string, n int, opts NodeOptions) []*corev1.Node {
	t.Helper()
	if c.kwok == nil {
		t.Fatal("CreateNodes needs a cluster started with Options{KWOK: true}")
	}
	capacity := opts.Capacity
	if capacity == nil {
		capacity = DefaultNodeCapacity()
	}
	ctx := t.Context()
	nodes := make([]*corev1.Node, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			nodes[i], errs[i] = c.createNode(ctx, fmt.Sprintf("%s-%d", prefix, i), capacity, opts)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("Creating fake nodes: %v", err)
		}
	}
	names := make(map[string]bool, n)
	for _, node := range nodes {
		names[node.Name] = true
	}
	c.WaitNodesReady(t, names, 2*time.Minute)
	return nodes
}

func (c *Cluster) createNode(ctx context.Context, name string, capacity corev1.ResourceList, opts NodeOptions) (*corev1.Node, error) {
	// The labels kubelet puts on every node, besides the test's.
	lbls := map[string]string{
		corev1.LabelHostname:   name,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: runtime.GOARCH,
		LabelFakeNode:          "true",
		"type":                 "kwok",
	}
	maps.Copy(lbls, opts.Labels)
	ann := map[string]string{KWOKNodeAnnotation: KWOKNodeValue}
	maps.Copy(ann, opts.Annotations)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls, Annotations: ann},
		Spec:       corev1.NodeSpec{Taints: opts.Taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity.DeepCopy(),
			Allocatable: capacity.DeepCopy(),
			Phase:       corev1.NodeRunning,
		},
	}
	created, err := c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating node %s: %w", name, err)
	}
	return created, nil
}

// WaitNodesReady waits until every named node reports Ready=True.
func (c *Cluster) WaitNodesReady(t testing.TB, names map[string]bool, timeout time.Duration) {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{LabelFakeNode: "true"}).String()
	Eventually(t, timeout, 250*time.Millisecond, func() (bool, error) {
		list, err := c.Kube.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range list.Items {
			if names[list.Items[i].Name] && NodeReady(&list.Items[i]) {
				ready++
			}
		}
		if ready < len(names) {
			return false, fmt.Errorf("%d of %d nodes Ready", ready, len(names))
		}
		return true, nil
	}, "waiting for %d fake nodes to become Ready", len(names))
}

// NodeReady reports whether the node's Ready condition is True.
func NodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitPodRunning waits until the pod is Running and returns it.
func (c *Cluster) WaitPodRunning(t testing.TB, namespace, name string, timeout time.Duration) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	Eventually(t, timeout, 200*time.Millisecond, func() (bool, error) {
		p, err := c.Kube.CoreV1().Pods(namespace).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		switch p.Status.Phase {
		case corev1.PodRunning:
			return true, nil
		case corev1.PodFailed, corev1.PodSucceeded:
			// It will not run any more: say why now.
			t.Fatalf("Pod %s/%s ended %s on node %q instead of running: %s: %s", namespace, name, p.Status.Phase, p.Spec.NodeName, p.Status.Reason, p.Status.Message)
		}
		return false, fmt.Errorf("phase %s, node %q", p.Status.Phase, p.Spec.NodeName)
	}, "waiting for pod %s/%s to run", namespace, name)
	return pod
}

// CreateNamespace creates a namespace with the given labels; an existing
// one is left as it is. The cluster, and so the namespace, ends with the test.
func (c *Cluster) CreateNamespace(t testing.TB, name string, lbls map[string]string) *corev1.Namespace {
	t.Helper()
	ns, err := c.Kube.CoreV1().Namespaces().Create(t.Context(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("Creating namespace %s: %v", name, err)
	}
	return ns
}
