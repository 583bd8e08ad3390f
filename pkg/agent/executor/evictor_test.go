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

package executor_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/executor"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
)

// TestAPIEvictorTellsPDBFromAPIThrottling: the Eviction API's 429 for a
// PodDisruptionBudget (kube-apiserver's body, with its DisruptionBudget
// cause) is ErrEvictionBlocked; API Priority and Fairness's 429 (its body,
// no cause) is ErrAPIThrottled, not a PDB refusal. The HTTP server answers
// with the bodies kube-apiserver sends (the PDB one is also exercised
// against a real API server by the integration tests).
func TestAPIEvictorTellsPDBFromAPIThrottling(t *testing.T) {
	const (
		pdbBody = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget keep-a needs 1 healthy pods and has 1 currently"}]},"code":429}`
		apfBody = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests","details":{},"code":429}`
		oldPDB  = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","code":429}`
	)
	for _, tc := range []struct {
		name, body string
		want       error
		notWant    error
	}{
		{"pdb", pdbBody, executor.ErrEvictionBlocked, executor.ErrAPIThrottled},
		{"pdb-without-cause", oldPDB, executor.ErrEvictionBlocked, executor.ErrAPIThrottled},
		{"apf", apfBody, executor.ErrAPIThrottled, executor.ErrEvictionBlocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			kube, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			pod := resctltest.MakePod("a").Band(extension.BandBatch).Obj()
			err = executor.APIEvictor{Client: kube}.Evict(t.Context(), pod, nil)
			if !errors.Is(err, tc.want) || errors.Is(err, tc.notWant) {
				t.Errorf("Evict error = %v, want %v and not %v", err, tc.want, tc.notWant)
			}
		})
	}
}
