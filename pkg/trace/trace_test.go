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

package trace

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// sharedTrace returns the path of a shared trace folder, skipping the test
// loudly when the traces are not beside the repository.
func sharedTrace(t *testing.T, folder string) string {
	t.Helper()
	dir, err := FindShared(".", folder)
	if err != nil {
		t.Skipf("SKIP: real trace %s not available (%v); the traces live in shared/traces beside the repository", folder, err)
	}
	return dir
}

func TestMachineUsageRow(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		line string
		want MachineUsage
	}{{
		name: "full row",
		line: "m_1,60,41,92,1.5,2.5,43.04,33.08,5\n",
		want: MachineUsage{MachineID: "m_1", Time: 60, CPUPercent: 41, MemPercent: 92, MemGPS: 1.5, MKPI: 2.5, NetIn: 43.04, NetOut: 33.08, DiskIOPercent: 5},
	}, {
		name: "empty optional columns and the trace's invalid disk marker",
		line: "m_1,60,41,92,,,43.04,33.08,101\r\n",
		want: MachineUsage{MachineID: "m_1", Time: 60, CPUPercent: 41, MemPercent: 92, MemGPS: nan, MKPI: nan, NetIn: 43.04, NetOut: 33.08, DiskIOPercent: nan},
	}, {
		name: "empty utilisation is missing, not zero",
		line: "m_1,60,,,,,,,-1\n",
		want: MachineUsage{MachineID: "m_1", Time: 60, CPUPercent: nan, MemPercent: nan, MemGPS: nan, MKPI: nan, NetIn: nan, NetOut: nan, DiskIOPercent: nan},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NewMachineUsageReader(strings.NewReader(tc.line), "x.csv").Read()
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("row (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMachineUsageBadRows(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"bad time", "m_1,abc,1,2,,,3,4,5\n", `bad.csv:1: column time_stamp: "abc" is not an integer`},
		{"negative time on line 3", "m_1,0,1,2,,,3,4,5\n\nm_1,-5,1,2,,,3,4,5\n", "bad.csv:3: column time_stamp: -5 is negative"},
		{"cpu over 100", "m_1,0,150,2,,,3,4,5\n", "bad.csv:1: column cpu_util_percent: 150 is outside [0, 100]"},
		{"not a number", "m_1,0,1,x2,,,3,4,5\n", `bad.csv:1: column mem_util_percent: "x2" is not a finite number`},
		{"NaN is not a value", "m_1,0,NaN,2,,,3,4,5\n", `bad.csv:1: column cpu_util_percent: "NaN" is not a finite number`},
		{"too few fields", "m_1,0,1,2,,,3,4\n", "bad.csv:1: got 8 fields, want 9"},
		{"no machine", ",0,1,2,,,3,4,5\n", "bad.csv:1: column machine_id: empty"},
		{"time goes back", "m_1,60,1,2,,,3,4,5\nm_2,0,1,2,,,3,4,5\nm_1,30,1,2,,,3,4,5\n", "bad.csv:3: column time_stamp: 30 is before the previous row of machine m_1 (60)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadMachineSeries(NewMachineUsageReader(strings.NewReader(tc.input), "bad.csv"))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error = %v, want a *ParseError", err)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMachineSeriesGrouping(t *testing.T) {
	in := "m_1,0,10,50,,,1,1,1\nm_1,60,20,,,,1,1,1\nm_2,0,5,40,,,1,1,1\nm_1,60,30,55,,,1,1,1\n"
	got, err := ReadMachineSeries(NewMachineUsageReader(strings.NewReader(in), "x.csv"))
	if err != nil {
		t.Fatal(err)
	}
	want := []MachineSeries{{
		MachineID: "m_1",
		// t = 60 twice: the larger CPU (30) stays; memory was empty the first time.
		CPUPercent: Series{Times: []int64{0, 60}, Values: []float64{10, 30}},
		MemPercent: Series{Times: []int64{0, 60}, Values: []float64{50, 55}},
	}, {
		MachineID:  "m_2",
		CPUPercent: Series{Times: []int64{0}, Values: []float64{5}},
		MemPercent: Series{Times: []int64{0}, Values: []float64{40}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series (-want +got):\n%s", diff)
	}
}

// TestByteOrderMark: a file saved with a UTF-8 byte order mark reads as
// the same file without it -- the mark is not part of the first machine's
// ID (which would make it a second machine) nor of the first column's name.
func TestByteOrderMark(t *testing.T) {
	const bom = "\ufeff"
	in := "m_1,0,10,50,,,1,1,1\r\nm_1,60,20,55,,,1,1,1\r\n"
	want, err := ReadMachineSeries(NewMachineUsageReader(strings.NewReader(in), "x.csv"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadMachineSeries(NewMachineUsageReader(strings.NewReader(bom+in), "x.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("machine usage with a byte order mark (-want +got):\n%s", diff)
	}

	nr, err := NewOpenBNodeReader(strings.NewReader(bom+"sn,cpu_milli,memory_mib,gpu,model\r\nn0,32000,262144,0,\r\n"), "nodes.csv")
	if err != nil {
		t.Fatalf("node list with a byte order mark: %v", err)
	}
	if n, err := nr.Read(); err != nil || n.Name != "n0" {
		t.Errorf("node list with a byte order mark: %+v, %v", n, err)
	}
	header := strings.Join(bitbrainsColumns, ";\t")
	if _, err := NewVMReader(strings.NewReader(bom+header+"\r\n"), "1.csv"); err != nil {
		t.Errorf("VM file with a byte order mark: %v", err)
	}
}

// TestAlibabaV2018Sample checks the reader against the facts PROVENANCE.md
// states about the shared sample.
func TestAlibabaV2018Sample(t *testing.T) {
	dir := sharedTrace(t, AlibabaV2018Folder)
	machines, err := LoadMachineSeries(filepath.Join(dir, MachineUsageFile))
	if err != nil {
		t.Fatalf("LoadMachineSeries: %v", err)
	}
	type span struct {
		Rows        int
		First, Last int64
	}
	got := map[string]span{}
	rows := 0
	maxCPU := 0.0
	for _, m := range machines {
		got[m.MachineID] = span{m.CPUPercent.Len(), m.CPUPercent.Times[0], m.CPUPercent.Times[m.CPUPercent.Len()-1]}
		rows += m.CPUPercent.Len()
		for _, v := range m.CPUPercent.Values {
			maxCPU = max(maxCPU, v)
		}
	}
	// 100,002 rows, 16 machines m_1932 … m_1947; every cpu ≤ 94;
	// m_1932 covers 386,640 … 691,110 s and m_1947 10 … 188,370 s.
	if diff := cmp.Diff([]any{100002, 16, 94.0}, []any{rows, len(machines), maxCPU}); diff != "" {
		t.Errorf("rows, machines, max CPU (-want +got):\n%s", diff)
	}
	wantSpans := map[string]span{
		"m_1932": {3325, 386640, 691110},
		"m_1947": {1148, 10, 188370},
		"m_1937": {6828, 0, 691030},
	}
	for id, want := range wantSpans {
		if diff := cmp.Diff(want, got[id]); diff != "" {
			t.Errorf("machine %s (-want +got):\n%s", id, diff)
		}
	}
}

func TestMachineMeta(t *testing.T) {
	in := "m_1,0,219,17,96,100,USING\nm_1,5,219,17,96,x,USING\n"
	r := NewMachineMetaReader(strings.NewReader(in), "meta.csv")
	got, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	want := MachineMeta{MachineID: "m_1", Time: 0, FailureDomain1: "219", FailureDomain2: "17", CPUNum: 96, MemSize: 100, Status: "USING"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("row (-want +got):\n%s", diff)
	}
	if _, err := r.Read(); err == nil || err.Error() != `meta.csv:2: column mem_size: "x" is not a finite number` {
		t.Errorf("second row error = %v", err)
	}
	if _, err := r.Read(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last row: %v, want io.EOF", err)
	}
}

const bbHeader = "Timestamp [ms];\tCPU cores;\tCPU capacity provisioned [MHZ];\tCPU usage [MHZ];\tCPU usage [%];\tMemory capacity provisioned [KB];\tMemory usage [KB];\tDisk read throughput [KB/s];\tDisk write throughput [KB/s];\tNetwork received throughput [KB/s];\tNetwork transmitted throughput [KB/s]\n"

func TestVMSeries(t *testing.T) {
	in := bbHeader +
		"100;\t2;\t5000;\t100;\t2;\t1000;\t200;\t0;\t0;\t0;\t0\n" +
		"400;\t0;\t0.0;\t0.0;\t0.0;\t0;\t0;\t0;\t0;\t0;\t0\n" + // off: left out
		"700;\t2;\t6000;\t300;\t5;\t2000;\t250;\t0;\t0;\t0;\t0\n" +
		"700;\t2;\t6000;\t200;\t3;\t2000;\t400;\t0;\t0;\t0;\t0\n" // repeated time: larger values
	r, err := NewVMReader(strings.NewReader(in), "7.csv")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadVMSeries(r, "7")
	if err != nil {
		t.Fatal(err)
	}
	want := VMSeries{
		ID: "7", CPUCapacityMHz: 6000, MemCapacityKB: 2000,
		CPUUsageMHz: Series{Times: []int64{100, 700}, Values: []float64{100, 300}},
		MemUsageKB:  Series{Times: []int64{100, 700}, Values: []float64{200, 400}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("VM series (-want +got):\n%s", diff)
	}
}

func TestVMBadRows(t *testing.T) {
	row := func(fields string) string { return bbHeader + fields + "\n" }
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"wrong header", "Timestamp;CPU\n", `7.csv:1: header "Timestamp;CPU" is not the Bitbrains header`},
		{"empty file", "", "7.csv:1: empty file: want a header"},
		{"not a number", row("100;\t2;\t5000;\tlots;\t2;\t1000;\t200;\t0;\t0;\t0;\t0"), `7.csv:2: column CPU usage [MHZ]: "lots" is not a finite number`},
		{"negative", row("100;\t2;\t5000;\t1;\t2;\t1000;\t-200;\t0;\t0;\t0;\t0"), "7.csv:2: column Memory usage [KB]: -200 is negative"},
		{"missing fields", row("100;\t2;\t5000"), "7.csv:2: got 3 fields, want 11"},
		{"time goes back", row("100;\t2;\t5000;\t1;\t2;\t1000;\t200;\t0;\t0;\t0;\t0\n50;\t2;\t5000;\t1;\t2;\t1000;\t200;\t0;\t0;\t0;\t0"),
			"7.csv:3: column Timestamp [ms]: 50 is before the previous row"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewVMReader(strings.NewReader(tc.input), "7.csv")
			if err == nil {
				_, err = ReadVMSeries(r, "7")
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error = %v, want a *ParseError", err)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error = %q, want it to start with %q", err, tc.want)
			}
		})
	}
}

// TestBitbrainsSample checks the reader against the shared sample; the
// expected numbers were counted with awk over the rows with CPU capacity > 0.
func TestBitbrainsSample(t *testing.T) {
	dir := sharedTrace(t, BitbrainsFolder)
	vms, err := LoadVMDir(dir)
	if err != nil {
		t.Fatalf("LoadVMDir: %v", err)
	}
	if len(vms) != 50 {
		t.Fatalf("got %d VMs, want 50", len(vms))
	}
	type summary struct {
		ID             string
		Rows           int
		First, Last    int64
		CPUCap, MemCap float64
	}
	sum := func(vm VMSeries) summary {
		n := vm.CPUUsageMHz.Len()
		return summary{vm.ID, n, vm.CPUUsageMHz.Times[0], vm.CPUUsageMHz.Times[n-1], vm.CPUCapacityMHz, vm.MemCapacityKB}
	}
	want := []summary{
		// VM 1 runs all month; its memory was resized (largest 8 GiB).
		{"1", 8260, 1372629804, 1375221457, 5851.9989, 8388608},
		// VM 20 repeats times after it is switched off; 4,476 running rows.
		{"20", 4476, 1372629804, 1373975137, 2599.999724, 4194304},
		// VM 38 is off until the last days.
		{"38", 413, 1375097846, 1375221457, 5200.000454, 3145728},
	}
	// VMs are ordered by number: 1 … 50.
	got := []summary{sum(vms[0]), sum(vms[19]), sum(vms[37])}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("VMs (-want +got):\n%s", diff)
	}
}

func TestOpenB(t *testing.T) {
	t.Run("rows", func(t *testing.T) {
		nodes := "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,0,\nn1,64000,262144,2,P100\n"
		pods := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time,extra\n" +
			"p0,12000,16384,1,1000,,LS,Running,0,12537496,0,x\n" +
			"p1,11908,47104,1,1000,V100,BE,Pending,10001278,10001403,,y\n"
		nr, err := NewOpenBNodeReader(strings.NewReader(nodes), "nodes.csv")
		if err != nil {
			t.Fatal(err)
		}
		var gotNodes []OpenBNode
		for {
			n, err := nr.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			gotNodes = append(gotNodes, n)
		}
		wantNodes := []OpenBNode{{"n0", 32000, 262144, 0, ""}, {"n1", 64000, 262144, 2, "P100"}}
		if diff := cmp.Diff(wantNodes, gotNodes); diff != "" {
			t.Errorf("nodes (-want +got):\n%s", diff)
		}
		pr, err := NewOpenBPodReader(strings.NewReader(pods), "pods.csv")
		if err != nil {
			t.Fatal(err)
		}
		p0, err0 := pr.Read()
		p1, err1 := pr.Read()
		if err0 != nil || err1 != nil {
			t.Fatal(err0, err1)
		}
		want := []OpenBPod{
			{Name: "p0", CPUMilli: 12000, MemoryMiB: 16384, NumGPU: 1, GPUMilli: 1000, QoS: "LS", Phase: "Running", CreationTime: 0, DeletionTime: 12537496, Scheduled: true, ScheduledTime: 0},
			{Name: "p1", CPUMilli: 11908, MemoryMiB: 47104, NumGPU: 1, GPUMilli: 1000, GPUSpec: "V100", QoS: "BE", Phase: "Pending", CreationTime: 10001278, DeletionTime: 10001403},
		}
		if diff := cmp.Diff(want, []OpenBPod{p0, p1}); diff != "" {
			t.Errorf("pods (-want +got):\n%s", diff)
		}
	})
	t.Run("bad rows", func(t *testing.T) {
		podHeader := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
		tests := []struct {
			name, input, want string
			nodes             bool
		}{
			{name: "missing column", input: "sn,cpu_milli,gpu,model\n", nodes: true, want: `n.csv:1: header "sn,cpu_milli,gpu,model" lacks columns memory_mib`},
			{name: "node cpu", input: "sn,cpu_milli,memory_mib,gpu,model\nn0,lots,1,0,\n", nodes: true, want: `n.csv:2: column cpu_milli: "lots" is not an integer`},
			{name: "deleted before created", input: podHeader + "p0,1,1,0,0,,LS,Running,100,50,100\n", want: "n.csv:2: column deletion_time: 50 is before creation_time 100"},
			{name: "short row", input: podHeader + "p0,1,1\n", want: "n.csv:2: got 3 fields, want 11"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				var err error
				if tc.nodes {
					var r *OpenBNodeReader
					if r, err = NewOpenBNodeReader(strings.NewReader(tc.input), "n.csv"); err == nil {
						_, err = r.Read()
					}
				} else {
					var r *OpenBPodReader
					if r, err = NewOpenBPodReader(strings.NewReader(tc.input), "n.csv"); err == nil {
						_, err = r.Read()
					}
				}
				if err == nil || err.Error() != tc.want {
					t.Errorf("error = %v, want %q", err, tc.want)
				}
			})
		}
	})
}

// TestOpenBSample checks the reader against PROVENANCE.md's counts.
func TestOpenBSample(t *testing.T) {
	dir := sharedTrace(t, OpenBFolder)
	nodes, err := LoadOpenBNodes(filepath.Join(dir, "openb_node_list_all_node.csv"))
	if err != nil {
		t.Fatal(err)
	}
	pods, err := LoadOpenBPods(filepath.Join(dir, "openb_pod_list_default.csv"))
	if err != nil {
		t.Fatal(err)
	}
	qos := map[string]int{}
	unscheduled := 0
	for _, p := range pods {
		qos[p.QoS]++
		if !p.Scheduled {
			unscheduled++
		}
	}
	// 1,523 nodes; 8,152 pods: LS 4,647, BE 3,398, Burstable 100,
	// Guaranteed 7; 897 without a scheduled_time.
	want := []any{1523, 8152, map[string]int{"LS": 4647, "BE": 3398, "Burstable": 100, "Guaranteed": 7}, 897}
	if diff := cmp.Diff(want, []any{len(nodes), len(pods), qos, unscheduled}); diff != "" {
		t.Errorf("nodes, pods, qos, unscheduled (-want +got):\n%s", diff)
	}
}

func TestOpenDecompressesByContent(t *testing.T) {
	dir := t.TempDir()
	content := "m_1,0,10,50,,,1,1,1\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"plain.csv": []byte(content), "zipped.csv": gz.Bytes(), "zipped.csv.gz": gz.Bytes()}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := LoadMachineSeries(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].CPUPercent.Values[0] != 10 {
				t.Errorf("read %+v, want one machine at 10%% CPU", got)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		_, err := LoadMachineSeries(filepath.Join(dir, "nope.csv"))
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error = %v, want os.ErrNotExist", err)
		}
	})
}

