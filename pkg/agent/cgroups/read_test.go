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

package cgroups

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadUint(t *testing.T) {
	tests := []struct {
		name          string
		content       string
		want          uint64
		wantMalformed bool
	}{
		{name: "number", content: "698081217492\n", want: 698081217492},
		{name: "zero", content: "0\n", want: 0},
		{name: "max uint64", content: "18446744073709551615\n", want: 1<<64 - 1},
		{name: "empty, as while being rewritten", content: "", wantMalformed: true},
		{name: "cut short: no newline", content: "69808", wantMalformed: true},
		{name: "negative", content: "-1\n", wantMalformed: true},
		{name: "overflow", content: "18446744073709551616\n", wantMalformed: true},
		{name: "two values", content: "1 2\n", wantMalformed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NewReader().ReadUint(writeTemp(t, tc.content))
			if IsMalformed(err) != tc.wantMalformed || (err != nil && !tc.wantMalformed) {
				t.Fatalf("ReadUint(%q) error %v, want malformed %v", tc.content, err, tc.wantMalformed)
			}
			if got != tc.want {
				t.Errorf("ReadUint(%q) = %d, want %d", tc.content, got, tc.want)
			}
		})
	}
}

func TestReadKey(t *testing.T) {
	const stat = "usage_usec 693452100\nuser_usec 538981155\nsystem_usec 154470945\n"
	tests := []struct {
		name          string
		content, key  string
		want          uint64
		wantMalformed bool
	}{
		{name: "first line", content: stat, key: "usage_usec", want: 693452100},
		{name: "last line", content: stat, key: "system_usec", want: 154470945},
		// inactive_file must not match total_inactive_file, nor a key
		// that merely starts with it.
		{name: "whole key only", content: "total_inactive_file 5\ninactive_file_x 6\ninactive_file 7\n", key: "inactive_file", want: 7},
		{name: "missing key", content: stat, key: "nr_periods", wantMalformed: true},
		{name: "last line cut short", content: "usage_usec 693452100\nsystem_usec 1544", key: "system_usec", wantMalformed: true},
		{name: "value not a number", content: "usage_usec abc\n", key: "usage_usec", wantMalformed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NewReader().ReadKey(writeTemp(t, tc.content), tc.key)
			if IsMalformed(err) != tc.wantMalformed || (err != nil && !tc.wantMalformed) {
				t.Fatalf("ReadKey error %v, want malformed %v", err, tc.wantMalformed)
			}
			if got != tc.want {
				t.Errorf("ReadKey = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestReadFileGrowsBuffer(t *testing.T) {
	content := string(make([]byte, 40000)) + "end"
	r := &Reader{buf: make([]byte, 16)}
	got, err := r.ReadFile(writeTemp(t, content))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(content) || string(got[len(got)-3:]) != "end" {
		t.Errorf("ReadFile read %d bytes, want %d ending in \"end\"", len(got), len(content))
	}
}

func TestMissingFileIsGone(t *testing.T) {
	_, err := NewReader().ReadUint(filepath.Join(t.TempDir(), "pod-x", "cpuacct.usage"))
	if !IsGone(err) || IsMalformed(err) {
		t.Errorf("Reading a vanished cgroup: IsGone %v, IsMalformed %v (err %v); want gone, not malformed", IsGone(err), IsMalformed(err), err)
	}
}

func TestMemoryWorkingSet(t *testing.T) {
	tests := []struct {
		name  string
		v2    bool
		usage string
		stat  string
		want  uint64
	}{
		// 629145600 − 104857600 = 524288000 (600 MiB − 100 MiB).
		{"v1 uses the hierarchical total", false, "629145600\n", "inactive_file 1\ntotal_inactive_file 104857600\n", 524288000},
		{"v2 uses inactive_file", true, "629145600\n", "anon 1\ninactive_file 104857600\n", 524288000},
		// More inactive file than usage (racy reads): zero, never wrapped.
		{"floored at zero", true, "100\n", "inactive_file 200\n", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := UsageFiles{memUsage: NewFile(writeTemp(t, tc.usage)), memStat: NewFile(writeTemp(t, tc.stat)), v2: tc.v2}
			defer f.memUsage.Close()
			defer f.memStat.Close()
			got, err := NewReader().MemoryWorkingSet(&f)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("MemoryWorkingSet = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestSubdirs(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"cri-containerd-a.scope", "cri-containerd-b.scope", ".hidden"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"cpu.stat", "memory.current"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if err := NewReader().SubdirsOf(dir, func(name []byte) { got = append(got, string(name)) }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{".hidden", "cri-containerd-a.scope", "cri-containerd-b.scope"}, got); diff != "" {
		t.Errorf("Subdirs (-want +got):\n%s", diff)
	}
	if err := NewReader().SubdirsOf(filepath.Join(dir, "gone"), func([]byte) {}); !IsGone(err) {
		t.Errorf("Subdirs of a missing directory: %v, want a gone error", err)
	}
}

func TestFileKeptOpen(t *testing.T) {
	p := writeTemp(t, "100\n")
	f := NewFile(p)
	defer f.Close()
	r := &Reader{buf: make([]byte, 4)}
	tests := []struct {
		name     string
		change   func()
		want     uint64
		wantGone bool
	}{
		{name: "first read opens", change: func() {}, want: 100},
		// Rewritten in place (same inode), as the kernel regenerates.
		{name: "sees a rewrite", change: func() { must(t, os.WriteFile(p, []byte("250\n"), 0o644)) }, want: 250},
		// Longer than the 4-byte buffer: grown and read from the start.
		{name: "grows past its buffer", change: func() { must(t, os.WriteFile(p, []byte("123456789012\n"), 0o644)) }, want: 123456789012},
		{name: "removed file is gone", change: func() { os.Remove(p) }, wantGone: true},
		{name: "recreated file is opened afresh", change: func() { must(t, os.WriteFile(p, []byte("7\n"), 0o644)) }, want: 7},
	}
	for _, tc := range tests {
		tc.change()
		got, err := r.FileUint(f)
		if IsGone(err) != tc.wantGone || (err != nil && !tc.wantGone) {
			t.Fatalf("%s: error %v, want gone %v", tc.name, err, tc.wantGone)
		}
		if got != tc.want {
			t.Errorf("%s: read %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestDirKeptOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pod")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d := NewDir(dir)
	defer d.Close()
	r := NewReader()
	list := func() ([]string, error) {
		var got []string
		err := r.Subdirs(d, func(name []byte) { got = append(got, string(name)) })
		slices.Sort(got)
		return got, err
	}
	for _, step := range []struct {
		add  string
		want []string
	}{
		{"a", []string{"a"}},
		{"b", []string{"a", "b"}}, // a container started since the last listing
	} {
		if err := os.Mkdir(filepath.Join(dir, step.add), 0o755); err != nil {
			t.Fatal(err)
		}
		got, err := list()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("Listing after adding %s (-want +got):\n%s", step.add, diff)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := list(); !IsGone(err) {
		t.Errorf("Listing a removed directory: %v, want a gone error", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
