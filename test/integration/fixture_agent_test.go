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
	"path/filepath"
	"testing"
	"time"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups/cgroupstest"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// startFixtureAgent runs a waterline-agent with o (its NodeName set) on a
// fixture node: a cgroup v2 tree (cgroupfs driver) without pods, and a
// /proc whose 32 CPUs have 4 in use and whose 128 GiB of memory 8 GiB,
// rewritten every 100 ms until the test ends. It needs no root.
func startFixtureAgent(t *testing.T, c *testutil.Cluster, o testutil.AgentOptions) *testutil.Agent {
	t.Helper()
	root := t.TempDir()
	layout, err := cgroups.NewLayout(filepath.Join(root, "cgroup"), cgroups.V2, cgroups.DriverCgroupfs, "/")
	if err != nil {
		t.Fatal(err)
	}
	tree := cgroupstest.Tree{Layout: layout}
	if err := tree.Init(); err != nil {
		t.Fatal(err)
	}
	procDir := filepath.Join(root, "proc")
	stop := make(chan struct{})
	done := make(chan struct{})
	t.Cleanup(func() { close(stop); <-done })
	go func() {
		defer close(done)
		const cpus, busy = 32, 4
		start := time.Now()
		for {
			// Jiffies (1/100 s) of all CPUs: busy and idle since start.
			elapsed := time.Since(start).Seconds() * 100
			if err := cgroupstest.Proc(procDir, uint64(busy*elapsed), uint64((cpus-busy)*elapsed), 128<<30, 120<<30); err != nil {
				t.Errorf("writing the fixture /proc: %v", err)
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	o.CgroupRoot, o.CgroupVersion, o.CgroupDriver, o.ProcRoot = layout.Root(), string(cgroups.V2), string(cgroups.DriverCgroupfs), procDir
	return c.StartAgent(t, o)
}
