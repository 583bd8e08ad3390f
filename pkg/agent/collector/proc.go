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

package collector

import (
	"bytes"
	"fmt"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
)

// userHZ is the unit of the /proc/stat counters: USER_HZ, 100 on every
// Linux architecture Kubernetes runs on (it is part of the user ABI, unlike
// the kernel's HZ).
const userHZ = 100

// readProcStatBusy returns the node's busy CPU time in jiffies from the
// aggregate "cpu" line of /proc/stat: user + nice + system + irq + softirq
// + steal. idle and iowait are not busy; guest and guest_nice are left out
// because the kernel already counts them in user and nice. Steal is in:
// it is CPU the node's tasks wanted and waited for, so leaving it out would
// make an overcommitted VM look idle.
func readProcStatBusy(r *cgroups.Reader, f *cgroups.File) (uint64, error) {
	path := f.Path()
	b, err := r.ReadHeadOf(f)
	if err != nil {
		return 0, err
	}
	line, _, complete := bytes.Cut(b, []byte{'\n'})
	if !complete {
		return 0, &cgroups.ParseError{Path: path, Reason: "first line cut short"}
	}
	fields := bytes.Fields(line)
	// cpu user nice system idle iowait irq softirq steal [guest guest_nice]
	if len(fields) < 9 || string(fields[0]) != "cpu" {
		return 0, &cgroups.ParseError{Path: path, Reason: fmt.Sprintf("first line is not the aggregate cpu line with 8 counters: %q", line)}
	}
	var busy uint64
	for _, i := range [...]int{1, 2, 3, 6, 7, 8} {
		v, err := cgroups.ParseUint(path, fields[i])
		if err != nil {
			return 0, err
		}
		busy += v
	}
	return busy, nil
}

// readMemInfoUsed returns MemTotal − MemAvailable from /proc/meminfo in
// bytes: what the kernel could not hand to a new process without swapping.
func readMemInfoUsed(r *cgroups.Reader, f *cgroups.File) (uint64, error) {
	path := f.Path()
	b, err := r.Read(f)
	if err != nil {
		return 0, err
	}
	var total, avail uint64
	var haveTotal, haveAvail bool
	for len(b) > 0 && (!haveTotal || !haveAvail) {
		line, rest, complete := bytes.Cut(b, []byte{'\n'})
		if !complete {
			break
		}
		b = rest
		key, val, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		var dst *uint64
		switch string(key) {
		case "MemTotal":
			dst, haveTotal = &total, true
		case "MemAvailable":
			dst, haveAvail = &avail, true
		default:
			continue
		}
		num, unit, _ := bytes.Cut(bytes.TrimSpace(val), []byte{' '})
		v, err := cgroups.ParseUint(path, num)
		if err != nil {
			return 0, err
		}
		if string(unit) != "kB" {
			return 0, &cgroups.ParseError{Path: path, Reason: fmt.Sprintf("%s: unit %q, want kB", key, unit)}
		}
		*dst = v << 10
	}
	if !haveTotal || !haveAvail {
		return 0, &cgroups.ParseError{Path: path, Reason: "no complete MemTotal and MemAvailable lines"}
	}
	if avail > total {
		return 0, nil
	}
	return total - avail, nil
}
