package qos

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ErrEvictionBlocked is returned (wrapped) by an Evictor when the API
// server refuses an eviction because it would violate a
// PodDisruptionBudget: the executor then plans again without the pod.
var ErrEvictionBlocked = errors.New("eviction blocked by a PodDisruptionBudget")

// ErrPodGone is returned (wrapped) by an Evictor when the pod no longer
// exists, or is another pod of the same name: nothing to evict.
var ErrPodGone = errors.New("pod gone")

// Evictor evicts pods. The executor's is APIEvictor; tests of the
// executor's decisions may pass their own.
type Evictor interface {
	// Evict asks for the pod's eviction with the grace period (nil: the
	// pod's own). It returns nil once the API server accepted it,
	// ErrEvictionBlocked or ErrPodGone (wrapped) for the refusals the
	// executor handles, or any other error.
	Evict(ctx context.Context, pod *corev1.Pod, gracePeriodSeconds *int64) error
}

// APIEvictor evicts through the policy/v1 Eviction API, which honours
// PodDisruptionBudgets.
type APIEvictor struct {
	Client kubernetes.Interface
}

// Evict implements Evictor. The UID precondition makes sure a pod recreated
// under the same name is not evicted in its predecessor's place.
func (e APIEvictor) Evict(ctx context.Context, pod *corev1.Pod, gracePeriodSeconds *int64) error {
	uid := pod.UID
	err := e.Client.CoreV1().Pods(pod.Namespace).EvictV1(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
		DeleteOptions: &metav1.DeleteOptions{
			GracePeriodSeconds: gracePeriodSeconds,
			Preconditions:      &metav1.Preconditions{UID: &uid},
		},
	})
	switch {
	case err == nil:
		return nil
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("evicting pod %s/%s: %w: %v", pod.Namespace, pod.Name, ErrEvictionBlocked, err)
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return fmt.Errorf("evicting pod %s/%s: %w: %v", pod.Namespace, pod.Name, ErrPodGone, err)
	}
	return fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
}
