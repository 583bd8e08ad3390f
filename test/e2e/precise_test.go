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

package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	"github.com/waterline-dev/waterline/pkg/agent/resctl/resctltest"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// throttleEvent is one Throttled event of the agent, parsed: the message
// says the node's usage, the line, the gap, the pod's new quota and what
// it releases (pkg/core/qos's precise throttle).
type throttleEvent struct {
	pod                      string
	at                       time.Time
	rv                       uint64
	usage, line, gap         int64
	quota, released, leftGap int64
}

// cycle identifies the agent cycle an event was planned in: one sample's
// usage against one line.
func (e throttleEvent) cycle() string { return fmt.Sprintf("%d/%d/%d", e.usage, e.line, e.gap) }

var throttleMessage = regexp.MustCompile(`usage (\d+) over throttle line (\d+) \(.*\) by (\d+): quota \S+ -> (\d+)m releases (\d+), (\d+) left`)

// throttleEvents are the agent's Throttled events on the pods of ns.
func (s *system) throttleEvents(t *testing.T, ns string) []throttleEvent {
	t.Helper()
	evs, err := s.c.Kube.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: fields.Set{"reason": "Throttled"}.String()})
	if err != nil {
		t.Fatal(err)
	}
	var out []throttleEvent
	for _, e := range evs.Items {
		if e.Source.Component != "waterline-agent" && e.ReportingController != "waterline-agent" {
			continue
		}
		m := throttleMessage.FindStringSubmatch(e.Message)
		if m == nil {
			t.Errorf("a Throttled event on %s does not state the gap and the release: %q", e.InvolvedObject.Name, e.Message)
			continue
		}
		n := make([]int64, 6)
		for i := range n {
			n[i], _ = strconv.ParseInt(m[i+1], 10, 64)
		}
		rv, _ := strconv.ParseUint(e.ResourceVersion, 10, 64)
		at := e.FirstTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		out = append(out, throttleEvent{pod: e.InvolvedObject.Name, at: at, rv: rv,
			usage: n[0], line: n[1], gap: n[2], quota: n[3], released: n[4], leftGap: n[5]})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].at.Equal(out[j].at) {
			return out[i].at.Before(out[j].at)
		}
		return out[i].rv < out[j].rv
	})
	return out
}

// cores measures how many cores each cgroup used over d, from their CPU
// time (the agent's layout: v1 or v2).
func (s *system) cores(t *testing.T, cgs map[string]string, d time.Duration) map[string]float64 {
	t.Helper()
	read := func() map[string]uint64 {
		out := map[string]uint64{}
		for name, cg := range cgs {
			v, err := s.node.CgroupCPUNanos(cg)
			if err != nil {
				t.Fatalf("Reading the CPU time of %s (%s): %v", name, cg, err)
			}
			out[name] = v
		}
		return out
	}
	start, a := time.Now(), read()
	time.Sleep(d)
	b, elapsed := read(), time.Since(start)
	out := map[string]float64{}
	for name := range cgs {
		out[name] = float64(b[name]-a[name]) / float64(elapsed.Nanoseconds())
	}
	return out
}

