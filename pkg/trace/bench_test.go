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
