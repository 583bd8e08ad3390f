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
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// FuzzParseUint: the cgroup number parser agrees with strconv on every
// input: same value when both accept, refusal when strconv refuses (no
// sign, no spaces, no overflow).
func FuzzParseUint(f *testing.F) {
	for _, s := range []string{"0", "42", "18446744073709551615", "18446744073709551616", "", "-1", "+1", " 1", "1 ", "max", "00012"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseUint("f", b)
		want, werr := strconv.ParseUint(string(b), 10, 64)
		if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
			werr = strconv.ErrSyntax
		}
		if (err == nil) != (werr == nil) {
			t.Fatalf("ParseUint(%q) = %d, %v; strconv says %d, %v", b, v, err, want, werr)
		}
		if err == nil && v != want {
			t.Fatalf("ParseUint(%q) = %d, want %d", b, v, want)
		}
	})
}

// FuzzParseKey: a flat-keyed file (memory.stat, cpu.stat) yields a value
// only from a complete "key value" line whose value is a number.
func FuzzParseKey(f *testing.F) {
	f.Add([]byte("usage_usec 100\nuser_usec 50\n"), "usage_usec")
	f.Add([]byte("inactive_file 7\n"), "inactive_file")
	f.Add([]byte("inactive_file 7"), "inactive_file")
	f.Add([]byte("total_inactive_file 1\ninactive_file x\n"), "inactive_file")
	f.Fuzz(func(t *testing.T, b []byte, key string) {
		v, err := parseKey("f", b, key)
		if err != nil {
			return
		}
		line := []byte(key + " " + strconv.FormatUint(v, 10))
		found := false
		for _, l := range bytes.SplitAfter(b, []byte{'\n'}) {
			if !bytes.HasSuffix(l, []byte{'\n'}) {
				continue
			}
			l = bytes.TrimSuffix(l, []byte{'\n'})
			if n, err := strconv.ParseUint(string(bytes.TrimPrefix(l, []byte(key+" "))), 10, 64); err == nil && n == v && bytes.HasPrefix(l, []byte(key+" ")) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("parseKey(%q, %q) = %d, but no complete line %q", b, key, v, line)
		}
	})
}

// FuzzReadCPUQuota: whatever cpu.max (v2) or cpu.cfs_quota_us (v1) holds,
// reading it never panics, and a quota read back is Unlimited or what the
// file says.
func FuzzReadCPUQuota(f *testing.F) {
	f.Add("max 100000\n", "-1\n", "100000\n")
	f.Add("50000 100000\n", "50000\n", "100000\n")
	f.Add("max\n", "x", "")
	f.Add("1 2 3", "-5", "0")
	f.Fuzz(func(t *testing.T, cpuMax, cfsQuota, cfsPeriod string) {
		for _, v := range []Version{V2, V1} {
			root := t.TempDir()
			l, err := NewLayout(root, v, DriverCgroupfs, "/")
			if err != nil {
				t.Fatal(err)
			}
			dir := l.Path(ControllerCPU, "pod")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			files := map[string]string{"cpu.max": cpuMax, "cpu.cfs_quota_us": cfsQuota, "cpu.cfs_period_us": cfsPeriod}
			for name, content := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			q, err := l.ReadCPUQuota("pod")
			if err != nil {
				continue
			}
			if v == V1 && q.QuotaMicros < 0 && q.QuotaMicros != Unlimited {
				t.Fatalf("v1 %q/%q: negative quota %d is not Unlimited", cfsQuota, cfsPeriod, q.QuotaMicros)
			}
		}
	})
}
