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
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"syscall"
)

// Unlimited is the value of CPUQuota.QuotaMicros and of a memory limit that
// means "no limit".
const Unlimited int64 = -1

// Bounds the kernel and kubelet put on the values written.
const (
	// MinCPUShares and MaxCPUShares bound cpu.shares (v1).
	MinCPUShares uint64 = 2
	MaxCPUShares uint64 = 262144
	// MinCPUWeight and MaxCPUWeight bound cpu.weight (v2).
	MinCPUWeight uint64 = 1
	MaxCPUWeight uint64 = 10000
	// MinCPUQuotaMicros is the smallest CFS quota the kernel accepts (1 ms).
	MinCPUQuotaMicros int64 = 1000
	// DefaultCPUPeriodMicros is the CFS period kubelet uses (100 ms).
	DefaultCPUPeriodMicros uint64 = 100000
	// unlimitedV1Memory is the smallest value memory.limit_in_bytes reports
	// as "no limit" (the page counter maximum rounded down to a page is
	// 9223372036854771712 on 4 KiB pages; any value this large is no limit).
	unlimitedV1Memory uint64 = 1 << 62
)

// CPUQuota is a CFS bandwidth limit: the cgroup may use QuotaMicros of CPU
// time every PeriodMicros, i.e. QuotaMicros/PeriodMicros cores.
type CPUQuota struct {
	// QuotaMicros is the CPU time per period in microseconds, at least
	// MinCPUQuotaMicros, or Unlimited.
	QuotaMicros int64
	// PeriodMicros is the period in microseconds, 1000 to 1000000;
	// kubelet uses DefaultCPUPeriodMicros.
	PeriodMicros uint64
}

// Cores is the number of CPUs the quota allows, or +Inf when unlimited.
func (q CPUQuota) Cores() float64 {
	if q.QuotaMicros < 0 || q.PeriodMicros == 0 {
		return math.Inf(1)
	}
	return float64(q.QuotaMicros) / float64(q.PeriodMicros)
}

// Undo puts back the file contents a Set call replaced, in reverse order.
// It is safe to call more than once; a cgroup gone in between is not an
// error (there is nothing left to restore).
type Undo func() error

// saved is one file's contents before a write.
type saved struct {
	path string
	data []byte
}

