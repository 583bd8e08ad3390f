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

package app

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func valuesFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSimValuesEmptyIsTheDefaults: a values file that sets nothing is the
// chart's defaults, which the simulation's defaults are: the run is the
// same to the byte, through the CRDs' defaulting and the scheduler's.
func TestSimValuesEmptyIsTheDefaults(t *testing.T) {
	args := []string{"--nodes=6", "--duration=2h", "-o=json", "--out=", "--no-progress"}
	plain, _, err := runSimCmd(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	withValues, stderr, err := runSimCmd(t, append(args, "--values="+valuesFile(t, "# nothing set\n"))...)
	if err != nil {
		t.Fatal(err)
	}
	if plain != withValues {
		t.Error("an empty values file gave another result than the defaults")
	}
	if !strings.Contains(stderr, "nodeQOS.spec.dryRun is true (the chart's default): simulated as false") {
		t.Errorf("stderr %q does not say the chart's dry run is simulated as acting", stderr)
	}
}

// TestSimValuesRefusesNamingTheField: what the cluster would refuse is
// refused before anything runs, each field as the values file spells it.
func TestSimValuesRefusesNamingTheField(t *testing.T) {
	path := valuesFile(t, `nodeQOS:
  spec:
    cpu: {throttlePercent: 80, evictPercent: 75}
    bogus: 1
colocationPolicy:
  spec:
    tiers: {batchCPUThresholdPercent: 500, midIncludeUnallocated: true}
scheduler:
  loadAwareWeight: 0
  loadAware:
    args: {usageThreshold: {cpu: 70}}
`)
	stdout, _, err := runSimCmd(t, "--values="+path, "--out=", "--no-progress")
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"nodeQOS.spec.bogus: Forbidden: unknown field",
		"nodeQOS.spec.cpu.evictPercent: Invalid value: evictPercent must be greater than throttlePercent",
		"colocationPolicy.spec.tiers.batchCPUThresholdPercent: Invalid value: 500",
		"colocationPolicy.spec.tiers.midIncludeUnallocated",
		"scheduler.loadAwareWeight: Invalid value: 0",
		`scheduler.loadAware.args: Invalid value: "": json: unknown field "usageThreshold"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
	if stdout != "" {
		t.Errorf("it simulated before refusing the values:\n%s", stdout)
	}

	for _, tc := range []struct{ body, want string }{
		{"colocationPolicy: {create: false}\n", "colocationPolicy.create: Invalid value: false"},
		{"nodeQOS: {create: nope}\n", "nodeQOS.create: Invalid value"},
		{"scheduler: {loadAware: {args: {usageThresholds: {cpu: 170}}}}\n", "scheduler.loadAware.args.usageThresholds[cpu]"},
		{"scheduler: {loadAware: {args: {aggregated: {usageThresholds: {cpu: 70}, usageAggregationType: p95}}}}\n", "scheduler.loadAware.args.aggregated: Forbidden"},
		{"nodeQOS: [not, a, map]\n", "nodeQOS: Invalid value"},
		{"scheduler: {loadAware: {args: 7}}\n", "scheduler.loadAware.args: Invalid value: 7"},
	} {
		if _, err := loadChartValues(t.Context(), valuesFile(t, tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("values %q: error %v, want one containing %q", tc.body, err, tc.want)
		}
	}
}

// TestSimValuesMergeAsHelm: a values file is merged over the chart's
// defaults as Helm merges it, and what it sets reaches the simulation.
func TestSimValuesMergeAsHelm(t *testing.T) {
	s, err := loadChartValues(t.Context(), valuesFile(t, `nodeQOS:
  spec:
    cpu: {throttlePercent: 75}
    memory: null
colocationPolicy:
  spec:
    tiers: {batchCPUThresholdPercent: 85}
    profiles: [{name: mine, band: batch, namespaceSelector: {matchLabels: {team: ml}}}]
scheduler:
  loadAwareWeight: 3
  loadAware:
    args: {usageThresholds: {cpu: 85, memory: 95}}
`))
	if err != nil {
		t.Fatal(err)
	}
	cpu := s.nodeQOS[0].Spec.CPU
	if *cpu.ThrottlePercent != 75 || *cpu.ForbidSchedulingPercent != 70 || *cpu.RestorePercent != 60 || *cpu.EvictPercent != 80 {
		t.Errorf("cpu lines %d/%d/%d/%d (forbid/throttle/restore/evict), want the chart's 70/-/60/80 with throttle 75",
			*cpu.ForbidSchedulingPercent, *cpu.ThrottlePercent, *cpu.RestorePercent, *cpu.EvictPercent)
	}
	if s.nodeQOS[0].Spec.Memory != nil || s.nodeQOS[0].Spec.DryRun {
		t.Errorf("memory %+v dryRun %v: want memory removed by null, dry run simulated as acting", s.nodeQOS[0].Spec.Memory, s.nodeQOS[0].Spec.DryRun)
	}
	if got := *s.policies[0].Spec.Tiers.BatchCPUThresholdPercent; got != 85 {
		t.Errorf("batch CPU threshold %d, want 85", got)
	}
	if len(s.policies[0].Spec.Profiles) != 3 || s.policies[0].Spec.Profiles[0].Name == "mine" {
		t.Errorf("profiles %+v: want the simulation's three", s.policies[0].Spec.Profiles)
	}
	if s.loadAwareWeight != 3 || s.loadAware.UsageThresholds[corev1.ResourceCPU] != 85 {
		t.Errorf("LoadAware weight %d, cpu threshold %d: want 3 and 85", s.loadAwareWeight, s.loadAware.UsageThresholds[corev1.ResourceCPU])
	}
	if len(s.notes) != 2 || !strings.Contains(s.notes[1], "colocationPolicy.spec.profiles (1) are not simulated") {
		t.Errorf("notes %q: want the dry run and the profiles", s.notes)
	}

	pool, err := loadChartValues(t.Context(), valuesFile(t, "nodeQOS: {spec: {nodeSelector: {matchLabels: {pool: colo}}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if pool.nodeQOS[0].Spec.NodeSelector != nil || !strings.Contains(strings.Join(pool.notes, "\n"), "nodeQOS.spec.nodeSelector is not simulated") {
		t.Errorf("a NodeQOS for a pool: selector %v, notes %q; want it applied to every node, and said", pool.nodeQOS[0].Spec.NodeSelector, pool.notes)
	}

	off, err := loadChartValues(t.Context(), valuesFile(t, "nodeQOS: {create: false}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if off.nodeQOS == nil || len(off.nodeQOS) != 0 {
		t.Errorf("nodeQOS.create false: NodeQOS %v, want none (an empty, non-nil list)", off.nodeQOS)
	}
}

// TestChartRefusesWhatTheCRDsRefuse: the chart refuses NodeQOS and
// ColocationPolicy specs the cluster would refuse -- by its templates' check
// of the lines' order and by the CRDs' schemas in values.schema.json
// (charts/waterline/ci/bad/nodeqos-*.yaml and policy-*.yaml, each checked
// by hack/verify-chart.sh to be refused by `helm template`). Admitted as
// the cluster would admit them (the CRDs' own schemas and rules, offline),
// each of those values files must be refused on the same field, so the
// chart never refuses what the cluster accepts in these cases.
func TestChartRefusesWhatTheCRDsRefuse(t *testing.T) {
	bad := filepath.Join("..", "..", "..", "charts", "waterline", "ci", "bad")
	nodeQOS, err := filepath.Glob(filepath.Join(bad, "nodeqos-*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := filepath.Glob(filepath.Join(bad, "policy-*.yaml"))
	files := append(nodeQOS, policy...)
	if err != nil || len(nodeQOS) < 6 || len(policy) < 2 {
		t.Fatalf("want the chart's NodeQOS bad cases, found %v (%v)", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			body, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want, _, _ := strings.Cut(strings.TrimPrefix(strings.SplitN(string(body), "\n", 2)[0], "# want: "), " ")
			if strings.HasPrefix(want, "at") {
				// A values.schema.json refusal: "at '/nodeQOS/spec/cpu/x'",
				// a list index as in "/profiles/0/name" (profiles[0].name).
				_, after, _ := strings.Cut(strings.SplitN(string(body), "\n", 2)[0], "'/")
				path, _, _ := strings.Cut(after, "'")
				want = ""
				for i, part := range strings.Split(path, "/") {
					if _, err := strconv.Atoi(part); err == nil {
						want += "[" + part + "]"
					} else if i == 0 {
						want = part
					} else {
						want += "." + part
					}
				}
			}
			_, err = loadChartValues(t.Context(), file)
			if err == nil {
				t.Fatalf("the CRD admits what the chart refuses (%s)", want)
			}
			if !strings.Contains(err.Error(), want+":") && !strings.Contains(err.Error(), want+".") {
				t.Errorf("the CRD refuses %s, not on %s: %v", filepath.Base(file), want, err)
			}
		})
	}
}

// TestSimValuesRefusesUnknownKeys: a key the chart's values.schema.json
// does not know -- a misspelt section or setting -- is refused as helm
// install refuses it, rather than simulating the defaults in its place;
// the chart's own values files are still admitted.
func TestSimValuesRefusesUnknownKeys(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"nodeQos: {spec: {cpu: {throttlePercent: 60}}}\n", "nodeQos: Forbidden: unknown field"},
		{"scheduler: {loadAwareWieght: 3}\n", "scheduler.loadAwareWieght: Forbidden: unknown field"},
		{"scheduler: {loadAware: {arg: {usageThresholds: {cpu: 60}}}}\n", "scheduler.loadAware.arg: Forbidden: unknown field"},
		{"colocationPolicy: {specs: {tiers: {batchCPUThresholdPercent: 85}}}\n", "colocationPolicy.specs: Forbidden: unknown field"},
	} {
		if _, err := loadChartValues(t.Context(), valuesFile(t, tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("values %q: error %v, want one containing %q", tc.body, err, tc.want)
		}
	}
	ci := filepath.Join("..", "..", "..", "charts", "waterline", "ci")
	if _, err := loadChartValues(t.Context(), filepath.Join(ci, "bad", "unknown-field.yaml")); err == nil || !strings.Contains(err.Error(), "manager.replica: Forbidden: unknown field") {
		t.Errorf("the chart's ci/bad/unknown-field.yaml: error %v, want manager.replica refused", err)
	}
	for _, name := range []string{"default-values.yaml", "empty-specs-values.yaml", "largest-values.yaml", "local-values.yaml"} {
		if _, err := loadChartValues(t.Context(), filepath.Join(ci, name)); err != nil {
			t.Errorf("the chart's ci/%s: %v", name, err)
		}
	}
}
