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

	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// burnersUse returns the CPU, in millicores, that the burners under rn's
// top cgroup use over a 2-second window, once that is at least least:
// on a machine busy with other tests (make test runs several packages at
// once on two CPUs) they can be starved for a while, so it measures again
// for up to 30 seconds before failing the test with every window seen.
func burnersUse(t *testing.T, rn *resctltest.RealNode, least int64) int64 {
	t.Helper()
	const window, patience = 2 * time.Second, 30 * time.Second
	var seen []string
	for deadline := time.Now().Add(patience); ; {
		before, start := rn.CPUNanos(rn.Top), time.Now()
		time.Sleep(window)
		use := int64(float64(rn.CPUNanos(rn.Top)-before) / float64(time.Since(start).Nanoseconds()) * 1000)
		if use >= least {
			if len(seen) > 0 {
				t.Logf("the burners used %dm after %d windows below %dm (%v)", use, len(seen), least, seen)
			}
			return use
		}
		seen = append(seen, fmt.Sprintf("%dm", use))
		if time.Now().After(deadline) {
			t.Fatalf("the burners used %v in %s windows over %s, want at least %dm: the machine is too busy for this test (load average %s)",
				seen, window, patience, least, testutil.LoadAverage())
		}
	}
}
