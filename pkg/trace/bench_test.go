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
	"encoding/csv"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkMachineUsageReader reads the shared Alibaba sample from memory.
// Baseline: encoding/csv with a reused record and the same number parsing
// (no range checks, no error positions).
func BenchmarkMachineUsageReader(b *testing.B) {
	dir, err := FindShared(".", AlibabaV2018Folder)
	if err != nil {
		b.Skipf("SKIP: shared trace not available: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, MachineUsageFile))
	if err != nil {
		b.Fatal(err)
	}
	const rows = 100002
	b.Run("MachineUsageReader", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			r := NewMachineUsageReader(bytes.NewReader(data), "machine_usage.csv")
			n := 0
			for {
				_, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				n++
			}
			if n != rows {
				b.Fatalf("read %d rows, want %d", n, rows)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
	})
	b.Run("baseline-encoding-csv", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			r := csv.NewReader(bytes.NewReader(data))
			r.ReuseRecord = true
			r.FieldsPerRecord = 9
			n := 0
			for {
				rec, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
				_, _ = strconv.ParseInt(rec[1], 10, 64)
				for _, f := range rec[2:] {
					if f != "" {
						_, _ = strconv.ParseFloat(f, 64)
					}
				}
				n++
			}
			if n != rows {
				b.Fatalf("read %d rows, want %d", n, rows)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/rows, "ns/row")
	})
}