func undoOf(prev []saved) Undo {
	return func() error {
		var errs []error
		for i := len(prev) - 1; i >= 0; i-- {
			if err := writeFile(prev[i].path, append(prev[i].data, '\n')); err != nil && !IsGone(err) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
}

// ReadCPUQuota returns the CFS bandwidth limit of a cgroup.
func (l *Layout) ReadCPUQuota(cgroup string) (CPUQuota, error) {
	r := Reader{buf: make([]byte, 64)}
	if l.version == V2 {
		p := l.Path(ControllerCPU, cgroup) + "/cpu.max"
		b, err := r.ReadFile(p)
		if err != nil {
			return CPUQuota{}, err
		}
		fields := bytes.Fields(b)
		if len(fields) != 2 {
			return CPUQuota{}, &ParseError{Path: p, Reason: fmt.Sprintf("want \"<quota|max> <period>\", got %q", truncate(b))}
		}
		q := CPUQuota{QuotaMicros: Unlimited}
		if string(fields[0]) != "max" {
			if q.QuotaMicros, err = parseInt(p, fields[0]); err != nil {
				return CPUQuota{}, err
			}
		}
		if q.PeriodMicros, err = ParseUint(p, fields[1]); err != nil {
			return CPUQuota{}, err
		}
		return q, nil
	}
	dir := l.Path(ControllerCPU, cgroup)
	b, err := r.ReadFile(dir + "/cpu.cfs_quota_us")
	if err != nil {
		return CPUQuota{}, err
	}
	quota, err := parseInt(dir+"/cpu.cfs_quota_us", bytes.TrimSpace(b))
	if err != nil {
		return CPUQuota{}, err
	}
	period, err := r.ReadUint(dir + "/cpu.cfs_period_us")
	if err != nil {
		return CPUQuota{}, err
	}
	if quota < 0 {
		quota = Unlimited
	}
	return CPUQuota{QuotaMicros: quota, PeriodMicros: period}, nil
}

// SetCPUQuota writes the CFS bandwidth limit of a cgroup and returns how
// to put the old one back.
//
// On v1 the kernel refuses (EINVAL) a quota whose cores are below those of
// a child cgroup with its own quota, and kubelet gives every container one:
// to throttle a pod below its containers' limits, lower (or lift) the
// containers' quotas first. v2 has no such rule (a child is capped by its
// parent).
func (l *Layout) SetCPUQuota(cgroup string, q CPUQuota) (Undo, error) {
	if q.PeriodMicros < 1000 || q.PeriodMicros > 1000000 {
		return nil, fmt.Errorf("setting CPU quota of %s: period %dµs outside [1000, 1000000]", cgroup, q.PeriodMicros)
	}
	if q.QuotaMicros != Unlimited && q.QuotaMicros < MinCPUQuotaMicros {
		return nil, fmt.Errorf("setting CPU quota of %s: quota %dµs below %dµs and not unlimited (-1)", cgroup, q.QuotaMicros, MinCPUQuotaMicros)
	}
	if l.version == V2 {
		quota := "max"
		if q.QuotaMicros != Unlimited {
			quota = strconv.FormatInt(q.QuotaMicros, 10)
		}
		return setFiles(fileWrite{l.Path(ControllerCPU, cgroup) + "/cpu.max", quota + " " + strconv.FormatUint(q.PeriodMicros, 10)})
	}
	dir := l.Path(ControllerCPU, cgroup)
	// Period first: the quota is then checked against the period it will
	// run with.
	return setFiles(
		fileWrite{dir + "/cpu.cfs_period_us", strconv.FormatUint(q.PeriodMicros, 10)},
		fileWrite{dir + "/cpu.cfs_quota_us", strconv.FormatInt(q.QuotaMicros, 10)},
	)
}

// CPUSharesToWeight converts cgroup v1 cpu.shares to the cgroup v2
// cpu.weight kubelet writes into pod and QoS cgroups for them: its own
// linear conversion (pkg/kubelet/cm getCPUWeight, unchanged in
// k8s.io/kubernetes v1.36.3): 1 + (shares − 2) × 9999 / 262142, so
// 2 → 1, 1024 → 39 and 262144 → 10000. (runc converts the shares of
// containers with a quadratic in log2(shares) instead, 1024 → 100; the
// cgroups this package writes are kubelet's.)
func CPUSharesToWeight(shares uint64) uint64 {
	switch {
	case shares == 0:
		return 0
	case shares <= MinCPUShares:
		return MinCPUWeight
	case shares >= MaxCPUShares:
		return MaxCPUWeight
	}
	return 1 + (shares-MinCPUShares)*(MaxCPUWeight-1)/(MaxCPUShares-MinCPUShares)
}

// CPUWeightToShares is the smallest cpu.shares whose CPUSharesToWeight is at
// least weight, so CPUSharesToWeight(CPUWeightToShares(w)) == w for every
// weight the conversion produces.
func CPUWeightToShares(weight uint64) uint64 {
	if weight <= MinCPUWeight {
		return MinCPUShares
	}
	n := int(MaxCPUShares - MinCPUShares)
	i := sort.Search(n, func(i int) bool { return CPUSharesToWeight(MinCPUShares+uint64(i)) >= weight })
	return MinCPUShares + uint64(i)
}

// ReadCPUShares returns the cgroup's CPU shares: cpu.shares on v1, and on
// v2 cpu.weight converted back with CPUWeightToShares.
func (l *Layout) ReadCPUShares(cgroup string) (uint64, error) {
	r := Reader{buf: make([]byte, 64)}
	if l.version == V2 {
		w, err := r.ReadUint(l.Path(ControllerCPU, cgroup) + "/cpu.weight")
		if err != nil {
			return 0, err
		}
		return CPUWeightToShares(w), nil
	}
	return r.ReadUint(l.Path(ControllerCPU, cgroup) + "/cpu.shares")
}

// SetCPUShares writes the cgroup's CPU shares (cpu.shares on v1,
// cpu.weight = CPUSharesToWeight(shares) on v2) and returns how to put the
// old value back. shares must be in [MinCPUShares, MaxCPUShares].
func (l *Layout) SetCPUShares(cgroup string, shares uint64) (Undo, error) {
	if shares < MinCPUShares || shares > MaxCPUShares {
		return nil, fmt.Errorf("setting CPU shares of %s: %d outside [%d, %d]", cgroup, shares, MinCPUShares, MaxCPUShares)
	}
	if l.version == V2 {
		return setFiles(fileWrite{l.Path(ControllerCPU, cgroup) + "/cpu.weight", strconv.FormatUint(CPUSharesToWeight(shares), 10)})
	}
	return setFiles(fileWrite{l.Path(ControllerCPU, cgroup) + "/cpu.shares", strconv.FormatUint(shares, 10)})
}

// ReadMemoryLimit returns the cgroup's memory limit in bytes, or Unlimited.
func (l *Layout) ReadMemoryLimit(cgroup string) (int64, error) {
	r := Reader{buf: make([]byte, 64)}
	if l.version == V2 {
		p := l.Path(ControllerMemory, cgroup) + "/memory.max"
		b, err := r.ReadFile(p)
		if err != nil {
			return 0, err
		}
		b = bytes.TrimSpace(b)
		if string(b) == "max" {
			return Unlimited, nil
		}
		return parseInt(p, b)
	}
	v, err := r.ReadUint(l.Path(ControllerMemory, cgroup) + "/memory.limit_in_bytes")
	if err != nil {
		return 0, err
	}
	if v >= unlimitedV1Memory {
		return Unlimited, nil
	}
	return int64(v), nil
}

// SetMemoryLimit writes the cgroup's memory limit (bytes, or Unlimited) and
// returns how to put the old one back. A limit below the current usage
// makes the kernel reclaim first and may fail with EBUSY on v1; on v2 it
// may OOM-kill inside the cgroup.
func (l *Layout) SetMemoryLimit(cgroup string, limit int64) (Undo, error) {
	if limit != Unlimited && limit <= 0 {
		return nil, fmt.Errorf("setting memory limit of %s: %d is neither positive nor unlimited (-1)", cgroup, limit)
	}
	if l.version == V2 {
		v := "max"
		if limit != Unlimited {
			v = strconv.FormatInt(limit, 10)
		}
		return setFiles(fileWrite{l.Path(ControllerMemory, cgroup) + "/memory.max", v})
	}
	return setFiles(fileWrite{l.Path(ControllerMemory, cgroup) + "/memory.limit_in_bytes", strconv.FormatInt(limit, 10)})
}

type fileWrite struct {
	path, value string
}

// setFiles saves each file, then writes them in order; when a write fails
// the ones before it are put back so that a failed Set changes nothing.
func setFiles(writes ...fileWrite) (Undo, error) {
	prev := make([]saved, 0, len(writes))
	r := Reader{buf: make([]byte, 64)}
	for _, w := range writes {
		b, err := r.ReadFile(w.path)
		if err != nil {
			return nil, err
		}
		prev = append(prev, saved{path: w.path, data: bytes.TrimSpace(bytes.Clone(b))})
	}
	for i, w := range writes {
		if err := writeFile(w.path, []byte(w.value+"\n")); err != nil {
			if uerr := undoOf(prev[:i])(); uerr != nil {
				return nil, errors.Join(err, fmt.Errorf("putting back after failed write: %w", uerr))
			}
			return nil, err
		}
	}
	return undoOf(prev), nil
}

// writeFile writes an existing file in one write(2), as cgroup files want
// (data ends in a newline, as echo writes it; the kernel accepts it);
// it never creates one, so a vanished cgroup is an IsGone error rather than
// a stray file in a fixture tree.
func writeFile(path string, data []byte) error {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_WRONLY|syscall.O_TRUNC|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("opening %s for writing: %w", path, err)
	}
	defer syscall.Close(fd)
	for {
		_, err = syscall.Write(fd, data)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("writing %q to %s: %w", data, path, err)
	}
	return nil
}
