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

package scheme

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeschedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config/validation"
)

// FuzzSchedulerArgs decodes LoadAware and BandPreemption args the way
// kube-scheduler reads its --config file, then validates them: nothing
// panics, and args that pass validation hold percents in range and no
// negative durations.
func FuzzSchedulerArgs(f *testing.F) {
	f.Add(`{"usageThresholds":{"cpu":70},"estimatedScalingFactors":{"cpu":90}}`, `{"minCandidateNodesPercentage":10}`)
	f.Add(`{"usageThresholds":{"cpu":250},"prodUsageThresholds":{"cpu":-1}}`, `{"minCandidateNodesPercentage":-5}`)
	f.Add(`{"nodeMetricExpirationSeconds":-1,"estimatedSecondsAfterPodScheduled":9223372036854775807}`, `{}`)
	f.Add(`{"aggregated":{"usageThresholds":{"cpu":60},"usageAggregationType":"p95","usageAggregatedDuration":"-5m"}}`, `null`)
	f.Add(`{"resourceWeights":{"cpu":0},"supportedResources":["cpu","a/b/c"]}`, `{"minCandidateNodesAbsolute":0}`)
	f.Fuzz(func(t *testing.T, loadAware, bandPreemption string) {
		if strings.ContainsAny(loadAware+bandPreemption, "\n\r") {
			return // one line each, so the YAML around them stays whole
		}
		yaml := `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: waterline-scheduler
  pluginConfig:
  - name: LoadAware
    args: ` + loadAware + `
  - name: BandPreemption
    args: ` + bandPreemption + `
`
		obj, _, err := Codecs.UniversalDecoder().Decode([]byte(yaml), nil, nil)
		if err != nil {
			return
		}
		cfg, ok := obj.(*kubeschedulerconfig.KubeSchedulerConfiguration)
		if !ok || len(cfg.Profiles) == 0 {
			return
		}
		for _, pc := range cfg.Profiles[0].PluginConfig {
			switch args := pc.Args.(type) {
			case *config.LoadAwareArgs:
				if errs := validation.ValidateLoadAwareArgs(field.NewPath("args"), args); len(errs) > 0 {
					continue
				}
				for name, p := range args.UsageThresholds {
					if p < 0 || p > 100 {
						t.Fatalf("valid args with usage threshold %s=%d", name, p)
					}
				}
				for name, p := range args.ProdUsageThresholds {
					if p < 0 || p > 100 {
						t.Fatalf("valid args with prod threshold %s=%d", name, p)
					}
				}
				if args.NodeMetricExpirationSeconds < 0 || args.EstimatedSecondsAfterPodScheduled < 0 || args.EstimatedSecondsAfterInitialized < 0 {
					t.Fatalf("valid args with a negative duration: %+v", args)
				}
			case *config.BandPreemptionArgs:
				if errs := validation.ValidateBandPreemptionArgs(field.NewPath("args"), args); len(errs) > 0 {
					continue
				}
				if args.MinCandidateNodesPercentage < 0 || args.MinCandidateNodesPercentage > 100 {
					t.Fatalf("valid args with minCandidateNodesPercentage %d", args.MinCandidateNodesPercentage)
				}
			}
		}
	})
}
