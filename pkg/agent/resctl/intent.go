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

package resctl

import (
	"cmp"
	"fmt"
	"slices"
)

// Source names the module an intent comes from, for logs and metrics.
type Source string

// Intent is what one module wants for one pod's cgroup. A zero field states
// nothing about its value.
type Intent struct {
	// CPUQuotaMilli caps the pod's CFS quota, in millicores; 0 states no
	// cap. A cap below MinQuotaMilli is raised to it (the kernel refuses
	// less).
	CPUQuotaMilli int64
	// BelowOwnLimits says the cap may hold the pod below what it asked for
	// (throttling, the Batch band cap) rather than enforce its own limits.
	// Such a cap is never applied to a pod extension.QoSProtection
	// protects, whoever asks.
	BelowOwnLimits bool
	// CPUShares replaces kubelet's cpu.shares (on v2, the cpu.weight derived
	// from it), in [2, 262144]; 0 states nothing.
	CPUShares uint64
	// MemoryLimitBytes caps the pod's memory limit, in bytes; 0 states no
	// cap.
	MemoryLimitBytes int64
}

// IsZero reports whether the intent states nothing.
func (i Intent) IsZero() bool { return i == Intent{} }

// Desired is the combination of kubelet's values and the intents for one
// pod: what its cgroup should hold, and which values any intent spoke
// about.
type Desired struct {
	Limits
	// HasQuota, HasShares and HasMemory say an intent set the value;
	// otherwise it is kubelet's.
	HasQuota, HasShares, HasMemory bool
	// QuotaSources are the sources whose cap is the quota, for logs.
	QuotaSources []Source
}

// SourcedIntent is an intent with its source.
type SourcedIntent struct {
	Source Source
	Intent
}

// Combine returns what the pod's cgroup should hold given kubelet's values
// and every intent for the pod:
//
//   - CPU quota: the smallest of kubelet's quota and every cap (a cap never
//     raises a quota; the tier limit never undoes a throttle and a throttle
//     never goes above the tier limit); unlimited when there is none;
//   - CPU shares: the smallest shares any intent asks for, else kubelet's;
//   - memory limit: the smallest of kubelet's and every cap.
func Combine(kubelet Limits, intents []SourcedIntent) Desired {
	return combine(kubelet, intents, nil)
}

// combine is Combine with QuotaSources appended to buf[:0], so a caller
// that combines every pod every cycle reuses one buffer; the result's
// QuotaSources are valid until buf is used again.
func combine(kubelet Limits, intents []SourcedIntent, buf []Source) Desired {
	d := Desired{Limits: kubelet, QuotaSources: buf[:0]}
	for _, in := range intents {
		if q := in.CPUQuotaMilli; q > 0 {
			q = max(q, MinQuotaMilli)
			switch {
			case d.CPUQuotaMilli == Unlimited || q < d.CPUQuotaMilli:
				d.CPUQuotaMilli = q
				d.QuotaSources = append(d.QuotaSources[:0], in.Source)
			case q == d.CPUQuotaMilli && d.HasQuota:
				d.QuotaSources = append(d.QuotaSources, in.Source)
			}
			d.HasQuota = true
		}
		if s := in.CPUShares; s > 0 {
			if !d.HasShares || s < d.CPUShares {
				d.CPUShares = s
			}
			d.HasShares = true
		}
		if m := in.MemoryLimitBytes; m > 0 {
			if d.MemoryBytes == Unlimited || m < d.MemoryBytes {
				d.MemoryBytes = m
			}
			d.HasMemory = true
		}
	}
	slices.SortFunc(d.QuotaSources, func(a, b Source) int { return cmp.Compare(a, b) })
	return d
}

// validate returns why an intent cannot be used, or nil.
func (i Intent) validate() error {
	switch {
	case i.CPUQuotaMilli < 0:
		return fmt.Errorf("cpuQuotaMilli %d is negative", i.CPUQuotaMilli)
	case i.CPUShares != 0 && (i.CPUShares < 2 || i.CPUShares > 262144):
		return fmt.Errorf("cpuShares %d outside [2, 262144]", i.CPUShares)
	case i.MemoryLimitBytes < 0:
		return fmt.Errorf("memoryLimitBytes %d is negative", i.MemoryLimitBytes)
	}
	return nil
}

// quotaString renders a quota for logs and events.
func quotaString(milli int64) string {
	if milli == Unlimited {
		return "unlimited"
	}
	return fmt.Sprintf("%dm", milli)
}