// testThrottleOnlyAsNeeded: four Batch burners (200m limits) run beside a
// Prod pod whose burner the test switches on and off (200m limit). The
// agent sees only the node's pods (the proc view), and the node's cgroup
// outweighs other work on the machine, so the node's load is the test's. The test measures the node with the
// Prod burner off and on, then sets the throttle line so that the Prod
// load, when it comes, crosses it by a gap about half of what one Batch
// pod uses (and the restore line halfway down to the node without it). Switching
// the Prod burner on, the agent must throttle fewer Batch pods than it
// could, the first of them releasing the whole gap its Events state,
// never the Prod pod, and the node settles at the line. Switching it off,
// every quota comes back.
func (s *system) testThrottleOnlyAsNeeded(t *testing.T) {
	s.ownTheNode(t)
	ns := s.namespace(t, "precise")
	ctl := filepath.Join(s.node.Dir, "precise-ctl")
	if err := os.MkdirAll(ctl, 0o755); err != nil {
		t.Fatal(err)
	}
	burn := filepath.Join(ctl, "burn")
	prodLoad := func(on bool) {
		t.Helper()
		var err error
		if on {
			err = os.WriteFile(burn, nil, 0o644)
		} else {
			err = os.Remove(burn)
		}
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	// A busy loop while /ctl/burn exists: test is a shell builtin, so
	// the loop forks nothing; off, it checks five times a second.
	s.createPod(t, ns, podSpec{name: "prod", class: "waterline-prod", cpuRequest: "200m", cpuLimit: "200m", hostDir: ctl,
		script: "trap 'exit 0' TERM; while :; do if [ -e /ctl/burn ]; then :; else sleep 0.2; fi; done"})
	batch := []string{"batch-1", "batch-2", "batch-3", "batch-4"}
	for _, b := range batch {
		s.createPod(t, ns, podSpec{name: b, class: "waterline-batch", burners: 1, cpuRequest: "100m", cpuLimit: "200m"})
	}
	pods := s.waitRunning(t, ns, append([]string{"prod"}, batch...)...)
	layout, err := s.node.Layout()
	if err != nil {
		t.Fatal(err)
	}
	cgs := map[string]string{"node": layout.KubepodsCgroup()}
	batchPods, limits := map[string]*corev1.Pod{}, map[string]int64{}
	for _, b := range batch {
		batchPods[b], limits[b] = pods[b], 200
		cgs[b] = layout.PodCgroup(pods[b].UID, pods[b].Status.QOSClass)
	}

	// Measure the node (its pods) with the Prod burner off and on; again,
	// up to three times, while a moment's contention hides the step.
	var off, on map[string]float64
	var minBatch, step, gap float64
	for attempt := 1; ; attempt++ {
		time.Sleep(2 * time.Second)
		off = s.cores(t, cgs, 5*time.Second)
		prodLoad(true)
		time.Sleep(2 * time.Second)
		on = s.cores(t, cgs, 5*time.Second)
		prodLoad(false)
		minBatch = math.Inf(1)
		for _, b := range batch {
			minBatch = min(minBatch, off[b], on[b])
		}
		step = on["node"] - off["node"]
		gap = min(minBatch/2, step/3)
		t.Logf("The node's pods use %.0fm with the Prod burner off, %.0fm on (a step of %.0fm); the least busy Batch pod %.0fm; load average %s",
			1000*off["node"], 1000*on["node"], 1000*step, 1000*minBatch, testutil.LoadAverage())
		if gap >= 0.04 || attempt == 3 {
			break
		}
	}
	capMilli := 1000 * s.allocatableCPU(t)
	if gap < 0.04 {
		t.Fatalf("the Prod burner adds %.0fm and a Batch pod uses %.0fm: too little for a gap above the agent's noise (the machine is busy: load average %s)",
			1000*step, 1000*minBatch, testutil.LoadAverage())
	}
	// Lines are whole percents of the node's CPU: the gap is at least the
	// one planned, and at most 1 % more.
	line := int32(math.Floor(100 * (1000*on["node"] - 1000*gap) / capMilli))
	// The restore line halfway between the node without the Prod load
	// and the throttle line (at which a throttled node settles).
	restore := int32(math.Round(100 * (1000*off["node"] + float64(line)*capMilli/100) / 2 / capMilli))
	if restore < 1 || restore >= line {
		t.Fatalf("no room for a restore line between the node without the Prod load (%.0fm) and the throttle line %d %%", 1000*off["node"], line)
	}
	t.Logf("Throttle line %d %% (%.0fm), restore line %d %% (%.0fm): the Prod load should cross the throttle line by about %.0fm",
		line, float64(line)*capMilli/100, restore, float64(restore)*capMilli/100, 1000*on["node"]-float64(line)*capMilli/100)
	s.nodeQOS(t, "precise", v1alpha1.NodeQOSSpec{
		CPU:            &v1alpha1.CPUWaterlines{ThrottlePercent: ptr.To(line), RestorePercent: ptr.To(restore)},
		AvoidanceCount: ptr.To[int32](2), RestoreCount: ptr.To[int32](2),
	})
	// Under the line, nothing is throttled.
	time.Sleep(4 * time.Second)
	if got := s.throttled(t, batchPods, limits); len(got) > 0 {
		t.Fatalf("with the Prod burner off (%.0fm, under the line) the agent throttled %v; events: %+v", 1000*off["node"], got, s.throttleEvents(t, ns))
	}

	// The Prod load rises over the line.
	prodLoad(true)
	var first []throttleEvent
	testutil.Eventually(t, 90*time.Second, time.Second, func() (bool, error) {
		evs := s.throttleEvents(t, ns)
		if len(evs) == 0 {
			return false, fmt.Errorf("no Throttled event; throttled in cgroups: %v", s.throttled(t, batchPods, limits))
		}
		first = nil
		for _, e := range evs {
			if e.cycle() == evs[0].cycle() {
				first = append(first, e)
			}
		}
		return true, nil
	}, "waiting for the agent to throttle a Batch pod under the Prod load")
	var released int64
	var names []string
	for _, e := range first {
		released += e.released
		names = append(names, fmt.Sprintf("%s(quota %dm, releases %dm)", e.pod, e.quota, e.released))
		if !slices.Contains(batch, e.pod) {
			t.Errorf("the agent throttled %s, not a Batch pod", e.pod)
		}
	}
	f := first[0]
	t.Logf("First throttle: node at %dm over the line %dm by %dm: %s", f.usage, f.line, f.gap, strings.Join(names, ", "))
	if len(first) >= len(batch) {
		t.Errorf("the agent throttled all %d Batch pods for a gap of %dm that one pod's release closes (each uses about %.0fm): %s",
			len(first), f.gap, 1000*minBatch, strings.Join(names, ", "))
	}
	if released < f.gap || first[len(first)-1].leftGap != 0 {
		t.Errorf("the throttled pods release %dm, short of the gap of %dm the agent stated (%s)", released, f.gap, strings.Join(names, ", "))
	}
	// The quotas are in the pods' kubelet-made cgroups, the Prod pod's
	// untouched.
	testutil.Eventually(t, 10*time.Second, 200*time.Millisecond, func() (bool, error) {
		for _, e := range first {
			if q := s.podQuota(t, batchPods[e.pod]); q == limits[e.pod] {
				return false, fmt.Errorf("%s's cgroup quota is still its limit's %dm", e.pod, q)
			}
		}
		return true, nil
	}, "waiting for the throttled quotas in the pods' cgroups")
	if q := s.podQuota(t, pods["prod"]); q != 200 {
		t.Errorf("the Prod pod's cgroup quota is %dm, want its limit's 200m (untouched)", q)
	}
	s.checkQuotasSurviveKubelet(t, ns, batchPods, limits, float64(line)/100)

	// The node settles at the line: its reported usage (an average over
	// the aggregate window, taken a window after the throttle) is not
	// over it by more than the samples' noise.
	time.Sleep(aggregateSeconds * time.Second)
	usage := 1000 * s.nodeCPUFraction(t) * s.allocatableCPU(t)
	lineMilli := float64(line) * capMilli / 100
	t.Logf("A window after the throttle the node uses %.0fm against the line's %.0fm; Batch pods throttled now: %v",
		usage, lineMilli, s.throttled(t, batchPods, limits))
	if usage > lineMilli+0.02*capMilli {
		t.Errorf("the node uses %.0fm a window after the throttle, over the line's %.0fm", usage, lineMilli)
	}

	// The Prod load falls: every quota comes back.
	prodLoad(false)
	var left []string
	testutil.Eventually(t, 90*time.Second, time.Second, func() (bool, error) {
		left = s.throttled(t, batchPods, limits)
		return len(left) == 0, fmt.Errorf("still throttled: %v; node at %.0f %%", left, 100*s.nodeCPUFraction(t))
	}, "waiting for the agent to restore every Batch quota once the Prod load is gone")
	t.Logf("All Batch quotas restored")
}

// ownTheNode points the agent at the node's pods only (the proc view) and
// makes the node's cgroup outweigh other work on the machine until the
// scenario ends, so that the node's load is the scenario's own. The node's
// cgroup competes, as one, with every process outside it: on a busy shared
// machine it gets a small share, its pods run far under their quotas, a
// Prod load cannot raise its usage (it only takes from the Batch pods), and
// other work keeps the machine over lines the scenario sets for its pods.
// For the scenario the node weighs as much as 64 busy processes; its pods
// stay capped by their quotas, so the rest of the machine keeps the rest.
func (s *system) ownTheNode(t *testing.T) {
	t.Helper()
	// The integration tests' real-cgroup burners run under the machine's
	// heaviest weight: not beside this scenario.
	resctltest.LockMachineCPU(t)
	s.view.SetMode(testutil.ViewPods)
	t.Cleanup(func() { s.view.SetMode(testutil.ViewMachine) })
	undo, err := s.node.SetCPUShares(64 * 1024)
	if err != nil {
		t.Fatalf("Weighting the node's cgroup: %v", err)
	}
	t.Cleanup(func() {
		if err := undo(); err != nil {
			t.Errorf("Putting the node's cgroup weight back: %v", err)
		}
	})
}
