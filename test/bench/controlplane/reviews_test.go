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

package controlplane

import (
	"context"
	"fmt"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/test/bench/benchutil"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// BenchmarkMetricsReviews is what the secure /metrics of the manager and
// the agents (pkg/securemetrics) cost the control plane: kube-apiserver +
// etcd CPU per TokenReview of a Prometheus ServiceAccount's token and per
// SubjectAccessReview of its `get /metrics`, made as an agent makes them,
// against kubelet's heartbeat, a Lease renewal, in the same run. One
// Prometheus scraping every agent uses one token, so the reviews here
// repeat one token and one user, as a fleet's do.
//
//	go test ./test/bench/controlplane -run '^$' -bench BenchmarkMetricsReviews -benchtime 3000x
func BenchmarkMetricsReviews(b *testing.B) {
	c := testutil.StartCluster(b, testutil.Options{})
	ctx := b.Context()
	const ns, sa = "monitoring", "prometheus"
	c.CreateNamespace(b, ns, nil)
	token := c.CreateMetricsReader(b, ns, sa)
	review := func(ctx context.Context) (authenticationv1.UserInfo, error) {
		got, err := c.Kube.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{
			Spec: authenticationv1.TokenReviewSpec{Token: token},
		}, metav1.CreateOptions{})
		if err == nil && !got.Status.Authenticated {
			err = fmt.Errorf("the token was not authenticated: %s", got.Status.Error)
		}
		if err != nil {
			return authenticationv1.UserInfo{}, err
		}
		return got.Status.User, nil
	}
	user, err := review(ctx)
	if err != nil {
		b.Fatal(err)
	}
	kubelet := &benchutil.Kubelet{Kube: c.Kube}
	if err := kubelet.CreateLease(ctx, "node-0"); err != nil {
		b.Fatal(err)
	}
	apiserver, etcd, err := benchutil.ControlPlanePIDs(c)
	if err != nil {
		b.Fatal(err)
	}
	serverCPU := func() float64 {
		a, err1 := benchutil.CPUSeconds(apiserver)
		e, err2 := benchutil.CPUSeconds(etcd)
		if err1 != nil || err2 != nil {
			b.Fatalf("CPU time of the control plane: %v, %v", err1, err2)
		}
		return a + e
	}

	for _, tc := range []struct {
		name string
		op   func(context.Context) error
	}{
		{"LeaseRenewal", func(ctx context.Context) error { return kubelet.RenewLease(ctx, "node-0") }},
		{"TokenReview", func(ctx context.Context) error {
			_, err := review(ctx)
			return err
		}},
		{"SubjectAccessReview", func(ctx context.Context) error {
			got, err := c.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{
					User: user.Username, UID: user.UID, Groups: user.Groups,
					NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
				},
			}, metav1.CreateOptions{})
			if err == nil && !got.Status.Allowed {
				err = fmt.Errorf("get /metrics not allowed: %s", got.Status.Reason)
			}
			return err
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cpu0 := serverCPU()
			for b.Loop() {
				if err := tc.op(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric((serverCPU()-cpu0)*1e3/float64(b.N), "server-cpu-ms/op")
		})
	}
}
