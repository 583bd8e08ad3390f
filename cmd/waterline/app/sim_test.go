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
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/waterline-dev/waterline/pkg/sim"
	"github.com/waterline-dev/waterline/pkg/trace"
)

func runSimCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := NewCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append([]string{"sim"}, args...))
	err = cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

func TestSimFlagValidation(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // each must appear in the error
	}{
		{"nodes", []string{"--nodes=0"}, []string{"--nodes: Invalid value: 0"}},
		// A few zeros too many must not fill the machine's memory while
		// the workload is built.
		{"too many nodes", []string{"--nodes=100000000"}, []string{"--nodes: Invalid value: 100000000: must be in [1, 20000]"}},
		{"too long", []string{"--duration=2161h"}, []string{`--duration: Invalid value: "2161h0m0s": must be at most 2160h0m0s`}},
		{"parallel", []string{"--parallel=-1"}, []string{"--parallel: Invalid value: -1"}},
		{"step not whole seconds", []string{"--step=1500ms"}, []string{"--step: Invalid value: \"1.5s\""}},
		{"step not dividing the agents' intervals", []string{"--step=7s", "--duration=7m"}, []string{"--step: Invalid value: \"7s\": must divide 10s"}},
		{"duration", []string{"--duration=25s"}, []string{"--duration: Invalid value: \"25s\""}},
		{"unknown policy and duplicate", []string{"--policies=waterline,best,waterline"},
			[]string{`--policies[1]: Unsupported value: "best"`, `--policies[2]: Duplicate value: "waterline"`}},
		{"output", []string{"-o=yaml"}, []string{`--output: Unsupported value: "yaml"`}},
		{"workload", []string{"--workload=/no/such/trace"}, []string{`--workload: Invalid value: "/no/such/trace"`}},
		{"batch load not a number", []string{"--batch-load=NaN"}, []string{"invalid flags: --batch-load: Invalid value: NaN"}},
		// Every bad flag is reported at once.
		{"all at once", []string{"--nodes=-1", "-o=xml", "--batch-load=900"},
			[]string{"--nodes", "--output", "--batch-load"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runSimCmd(t, append(tt.args, "--out=", "--no-progress")...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestSimParamsDurationWholeSteps: a JSON file of synthetic parameters
// whose duration is not a multiple of --step is refused, as --duration
// is, rather than simulated for the whole steps and reported over the
// longer duration.
func TestSimParamsDurationWholeSteps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "params.json")
	if err := os.WriteFile(path, []byte(`{"nodes": 2, "duration": "15m5s"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := runSimCmd(t, "--workload="+path, "--out=", "--no-progress")
	if err == nil || !strings.Contains(err.Error(), "lasts 15m5s, not a multiple of --step (10s)") {
		t.Errorf("error %v, want one saying 15m5s is not a multiple of --step; stdout:\n%s", err, stdout)
	}
}

// TestSimCalibrationReadFirst: a bad --calibration stops the command
// before the workload is built (minutes and gigabytes for a large one):
// here the workload would fail too, and the error is the calibration's.
func TestSimCalibrationReadFirst(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, trace.MachineUsageFile), []byte("m_1,0,50,50,,,1,1,1\nm_1,x,50,50,,,1,1,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cal := filepath.Join(dir, "calibration.json")
	if err := os.WriteFile(cal, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := runSimCmd(t, "--workload="+dir, "--calibration="+cal, "--out=", "--no-progress")
	if err == nil || !strings.HasPrefix(err.Error(), "--calibration: ") {
		t.Errorf("error %v, want the --calibration's, before the workload is loaded", err)
	}
}

// TestSimRefusesUnwritableOut checks that an --out the report cannot be
// written to stops the command before it simulates, not after.
func TestSimRefusesUnwritableOut(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := runSimCmd(t, "--out="+filepath.Join(file, "report"), "--no-progress")
	if err == nil || !strings.Contains(err.Error(), "--out: ") {
		t.Fatalf("error %v, want one naming --out", err)
	}
	if stdout != "" {
		t.Errorf("it simulated before refusing --out; printed:\n%s", stdout)
	}
}

func TestSimRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "report")
	stdout, stderr, err := runSimCmd(t, "--nodes=6", "--duration=2h", "--seed=3", "--out="+dir, "--no-progress")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	lines := strings.Split(stdout, "\n")
	if !strings.HasPrefix(lines[0], "workload synthetic: 6 nodes") {
		t.Errorf("first line %q", lines[0])
	}
	if diff := cmp.Diff([]string{"METRIC", "K8S-DEFAULT", "K8S-BESTEFFORT", "WATERLINE"}, strings.Fields(lines[2])); diff != "" {
		t.Errorf("table header (-want +got):\n%s", diff)
	}
	if want := "Report: " + filepath.Join(dir, "index.html"); !strings.Contains(stderr, want) {
		t.Errorf("stderr %q does not say %q", stderr, want)
	}
	for _, f := range []string{"index.html", "result.json", "cpu.svg", "harm.svg", "qos.svg", "evictions.svg", "tiers.svg"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("report file missing: %v", err)
		}
		// --out was an absolute path: the report shows its last element.
		if strings.Contains(string(data), filepath.Dir(dir)) {
			t.Errorf("%s shows the absolute path %s", f, filepath.Dir(dir))
		}
	}
	if strings.Contains(stderr, "[") {
		t.Errorf("a progress bar was drawn with --no-progress: %q", stderr)
	}
}

func TestSimJSONAndProgress(t *testing.T) {
	stdout, stderr, err := runSimCmd(t, "--nodes=4", "--duration=1h", "--policies=waterline,k8s-default", "-o=json", "--out=", "--progress")
	if err != nil {
		t.Fatal(err)
	}
	var res sim.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not a result: %v\n%s", err, stdout)
	}
	var got []sim.Policy
	for _, p := range res.Policies {
		got = append(got, p.Policy)
	}
	if diff := cmp.Diff([]sim.Policy{sim.PolicyWaterline, sim.PolicyK8sDefault}, got); diff != "" {
		t.Errorf("policies (-want +got):\n%s", diff)
	}
	if !strings.Contains(stderr, "100%") {
		t.Errorf("--progress drew no finished bar: %q", stderr)
	}
}

func TestSimBadTraceRow(t *testing.T) {
	dir := t.TempDir()
	csv := "m_1,0,50,80,,,1,1,1\nm_1,60,150,80,,,1,1,1\n"
	if err := os.WriteFile(filepath.Join(dir, trace.MachineUsageFile), []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := runSimCmd(t, "--workload="+dir, "--nodes=2", "--duration=10m", "--out=", "--no-progress")
	if err == nil {
		t.Fatal("a CPU utilisation of 150 % was accepted")
	}
	// The error names the file, the line and the column.
	for _, want := range []string{trace.MachineUsageFile + ":2", "cpu_util_percent", "150"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

// TestSimCalibration: --calibration fits the harm model's κ to a
// benchmark's calibration.json and the result is measured with it; a file
// too small to fit is refused with the reason.
func TestSimCalibration(t *testing.T) {
	dir := t.TempDir()
	cal := sim.Calibration{NodeCPUs: 2}
	for i := range 20 {
		b := 0.1 + 0.08*float64(i)
		// κ = 6: L = 1 + 6 · (b/2) · (0.6/2).
		cal.Points = append(cal.Points, sim.CalibrationPoint{Scenario: "kubernetes", BatchCores: b, ProdCores: 0.6, P99Ratio: 1 + 6*(b/2)*0.3})
	}
	path := filepath.Join(dir, "calibration.json")
	data, _ := json.Marshal(cal)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runSimCmd(t, "--nodes=4", "--duration=1h", "--policies=k8s-besteffort", "-o=json", "--out=", "--no-progress", "--calibration="+path)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var res sim.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if got := res.Policies[0].Summary.Harm.InterferencePercent; got < 599 || got > 601 {
		t.Errorf("harm model κ %v %%, want 600 (fitted to %s)", got, path)
	}
	if !strings.Contains(stderr, "calibrated from "+path) {
		t.Errorf("stderr %q does not say where κ came from", stderr)
	}

	// The report's command line shows the file, not the folders of the
	// machine that ran it.
	out := filepath.Join(t.TempDir(), "report")
	if _, stderr, err := runSimCmd(t, "--nodes=2", "--duration=10m", "--policies=k8s-besteffort", "--out="+out, "--no-progress", "--calibration="+path); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	page, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(page), dir) || !strings.Contains(string(page), "--calibration=calibration.json") {
		t.Errorf("the report does not show --calibration by its file name alone (absolute path %s)", path)
	}

	cal.Points = cal.Points[:3]
	data, _ = json.Marshal(cal)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runSimCmd(t, "--nodes=4", "--duration=1h", "--out=", "--no-progress", "--calibration="+path); err == nil || !strings.Contains(err.Error(), "--calibration") || !strings.Contains(err.Error(), "usable points") {
		t.Errorf("a 3-window calibration: error %v, want one naming the flag and the reason", err)
	}
}
