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

package resctl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
	"github.com/waterline-dev/waterline/pkg/agent/resctl"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
)

// TestRestartAfterCrashBetweenContainerAndPodWrite: on cgroup v1 a
// throttle lowers the container's quota first, then the pod's. An agent
// killed between the two writes leaves the container at 100m, the pod at
// kubelet's 300m, and a mark recording both. The restarted agent, with no
// intent for the pod, must give the container kubelet's 300m back -- not
// leave it throttled for the pod's life because the pod's own quota
// already looks right.
func TestRestartAfterCrashBetweenContainerAndPodWrite(t *testing.T) {
	f := newFixture(t, cgroups.V1)
	marks := filepath.Join(t.TempDir(), resctl.MarksFile)
	must(t, f.r.UseMarks(marks))
	pod := resctltest.MakePod("batch").Band(extension.BandBatch).CPU("300m", "300m").Obj()
	pc := f.addPod(pod, true)
	ctr := pc.containers["main"]
	f.r.SetIntents("qos", map[types.UID]resctl.Intent{pod.UID: {CPUQuotaMilli: 100, BelowOwnLimits: true}})
	f.mustCycle()
	// The kill: the container write happened (and its mark), the pod's
	// did not.
	f.setQuota(pc.pod, 300)
	if got := f.r.Marks()[pod.UID].Containers; len(got) != 1 {
		t.Fatalf("marked containers before the crash = %v, want the lowered one", got)
	}

	f.restart()
	must(t, f.r.UseMarks(marks))
	f.mustCycle()
	f.mustCycle()
	type state struct{ Pod, Container int64 }
	if diff := cmp.Diff(state{300, 300}, state{f.quota(pc.pod), f.quota(ctr)}); diff != "" {
		t.Errorf("quotas after the restart (-want +got):\n%s", diff)
	}
	if m := f.r.Marks(); len(m) != 0 {
		t.Errorf("marks left after healing: %v", m)
	}
}

// TestFailedPodWriteAfterContainersLowered: on cgroup v1 the container's
// quota went down but the pod's write failed; the intent is then
// withdrawn. The pod's quota is kubelet's already, and the container must
// get kubelet's back too.
func TestFailedPodWriteAfterContainersLowered(t *testing.T) {
	f := newFixture(t, cgroups.V1)
	pod := resctltest.MakePod("batch").Band(extension.BandBatch).CPU("300m", "300m").Obj()
	pc := f.addPod(pod, true)
	ctr := pc.containers["main"]
	f.mustCycle() // the one look at a Batch pod opens its quota file
	period := f.layout.Path(cgroups.ControllerCPU, pc.pod) + "/cpu.cfs_period_us"
	must(t, os.Rename(period, period+".away"))
	must(t, os.Mkdir(period, 0o755)) // unreadable as a file: the pod's write fails
	f.r.SetIntents("qos", map[types.UID]resctl.Intent{pod.UID: {CPUQuotaMilli: 100, BelowOwnLimits: true}})
	if err := f.cycle(); err == nil {
		t.Fatal("the cycle with the pod's quota file broken succeeded")
	}
	if got := f.quota(ctr); got != 100 {
		t.Fatalf("container quota after the failed pod write = %dm, want the lowered 100m", got)
	}
	must(t, os.Remove(period))
	must(t, os.Rename(period+".away", period))

	f.r.SetIntents("qos", nil)
	f.mustCycle()
	type state struct{ Pod, Container int64 }
	if diff := cmp.Diff(state{300, 300}, state{f.quota(pc.pod), f.quota(ctr)}); diff != "" {
		t.Errorf("quotas once the intent is withdrawn (-want +got):\n%s", diff)
	}
}

// TestReleaseAfterResizeGivesKubeletsNewLimit: a throttled Batch pod is
// resized in place (cgroup v2; kubelet writes the new limit into the pod's
// cpu.max, the agent throttles it again), then the agent is uninstalled.
// Release must write kubelet's value now -- the resized 600m -- not the
// 300m the pod had when it was first throttled, which would hold it under
// its own limit for the rest of its life.
func TestReleaseAfterResizeGivesKubeletsNewLimit(t *testing.T) {
	f := newFixture(t, cgroups.V2)
	must(t, f.r.UseMarks(filepath.Join(t.TempDir(), resctl.MarksFile)))
	pod := resctltest.MakePod("batch").Band(extension.BandBatch).CPU("300m", "300m").Obj()
	pc := f.addPod(pod, true)
	f.r.SetIntents("qos", map[types.UID]resctl.Intent{pod.UID: {CPUQuotaMilli: 100, BelowOwnLimits: true}})
	f.mustCycle()

	resized := resctltest.MakePod("batch").Band(extension.BandBatch).CPU("600m", "600m").Obj()
	resized.UID, resized.Status = pod.UID, pod.Status
	f.pods[0] = resized
	f.setQuota(pc.pod, 600) // kubelet applies the resize
	f.mustCycle()
	if got := f.quota(pc.pod); got != 100 {
		t.Fatalf("quota after the resize and a cycle = %dm, want the throttle's 100m again", got)
	}

	must(t, f.r.Release(klog.Background()))
	if got := f.quota(pc.pod); got != 600 {
		t.Errorf("quota after release = %dm, want kubelet's 600m since the resize", got)
	}
}

// TestV2WeightIsKubeletsPodWeight: on cgroup v2 kubelet writes a pod
// cgroup's cpu.weight with its own linear conversion of shares
// (pkg/kubelet/cm getCPUWeight: 1 + (shares−2)×9999/262142, so 1024 →
// 39), not runc's container conversion (1024 → 100). A tier intent of
// 1024 shares must give the pod the weight kubelet gives a pod requesting
// one CPU, and withdrawing it must put kubelet's own value back.
func TestV2WeightIsKubeletsPodWeight(t *testing.T) {
	f := newFixture(t, cgroups.V2)
	pod := resctltest.MakePod("burstable").Band(extension.BandBatch).CPU("1", "").Tier(extension.ResourceBatchMemory, "1Gi").Obj()
	pc := f.addPod(pod, true)
	weightFile := f.layout.Path(cgroups.ControllerCPU, pc.pod) + "/cpu.weight"
	must(t, os.WriteFile(weightFile, []byte("39\n"), 0o644)) // what kubelet 1.36 writes for 1024 shares
	weight := func() string {
		t.Helper()
		b, err := os.ReadFile(weightFile)
		must(t, err)
		return strings.TrimSpace(string(b))
	}

	f.r.SetIntents("tier", map[types.UID]resctl.Intent{pod.UID: {CPUShares: 2048}})
	f.mustCycle()
	if got := weight(); got != "79" { // 1 + ⌊2046×9999/262142⌋
		t.Errorf("cpu.weight under a 2048-share intent = %s, want kubelet's 79", got)
	}
	f.r.SetIntents("tier", map[types.UID]resctl.Intent{pod.UID: {CPUShares: 1024}})
	f.mustCycle()
	if got := weight(); got != "39" {
		t.Errorf("cpu.weight under a 1024-share intent = %s, want kubelet's 39 for a one-CPU pod", got)
	}
	f.r.SetIntents("tier", map[types.UID]resctl.Intent{pod.UID: {CPUShares: 2048}})
	f.mustCycle()
	f.r.SetIntents("tier", nil)
	f.mustCycle()
	if got := weight(); got != "39" {
		t.Errorf("cpu.weight after the intent is withdrawn = %s, want kubelet's 39 back", got)
	}
}
