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

package executor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ErrEvictionBlocked is returned (wrapped) by an Evictor when the API
// server refuses an eviction because it would violate a
// PodDisruptionBudget: the executor then plans again without the pod (CPU),
// or deletes the pod instead (memory relief, as kubelet's own eviction
// would).
var ErrEvictionBlocked = errors.New("eviction blocked by a PodDisruptionBudget")

// ErrAPIThrottled is returned (wrapped) by an Evictor when the API server
// answered 429 for another reason than a PodDisruptionBudget: API Priority
// and Fairness (or a max-in-flight limit) shed the request. The pod is not
// protected by anything; the executor asks again shortly.
var ErrAPIThrottled = errors.New("eviction request throttled by the API server")

// ErrPodGone is returned (wrapped) by an Evictor when the pod no longer
// exists, or is another pod of the same name: nothing to evict.
var ErrPodGone = errors.New("pod gone")

// Evictor evicts pods. The executor's is APIEvictor; tests of the
// executor's decisions may pass their own.
type Evictor interface {
	// Evict asks for the pod's eviction with the grace period (nil: the
	// pod's own). It returns nil once the API server accepted it,
	// ErrEvictionBlocked, ErrAPIThrottled or ErrPodGone (wrapped) for the
	// refusals the executor handles, or any other error.
	Evict(ctx context.Context, pod *corev1.Pod, gracePeriodSeconds *int64) error
	// Delete deletes the pod with the grace period (nil: the pod's own),
	// bypassing PodDisruptionBudgets: memory relief only, after Evict was
	// refused for one. ErrPodGone (wrapped) when it is already gone.
	Delete(ctx context.Context, pod *corev1.Pod, gracePeriodSeconds *int64) error
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
	case apierrors.IsTooManyRequests(err) && IsDisruptionBudgetRefusal(err):
		return fmt.Errorf("evicting pod %s/%s: %w: %w", pod.Namespace, pod.Name, ErrEvictionBlocked, err)
	case apierrors.IsTooManyRequests(err):
		return fmt.Errorf("evicting pod %s/%s: %w: %w", pod.Namespace, pod.Name, ErrAPIThrottled, err)
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return fmt.Errorf("evicting pod %s/%s: %w: %w", pod.Namespace, pod.Name, ErrPodGone, err)
	}
	return fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
}

// Delete implements Evictor, with the same UID precondition as Evict.
func (e APIEvictor) Delete(ctx context.Context, pod *corev1.Pod, gracePeriodSeconds *int64) error {
	uid := pod.UID
	err := e.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: gracePeriodSeconds,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return fmt.Errorf("deleting pod %s/%s: %w: %w", pod.Namespace, pod.Name, ErrPodGone, err)
	}
	return fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
}

// IsDisruptionBudgetRefusal reports whether a 429 from the Eviction API is
// a PodDisruptionBudget's refusal: the API server marks it with a
// DisruptionBudget cause (and, on servers older than the cause, says so in
// the message). A 429 from API Priority and Fairness carries neither.
func IsDisruptionBudgetRefusal(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Type == policyv1.DisruptionBudgetCause {
				return true
			}
		}
	}
	return strings.Contains(strings.ToLower(s.Message), "disruption budget")
}
