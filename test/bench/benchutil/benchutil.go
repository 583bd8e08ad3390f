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

// Package benchutil holds what the benchmark harnesses under test/bench
// share: reading a Prometheus text page, a process's CPU time from /proc,
// finding the control plane's processes, and the statistics their reports
// quote.
package benchutil

import (
	"bufio"
	"fmt"
	"math"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"

	testutil "github.com/waterline-dev/waterline/test/util"
)

// Sample is one line of a Prometheus text page: a series name, its labels
// and its value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ParseMetrics reads the samples of a Prometheus text exposition page.
// Comments and malformed lines are skipped: the pages are components'
// own, and only a handful of their series are read.
func ParseMetrics(page string) []Sample {
	var out []Sample
	sc := bufio.NewScanner(strings.NewReader(page))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		s := Sample{Labels: map[string]string{}}
		var rest string
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			s.Name = line[:i]
			for _, kv := range splitLabels(line[i+1 : j]) {
				k, v, ok := strings.Cut(kv, "=")
				if ok {
					s.Labels[k] = strings.Trim(v, `"`)
				}
			}
			rest = strings.TrimSpace(line[j+1:])
		} else {
			name, r, ok := strings.Cut(line, " ")
			if !ok {
				continue
			}
			s.Name, rest = name, strings.TrimSpace(r)
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		s.Value = v
		out = append(out, s)
	}
	return out
}

// splitLabels splits `a="x",b="y,z"` at the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// Histogram is a Prometheus histogram summed over the series that match a
// label filter.
type Histogram struct {
	buckets map[float64]float64 // upper bound -> cumulative count
	sum     float64
	count   float64
}

// HistogramOf sums the histogram family name over every series whose
// labels include match.
func HistogramOf(samples []Sample, name string, match map[string]string) Histogram {
	h := Histogram{buckets: map[float64]float64{}}
	for _, s := range samples {
		if !LabelsMatch(s.Labels, match) {
			continue
		}
		switch s.Name {
		case name + "_bucket":
			le, err := strconv.ParseFloat(s.Labels["le"], 64)
			if err != nil {
				continue
			}
			h.buckets[le] += s.Value
		case name + "_sum":
			h.sum += s.Value
		case name + "_count":
			h.count += s.Value
		}
	}
	return h
}

func LabelsMatch(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// Mean is the average observation, NaN without observations.
func (h Histogram) Mean() float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.sum / h.count
}

// Quantile estimates the q-quantile by linear interpolation inside the
// bucket that holds it, as PromQL's histogram_quantile does. NaN without
// observations; the highest finite bound when it falls in +Inf.
func (h Histogram) Quantile(q float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	bounds := make([]float64, 0, len(h.buckets))
	for b := range h.buckets {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	rank := q * h.count
	prevBound, prevCount := 0.0, 0.0
	for _, b := range bounds {
		c := h.buckets[b]
		if c >= rank {
			if math.IsInf(b, 1) {
				return prevBound
			}
			if c == prevCount {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(c-prevCount)
		}
		prevBound, prevCount = b, c
	}
	return prevBound
}

// CounterOf sums the counter name over every series whose labels include
// match.
func CounterOf(samples []Sample, name string, match map[string]string) float64 {
	var v float64
	for _, s := range samples {
		if s.Name == name && LabelsMatch(s.Labels, match) {
			v += s.Value
		}
	}
	return v
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// CPUSeconds is the user + system CPU time the process pid has used.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("parsing /proc/%d/stat: no ')' in %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("parsing /proc/%d/stat: %d fields after the name, want at least 13", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parsing utime %q / stime %q of /proc/%d/stat", f[11], f[12], pid)
	}
	return float64(ut+st) / clockTicks, nil
}

// FindProcess returns the pid of the process whose command line holds
// every one of parts (e.g. the binary's name and a flag naming its port),
// or 0.
func FindProcess(parts ...string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		all := true
		for _, p := range parts {
			if !strings.Contains(cmd, p) {
				all = false
				break
			}
		}
		if all {
			return pid
		}
	}
	return 0
}

// Median of xs; NaN when empty.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Percentile of xs by nearest rank; NaN when empty.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	i = max(0, min(i, len(s)-1))
	return s[i]
}

// Spread is min..max of xs.
func Spread(xs []float64) (lo, hi float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	lo, hi = xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// ControlPlanePIDs finds the cluster's kube-apiserver (by its secure port)
// and its etcd (by the client URL the apiserver names), for their CPU time.
func ControlPlanePIDs(c *testutil.Cluster) (apiserver, etcd int, err error) {
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		return 0, 0, fmt.Errorf("parsing the API server's address %q: %w", c.Config.Host, err)
	}
	apiserver = FindProcess("kube-apiserver", "--secure-port="+u.Port())
	if apiserver == 0 {
		return 0, 0, fmt.Errorf("no kube-apiserver with --secure-port=%s in /proc", u.Port())
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", apiserver))
	if err != nil {
		return 0, 0, fmt.Errorf("reading the command line of kube-apiserver %d: %w", apiserver, err)
	}
	for _, arg := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(arg, "--etcd-servers="); ok {
			etcd = FindProcess("etcd", "--listen-client-urls="+v)
		}
	}
	if etcd == 0 {
		return 0, 0, fmt.Errorf("no etcd serving kube-apiserver %d in /proc", apiserver)
	}
	return apiserver, etcd, nil
}
