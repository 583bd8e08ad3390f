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
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/waterline-dev/waterline/pkg/sim/sweep"
	"github.com/waterline-dev/waterline/pkg/trace"
)

func TestSimSweepFlagValidation(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string // each must appear in the error
	}{
		{"output", []string{"-o=table"}, []string{`--output: Unsupported value: "table"`}},
		{"nodes", []string{"--nodes=3"}, []string{"--nodes: Invalid value: 3"}},
		{"too many nodes", []string{"--nodes=100000000"}, []string{"--nodes: Invalid value: 100000000: must be in [4, 20000]"}},
		{"too long", []string{"--duration=2161h"}, []string{`--duration: Invalid value: "2161h0m0s"`}},
		{"json-out not writable", []string{"--json-out=/no/such/dir/sweep.json"}, []string{"--json-out: open /no/such/dir/sweep.json"}},
		{"throttle line", []string{"--throttle-lines=70,100"}, []string{"--throttle-lines[1]: Invalid value: 100"}},
		{"threshold", []string{"--thresholds=0"}, []string{"--thresholds[0]: Invalid value: 0"}},
		{"budget", []string{"--budget-fraction=2"}, []string{"--budget-fraction: Invalid value: 2"}},
		{"seeds", []string{"--test-seeds=1,1"}, []string{"--test-seeds[1]: Duplicate value: 1"}},
		{"workload", []string{"--workloads=synthetic,/no/such/trace"}, []string{`--workloads[1]: Invalid value: "/no/such/trace"`}},
		{"workload twice", []string{"--workloads=synthetic,openb,synthetic"}, []string{`--workloads[2]: Duplicate value: "synthetic"`}},
		{"all at once", []string{"--nodes=1", "-o=xml", "--duration=15s"}, []string{"--nodes", "--output", "--duration"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runSimCmd(t, append([]string{"sweep"}, tt.args...)...)
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

// TestSimSweepRuns: a tiny sweep prints its verdict table and, as JSON,
// the defaults as the first point of the train grid and a test per seed.
func TestSimSweepRuns(t *testing.T) {
	args := []string{"sweep", "--workloads=synthetic", "--nodes=6", "--duration=1h", "--test-seeds=1,2",
		"--throttle-lines=80", "--thresholds=85"}
	out, _, err := runSimCmd(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| workload | stronger baseline", "| synthetic |", "#### synthetic", "(defaults)", "(chosen)"} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runSimCmd(t, append(args, "-o=json")...)
	if err != nil {
		t.Fatal(err)
	}
	var res sweep.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	if len(res.Workloads) != 1 || len(res.Workloads[0].Tests) != 2 || len(res.Workloads[0].Train.Points) != 2 {
		t.Fatalf("want 1 workload, 2 tests, 2 train points; got %+v", res.Workloads)
	}
	if got := res.Workloads[0].Train.Points[0].Setting; got != sweep.DefaultSetting() {
		t.Errorf("first train point %+v, want the defaults %+v", got, sweep.DefaultSetting())
	}
}

// TestSimSweepJSONOutKeptOnFailure: a sweep that fails leaves the file
// --json-out names as it was, and one that succeeds replaces it, leaving
// nothing else behind.
func TestSimSweepJSONOutKeptOnFailure(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	if err := os.Mkdir(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	// Detected as an Alibaba trace, refused when the sweep loads it.
	if err := os.WriteFile(filepath.Join(bad, trace.MachineUsageFile), []byte("m_1,0,50,50,,,1,1,1\nm_1,x,50,50,,,1,1,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "sweep.json")
	const previous = `{"a previous": "result"}`
	if err := os.WriteFile(out, []byte(previous), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"sweep", "--nodes=4", "--duration=10m", "--test-seeds=1", "--throttle-lines=80", "--thresholds=85", "--json-out=" + out}
	if _, _, err := runSimCmd(t, append(args, "--workloads="+bad)...); err == nil {
		t.Fatal("the sweep of a bad trace succeeded")
	}
	if got, err := os.ReadFile(out); err != nil || string(got) != previous {
		t.Errorf("after a failed sweep, --json-out holds %q (%v), want the previous %q", got, err, previous)
	}
	if _, _, err := runSimCmd(t, append(args, "--workloads=synthetic")...); err != nil {
		t.Fatal(err)
	}
	var res sweep.Result
	if got, err := os.ReadFile(out); err != nil || json.Unmarshal(got, &res) != nil || len(res.Workloads) != 1 {
		t.Errorf("after a sweep, --json-out holds %q (%v), want its result", got, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the sweeps left %v in the folder, want only bad and sweep.json", entries)
	}
	if _, _, err := runSimCmd(t, append(args, "--workloads=synthetic", "--json-out="+dir)...); err == nil || !strings.Contains(err.Error(), "--json-out: "+dir+" is a directory") {
		t.Errorf("--json-out naming a folder: error %v", err)
	}
}