func TestVMFilesOrder(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"10.csv.gz", "2.csv", "1.csv.gz", "notes.txt", "b.csv", "a.csv"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := VMFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i] = filepath.Base(got[i])
	}
	if diff := cmp.Diff([]string{"1.csv.gz", "2.csv", "10.csv.gz", "a.csv", "b.csv"}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestResampleAndSum(t *testing.T) {
	tests := []struct {
		name string
		in   Series
		step int64
		hold int
		want Series
	}{{
		name: "onto the grid, largest per slot",
		in:   Series{Times: []int64{304, 590, 604, 904}, Values: []float64{1, 5, 2, 3}},
		step: 300,
		// 304 → 300; 590 → 300 (max(1, 5) = 5); 604 → 600; 904 → 900.
		want: Series{Times: []int64{300, 600, 900}, Values: []float64{5, 2, 3}},
	}, {
		name: "short gaps hold the last value",
		in:   Series{Times: []int64{0, 1200}, Values: []float64{4, 6}},
		step: 300,
		hold: 2,
		// 300 and 600 repeat 4; 900 is past the hold of 2 slots.
		want: Series{Times: []int64{0, 300, 600, 1200}, Values: []float64{4, 4, 4, 6}},
	}, {
		name: "no hold keeps gaps",
		in:   Series{Times: []int64{0, 1200}, Values: []float64{4, 6}},
		step: 300,
		want: Series{Times: []int64{0, 1200}, Values: []float64{4, 6}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resample(tc.in, tc.step, tc.hold)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Resample (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := Resample(Series{}, 0, 0); err == nil {
		t.Error("Resample with step 0 succeeded")
	}
	a := Series{Times: []int64{0, 300}, Values: []float64{1, 2}}
	b := Series{Times: []int64{300, 600}, Values: []float64{10, 20}}
	// 0: 1; 300: 2 + 10; 600: 20.
	if diff := cmp.Diff(Series{Times: []int64{0, 300, 600}, Values: []float64{1, 12, 20}}, Sum(a, b)); diff != "" {
		t.Errorf("Sum (-want +got):\n%s", diff)
	}
}

func TestFindShared(t *testing.T) {
	root := t.TempDir()
	want := filepath.Join(root, "shared", "traces", "x")
	deep := filepath.Join(root, "repo", "pkg", "a")
	for _, d := range []string{want, deep} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := FindShared(deep, "x")
	if err != nil || got != want {
		t.Errorf("FindShared = %q, %v; want %q", got, err, want)
	}
	if _, err := FindShared(deep, "y"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("FindShared of a missing folder: %v, want os.ErrNotExist", err)
	}
}
