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

package integration

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// TestManagerHandsOverLeadershipOnStop: a manager stopped with SIGTERM (a
// rolling update) releases its leader Lease, so the next replica leads at
// once instead of after the lease duration, during which no node's tiers
// or NodeMetric would be kept.
func TestManagerHandsOverLeadershipOnStop(t *testing.T) {
	t.Parallel()
	c := testutil.StartCluster(t, testutil.Options{})
	ctx := t.Context()
	const lease = "waterline-manager.waterline.dev"
	args := []string{"--leader-elect=true", "--leader-election-namespace=default",
		"--leader-elect-lease-duration=60s", "--leader-elect-renew-deadline=40s", "--leader-elect-retry-period=1s"}
	holder := func() (string, error) {
		l, err := c.Kube.CoordinationV1().Leases("default").Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return ptr.Deref(l.Spec.HolderIdentity, ""), nil
	}

	first := c.StartManager(t, args...)
	var firstID string
	testutil.Eventually(t, 30*time.Second, 200*time.Millisecond, func() (bool, error) {
		var err error
		firstID, err = holder()
		return err == nil && firstID != "", err
	}, "the first manager leads")
	first.Stop()

	c.StartManager(t, args...)
	testutil.Eventually(t, 15*time.Second, 200*time.Millisecond, func() (bool, error) {
		id, err := holder()
		if err != nil {
			return false, err
		}
		return id != "" && id != firstID, fmt.Errorf("the lease is held by %q", id)
	}, "the second manager leads well before the 60 s lease duration")
}
