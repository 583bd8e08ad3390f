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

package qos

import (
	"fmt"
	"strings"
)

// BECPU is the CPU picture of a node's Batch/Free ("BE") pods at one
// instant, in millicores.
type BECPU struct {
	// UsageMilli is their total CPU usage.
	UsageMilli int64
	// RequestMilli is their total CPU request (tier requests included).
	RequestMilli int64
	// AllowanceMilli is the CPU they may use: the smaller of what their
	// quotas and limits allow (a pod with neither may use the whole node)
	// and what the other pods leave of the node's capacity.
	AllowanceMilli int64
}

// SampleBECPU measures BECPU from the candidates the planner may act on.
// The shell calls it on every sample with the same candidates it passes to
// Plan and averages the results into CPUWindow, so that the window and the
// present are measured the same way.
func SampleBECPU(nodeCPUMilli, nodeUsageMilli int64, candidates []Candidate) BECPU {
	return sampleBECPU(nodeCPUMilli, nodeUsageMilli, candidates, nil)
}

// SampleBECPU is the package's SampleBECPU that also leaves out the pods of
// the waterlines' protected namespaces, as Plan does; a shell whose NodeQOS
// protect namespaces should average this one.
func (p *Planner) SampleBECPU(nodeUsageMilli int64, candidates []Candidate) BECPU {
	return sampleBECPU(p.waterlines.Capacity.CPUMilli, nodeUsageMilli, candidates, p.waterlines.ProtectedNamespaces)
}

func sampleBECPU(nodeCPUMilli, nodeUsageMilli int64, candidates []Candidate, protectedNamespaces []string) BECPU {
	s := NewBESampler(nodeCPUMilli)
	memo := eligibleMemo{namespaces: protectedNamespaces}
	for i := range candidates {
		c := &candidates[i]
		if !memo.eligible(c) {
			continue
		}
		s.Add(c.CPUUsageMilli, c.CPURequestMilli, c.CPUQuotaMilli, c.CPULimitMilli)
	}
	return s.Sample(nodeUsageMilli)
}

// BESampler is SampleBECPU one candidate at a time, for a shell that keeps
// its candidates' figures elsewhere than in Candidates (the simulator,
// which steps every pod of a thousand nodes each second and samples every
// node each cycle): Add the candidates SampleEligible accepts, in order,
// then Sample. SampleBECPU is made of it.
type BESampler struct {
	nodeCPUMilli int64
	b            BECPU
	caps         int64
}

// NewBESampler starts a sample of a node with nodeCPUMilli of CPU.
func NewBESampler(nodeCPUMilli int64) BESampler {
	return BESampler{nodeCPUMilli: nodeCPUMilli}
}

// Add counts an eligible candidate with these figures (the Candidate
// fields CPUUsageMilli, CPURequestMilli, CPUQuotaMilli and CPULimitMilli).
func (s *BESampler) Add(usageMilli, requestMilli, quotaMilli, limitMilli int64) {
	s.b.UsageMilli += usageMilli
	s.b.RequestMilli += requestMilli
	switch {
	case quotaMilli != NoQuota:
		s.caps += quotaMilli
	case limitMilli > 0:
		s.caps += limitMilli
	default:
		s.caps += s.nodeCPUMilli
	}
	s.caps = min(s.caps, s.nodeCPUMilli)
}

// Sample is the BECPU of the candidates added, the node using
// nodeUsageMilli (SampleBECPU's).
func (s *BESampler) Sample(nodeUsageMilli int64) BECPU {
	b := s.b
	others := max(0, nodeUsageMilli-b.UsageMilli)
	b.AllowanceMilli = max(0, min(s.caps, s.nodeCPUMilli-others))
	return b
}

// SampleEligible reports whether SampleBECPU counts c. It depends only on
// c's pod and band.
func SampleEligible(c *Candidate) bool { return eligible(c) }

