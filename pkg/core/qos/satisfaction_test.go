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
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/waterline-dev/waterline/apis/extension"
)

// TestSampleBECPUSharedPods: candidates that share pod objects (the
// simulator's stand-ins) are counted exactly as if each had its own -- a
// shared protected pod, a shared plain one, and the plain one under a Prod
// band, interleaved.
func TestSampleBECPUSharedPods(t *testing.T) {
	plain := makePod("plain").band(extension.BandBatch).obj()
	protected := makePod("protected").band(extension.BandBatch).namespace("kube-system").obj()
	cand := func(i int, pod any, band extension.Band) Candidate {
		c := Candidate{Band: band, CPUUsageMilli: int64(100 * (i + 1)), CPURequestMilli: 1000, CPULimitMilli: 2000, CPUQuotaMilli: NoQuota}
		switch pod {
		case "plain":
			c.Pod = plain
		case "protected":
			c.Pod = protected
		}
		return c
	}
	shared := []Candidate{
		cand(0, "plain", extension.BandBatch),
		cand(1, "plain", extension.BandBatch),
		cand(2, "protected", extension.BandBatch),
		cand(3, "protected", extension.BandBatch),
		cand(4, "plain", extension.BandProd),
		cand(5, "plain", extension.BandBatch),
		cand(6, nil, extension.BandBatch),
	}
	own := make([]Candidate, len(shared))
	for i, c := range shared {
		if c.Pod != nil {
			c.Pod = c.Pod.DeepCopy()
		}
		own[i] = c
	}
	got := SampleBECPU(64_000, 20_000, shared)
	want := SampleBECPU(64_000, 20_000, own)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shared pods (-own pods +shared):\n%s", diff)
	}
	// Candidates 0, 1 and 5 only: 100 + 200 + 600 m used, 3 × 1000 m asked.
	if diff := cmp.Diff(BECPU{UsageMilli: 900, RequestMilli: 3000, AllowanceMilli: 6000}, got); diff != "" {
		t.Errorf("sample (-want +got):\n%s", diff)
	}
}
