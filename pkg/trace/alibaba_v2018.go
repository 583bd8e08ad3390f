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
	"math"
)

// Alibaba cluster-trace-v2018 (github.com/alibaba/clusterdata,
// cluster-trace-v2018/schema.txt). Files have no header.

// MachineUsage is one row of machine_usage.csv.
type MachineUsage struct {
	// MachineID is the machine, e.g. "m_1932".
	MachineID string
	// Time is seconds from the start of the trace.
	Time int64
	// CPUPercent is the machine's CPU utilisation, in [0, 100]; NaN when
	// the row leaves it empty.
	CPUPercent float64
	// MemPercent is the machine's memory utilisation, in [0, 100]; NaN
	// when empty.
	MemPercent float64
	// MemGPS is normalised memory bandwidth; NaN when empty (most rows).
	MemGPS float64
	// MKPI is cache misses per thousand instructions; NaN when empty.
	MKPI float64
	// NetIn and NetOut are normalised network traffic, in [0, 100]; NaN
	// when empty.
	NetIn, NetOut float64
	// DiskIOPercent is disk I/O utilisation in [0, 100]; NaN when empty
	// or marked invalid by the trace (-1 or 101).
	DiskIOPercent float64
}

// MachineUsageReader streams the rows of machine_usage.csv.
type MachineUsageReader struct {
	lr *lineReader
}

// NewMachineUsageReader reads machine_usage.csv rows from r; name (the
// path, usually) appears in errors.
func NewMachineUsageReader(r io.Reader, name string) *MachineUsageReader {
	return &MachineUsageReader{lr: newLineReader(r, name)}
}

// Read returns the next row, io.EOF after the last one, or a *ParseError
// for a bad row.
func (r *MachineUsageReader) Read() (MachineUsage, error) {
	f, err := r.lr.next(',')
	if err != nil {
		return MachineUsage{}, err
	}
	if err := r.lr.wantFields(f, 9); err != nil {
		return MachineUsage{}, err
	}
	var u MachineUsage
	if u.MachineID = f[0]; u.MachineID == "" {
		return MachineUsage{}, r.lr.errorf("machine_id", "empty")
	}
	if u.Time, err = r.lr.nonNegInt("time_stamp", f[1]); err != nil {
		return MachineUsage{}, err
	}
	// Sequential calls rather than a table: a table of pointers would
	// escape and cost an allocation per row.
	if u.CPUPercent, err = r.percent("cpu_util_percent", f[2]); err != nil {
		return MachineUsage{}, err
	}
	if u.MemPercent, err = r.percent("mem_util_percent", f[3]); err != nil {
		return MachineUsage{}, err
	}
	if u.MemGPS, err = r.lr.optFloat("mem_gps", f[4]); err != nil {
		return MachineUsage{}, err
	}
	if u.MKPI, err = r.lr.optFloat("mkpi", f[5]); err != nil {
		return MachineUsage{}, err
	}
	if u.NetIn, err = r.percent("net_in", f[6]); err != nil {
		return MachineUsage{}, err
	}
	if u.NetOut, err = r.percent("net_out", f[7]); err != nil {
		return MachineUsage{}, err
	}
	if u.DiskIOPercent, err = r.lr.optFloat("disk_io_percent", f[8]); err != nil {
		return MachineUsage{}, err
	}
	if u.DiskIOPercent < 0 || u.DiskIOPercent > 100 {
		u.DiskIOPercent = math.NaN() // the trace's own "invalid" markers
	}
	return u, nil
}

// percent parses an optional percentage in [0, 100].
func (r *MachineUsageReader) percent(column, s string) (float64, error) {
	v, err := r.lr.optFloat(column, s)
	if err == nil && (v < 0 || v > 100) {
		return 0, r.lr.errorf(column, "%s is outside [0, 100]", s)
	}
	return v, err
}

// MachineSeries is one machine's utilisation over time.
type MachineSeries struct {
	MachineID string
	// CPUPercent and MemPercent are in [0, 100]; rows with an empty value
	// are left out of that series.
	CPUPercent Series
	MemPercent Series
}

// ReadMachineSeries reads every row and groups them per machine, in the
// order machines first appear. A machine's rows must be in time order
// (the trace's are); a row that goes back in time is a *ParseError, and a
// repeated time keeps the larger value.
func ReadMachineSeries(r *MachineUsageReader) ([]MachineSeries, error) {
	var out []MachineSeries
	index := map[string]int{}
	for {
		u, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		i, ok := index[u.MachineID]
		if !ok {
			i = len(out)
			index[u.MachineID] = i
			out = append(out, MachineSeries{MachineID: u.MachineID})
		}
		m := &out[i]
		for _, s := range []struct {
			series *Series
			v      float64
		}{{&m.CPUPercent, u.CPUPercent}, {&m.MemPercent, u.MemPercent}} {
			if math.IsNaN(s.v) {
				continue
			}
			if !s.series.add(u.Time, s.v) {
				return nil, r.lr.errorf("time_stamp", "%d is before the previous row of machine %s (%d)",
					u.Time, u.MachineID, s.series.Times[s.series.Len()-1])
			}
		}
	}
}

// LoadMachineSeries opens path (plain or gzip) and reads it with
// ReadMachineSeries.
func LoadMachineSeries(path string) ([]MachineSeries, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	out, err := ReadMachineSeries(NewMachineUsageReader(f, path))
	if err != nil {
		return nil, fmt.Errorf("loading machine usage: %w", err)
	}
	return out, nil
}

// MachineMeta is one row of machine_meta.csv.
type MachineMeta struct {
	MachineID string
	// Time is seconds from the start of the trace.
	Time int64
	// FailureDomain1 and FailureDomain2 are the trace's failure domains.
	FailureDomain1, FailureDomain2 string
	// CPUNum is the number of CPUs (96 on every row of v2018).
	CPUNum int64
	// MemSize is normalised memory size (100 on every row of v2018).
	MemSize float64
	// Status is the machine's status, e.g. USING.
	Status string
}

// MachineMetaReader streams the rows of machine_meta.csv.
type MachineMetaReader struct {
	lr *lineReader
}

// NewMachineMetaReader reads machine_meta.csv rows from r; name appears in
// errors.
func NewMachineMetaReader(r io.Reader, name string) *MachineMetaReader {
	return &MachineMetaReader{lr: newLineReader(r, name)}
}

// Read returns the next row, io.EOF after the last one, or a *ParseError.
func (r *MachineMetaReader) Read() (MachineMeta, error) {
	f, err := r.lr.next(',')
	if err != nil {
		return MachineMeta{}, err
	}
	if err := r.lr.wantFields(f, 7); err != nil {
		return MachineMeta{}, err
	}
	m := MachineMeta{MachineID: f[0], FailureDomain1: f[2], FailureDomain2: f[3], Status: f[6]}
	if m.MachineID == "" {
		return MachineMeta{}, r.lr.errorf("machine_id", "empty")
	}
	if m.Time, err = r.lr.nonNegInt("time_stamp", f[1]); err != nil {
		return MachineMeta{}, err
	}
	if m.CPUNum, err = r.lr.nonNegInt("cpu_num", f[4]); err != nil {
		return MachineMeta{}, err
	}
	if m.MemSize, err = r.lr.float("mem_size", f[5]); err != nil {
		return MachineMeta{}, err
	}
	return m, nil
}