// CPUWindow is what the shell averaged over the CPU eviction window
// (CPUEvictionParams.WindowSeconds). It passes nil until it holds a full
// window, and the planner does not evict for CPU without one.
type CPUWindow struct {
	// NodeCPUMilli is the node's average CPU usage, in millicores.
	NodeCPUMilli int64
	// BE averages SampleBECPU over the window, field by field; satisfaction
	// over the window is then the ratio of the averages, which weighs each
	// sample by its request and stays defined when a sample had no BE pods.
	BE BECPU
}

// SatisfactionCheck is the satisfaction-based CPU eviction rule
// (docs/design/node-qos.md#satisfaction-based-cpu-eviction), evaluated: every
// condition must hold for CPU eviction.
type SatisfactionCheck struct {
	// WindowOverLine: the window's average node CPU is over the evict line.
	WindowOverLine bool
	// WindowStarved: over the window, BE usage ÷ BE request is below
	// SatisfactionLowerPercent.
	WindowStarved bool
	// WindowBusy: over the window, BE usage is at least
	// BEUsageThresholdPercent of the BE allowance.
	WindowBusy bool
	// NowStarved and NowBusy are the same two conditions at present.
	NowStarved bool
	NowBusy    bool
	// NeededRequestMilli is the CPU request eviction must remove so that the
	// remaining BE pods, sharing the CPU BE pods use now, are satisfied at
	// least SatisfactionUpperPercent: with R the BE request and C the BE
	// usage, the remaining request R' must satisfy C ÷ R' ≥ upper, so
	// R' ≤ ⌊C × 100 ÷ upper⌋ and the request to remove is R − R'.
	NeededRequestMilli int64
}

// Evict reports whether every condition holds.
func (s SatisfactionCheck) Evict() bool {
	return s.WindowOverLine && s.WindowStarved && s.WindowBusy && s.NowStarved && s.NowBusy
}

// String lists the conditions that failed, or the amount when none did.
func (s SatisfactionCheck) String() string {
	var failed []string
	for _, c := range []struct {
		ok   bool
		what string
	}{
		{s.WindowOverLine, "window CPU average not over the evict line"},
		{s.WindowStarved, "window BE satisfaction not under the lower bound"},
		{s.WindowBusy, "window BE usage not near its allowance"},
		{s.NowStarved, "current BE satisfaction not under the lower bound"},
		{s.NowBusy, "current BE usage not near its allowance"},
	} {
		if !c.ok {
			failed = append(failed, c.what)
		}
	}
	if len(failed) > 0 {
		return strings.Join(failed, "; ")
	}
	return fmt.Sprintf("BE pods starved; %dm of request to remove", s.NeededRequestMilli)
}

// CheckSatisfaction evaluates the rule for an evict line of lineMilli.
func CheckSatisfaction(p CPUEvictionParams, lineMilli int64, window CPUWindow, now BECPU) SatisfactionCheck {
	s := SatisfactionCheck{
		WindowOverLine: window.NodeCPUMilli > lineMilli,
		WindowStarved:  starved(window.BE, p.SatisfactionLowerPercent),
		WindowBusy:     busy(window.BE, p.BEUsageThresholdPercent),
		NowStarved:     starved(now, p.SatisfactionLowerPercent),
		NowBusy:        busy(now, p.BEUsageThresholdPercent),
	}
	if p.SatisfactionUpperPercent > 0 {
		keep := now.UsageMilli * 100 / int64(p.SatisfactionUpperPercent)
		s.NeededRequestMilli = max(0, now.RequestMilli-keep)
	}
	return s
}

// starved: usage ÷ request < lower%, in integers. Without a request
// satisfaction is undefined and nobody is starved.
func starved(b BECPU, lowerPercent int32) bool {
	return b.RequestMilli > 0 && b.UsageMilli*100 < int64(lowerPercent)*b.RequestMilli
}

// busy: usage ≥ threshold% of the allowance. An allowance of 0 is reached
// by any usage: BE pods the node leaves nothing to are as starved as can be.
func busy(b BECPU, thresholdPercent int32) bool {
	return b.UsageMilli*100 >= int64(thresholdPercent)*b.AllowanceMilli
}
