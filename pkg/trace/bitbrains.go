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
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Bitbrains GWA-T-12 (http://gwa.ewi.tudelft.nl/datasets/gwa-t-12-bitbrains):
// one file per VM, a header row, fields separated by ";\t".

// bitbrainsColumns are the header's columns, in order.
var bitbrainsColumns = []string{
	"Timestamp [ms]", "CPU cores", "CPU capacity provisioned [MHZ]", "CPU usage [MHZ]", "CPU usage [%]",
	"Memory capacity provisioned [KB]", "Memory usage [KB]", "Disk read throughput [KB/s]",
	"Disk write throughput [KB/s]", "Network received throughput [KB/s]", "Network transmitted throughput [KB/s]",
}

// VMSample is one row of a Bitbrains VM file.
type VMSample struct {
	// Time is epoch seconds (the header says ms; the values are seconds).
	Time int64
	// CPUCores is the number of virtual CPUs (0 while the VM is off).
	CPUCores float64
	// CPUCapacityMHz is the CPU provisioned to the VM: its limit.
	CPUCapacityMHz float64
	// CPUUsageMHz is the CPU the VM used; it can exceed the capacity a
	// little (turbo).
	CPUUsageMHz float64
	// CPUUsagePercent is CPUUsageMHz ÷ CPUCapacityMHz in percent.
	CPUUsagePercent float64
	// MemCapacityKB is the memory provisioned to the VM, in KB.
	MemCapacityKB float64
	// MemUsageKB is the memory the VM used, in KB.
	MemUsageKB float64
	// Disk and network throughput, in KB/s.
	DiskReadKBps, DiskWriteKBps, NetRxKBps, NetTxKBps float64
}

// Running reports whether the VM was provisioned at the time of the
// sample: rows with no CPU capacity describe a VM that is off (the trace
// has long runs of them).
func (s VMSample) Running() bool { return s.CPUCapacityMHz > 0 }

// VMReader streams the rows of one Bitbrains VM file.
type VMReader struct {
	lr *lineReader
}

// NewVMReader reads a Bitbrains VM file from r (already decompressed, see
// Open) and checks its header; name appears in errors.
func NewVMReader(r io.Reader, name string) (*VMReader, error) {
	lr := newLineReader(r, name)
	f, err := lr.next(';')
	if errors.Is(err, io.EOF) {
		return nil, &ParseError{File: name, Line: 1, Err: errors.New("empty file: want a header")}
	}
	if err != nil {
		return nil, err
	}
	if !slices.Equal(f, bitbrainsColumns) {
		return nil, lr.errorf("", "header %q is not the Bitbrains header %q",
			strings.Join(f, ";"), strings.Join(bitbrainsColumns, ";"))
	}
	return &VMReader{lr: lr}, nil
}

// Read returns the next row, io.EOF after the last one, or a *ParseError.
// Values must be finite and not negative.
func (r *VMReader) Read() (VMSample, error) {
	f, err := r.lr.next(';')
	if err != nil {
		return VMSample{}, err
	}
	if err := r.lr.wantFields(f, len(bitbrainsColumns)); err != nil {
		return VMSample{}, err
	}
	var s VMSample
	if s.Time, err = r.lr.nonNegInt(bitbrainsColumns[0], f[0]); err != nil {
		return VMSample{}, err
	}
	dst := []*float64{nil, &s.CPUCores, &s.CPUCapacityMHz, &s.CPUUsageMHz, &s.CPUUsagePercent,
		&s.MemCapacityKB, &s.MemUsageKB, &s.DiskReadKBps, &s.DiskWriteKBps, &s.NetRxKBps, &s.NetTxKBps}
	for i := 1; i < len(f); i++ {
		v, err := r.lr.float(bitbrainsColumns[i], f[i])
		if err != nil {
			return VMSample{}, err
		}
		if v < 0 {
			return VMSample{}, r.lr.errorf(bitbrainsColumns[i], "%s is negative", f[i])
		}
		*dst[i] = v
	}
	return s, nil
}

// VMSeries is one VM's usage while it ran, and what it was provisioned.
type VMSeries struct {
	// ID is the VM's file name without extensions ("1" for 1.csv.gz).
	ID string
	// CPUCapacityMHz and MemCapacityKB are the largest capacity the VM was
	// provisioned while it ran: its limit. (Capacities change now and
	// then in the trace; the largest is what the VM could have used.)
	CPUCapacityMHz float64
	MemCapacityKB  float64
	// CPUUsageMHz and MemUsageKB hold the rows where the VM ran; a time
	// reported twice keeps the larger value.
	CPUUsageMHz Series
	MemUsageKB  Series
}

// ReadVMSeries reads every row of r into a VMSeries, leaving out the rows
// where the VM is off. Rows must be in time order (a row that goes back is
// a *ParseError).
func ReadVMSeries(r *VMReader, id string) (VMSeries, error) {
	vm := VMSeries{ID: id}
	for {
		s, err := r.Read()
		if errors.Is(err, io.EOF) {
			return vm, nil
		}
		if err != nil {
			return VMSeries{}, err
		}
		if !s.Running() {
			continue
		}
		if !vm.CPUUsageMHz.add(s.Time, s.CPUUsageMHz) || !vm.MemUsageKB.add(s.Time, s.MemUsageKB) {
			return VMSeries{}, r.lr.errorf(bitbrainsColumns[0], "%d is before the previous row", s.Time)
		}
		vm.CPUCapacityMHz = max(vm.CPUCapacityMHz, s.CPUCapacityMHz)
		vm.MemCapacityKB = max(vm.MemCapacityKB, s.MemCapacityKB)
	}
}

// LoadVMSeries opens one VM file (plain or gzip) and reads it.
func LoadVMSeries(path string) (VMSeries, error) {
	f, err := Open(path)
	if err != nil {
		return VMSeries{}, err
	}
	defer func() { _ = f.Close() }()
	r, err := NewVMReader(f, path)
	if err != nil {
		return VMSeries{}, fmt.Errorf("loading VM: %w", err)
	}
	vm, err := ReadVMSeries(r, vmID(path))
	if err != nil {
		return VMSeries{}, fmt.Errorf("loading VM: %w", err)
	}
	return vm, nil
}

func vmID(path string) string {
	base := filepath.Base(path)
	base = strings.TrimSuffix(base, ".gz")
	return strings.TrimSuffix(base, ".csv")
}

// VMFiles lists the VM files (*.csv and *.csv.gz) of a Bitbrains directory,
// ordered by VM number ("2" before "10"), then by name.
func VMFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("listing Bitbrains VMs: %w", err)
	}
	var files []string
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && (strings.HasSuffix(n, ".csv") || strings.HasSuffix(n, ".csv.gz")) {
			files = append(files, filepath.Join(dir, n))
		}
	}
	slices.SortFunc(files, func(a, b string) int {
		na, errA := strconv.Atoi(vmID(a))
		nb, errB := strconv.Atoi(vmID(b))
		switch {
		case errA == nil && errB == nil && na != nb:
			return na - nb
		case errA == nil && errB != nil:
			return -1
		case errA != nil && errB == nil:
			return 1
		}
		return strings.Compare(a, b)
	})
	return files, nil
}

// LoadVMDir loads every VM file of dir, in VMFiles order.
func LoadVMDir(dir string) ([]VMSeries, error) {
	files, err := VMFiles(dir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("listing Bitbrains VMs: no *.csv or *.csv.gz files in %s", dir)
	}
	out := make([]VMSeries, 0, len(files))
	for _, f := range files {
		vm, err := LoadVMSeries(f)
		if err != nil {
			return nil, err
		}
		out = append(out, vm)
	}
	return out, nil
}
