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
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	kubeschedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
	configv1 "github.com/waterline-dev/waterline/pkg/scheduler/apis/config/v1"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config/validation"
)

// decode reads a KubeSchedulerConfiguration the way kube-scheduler reads
// its --config file.
func decode(t *testing.T, yaml string) (*kubeschedulerconfig.KubeSchedulerConfiguration, error) {
	t.Helper()
	obj, _, err := Codecs.UniversalDecoder().Decode([]byte(yaml), nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*kubeschedulerconfig.KubeSchedulerConfiguration)
	if !ok {
		t.Fatalf("decoded %T, want *KubeSchedulerConfiguration", obj)
	}
	return cfg, nil
}

func loadAwareArgs(t *testing.T, cfg *kubeschedulerconfig.KubeSchedulerConfiguration) *config.LoadAwareArgs {
	t.Helper()
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name == "LoadAware" {
			args, ok := pc.Args.(*config.LoadAwareArgs)
			if !ok {
				t.Fatalf("LoadAware args decoded as %T, want *config.LoadAwareArgs", pc.Args)
			}
			return args
		}
	}
	t.Fatalf("no LoadAware pluginConfig in %+v", cfg.Profiles[0].PluginConfig)
	return nil
}

func TestDecodeLoadAwareArgs(t *testing.T) {
	const yaml = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: waterline-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: LoadAware
  pluginConfig:
  - name: LoadAware
    args:
      usageThresholds:
        cpu: 70
      prodUsageThresholds:
        cpu: 55
      estimatedScalingFactors:
        cpu: 90
      prodUsageIncludePrediction: true
`
	cfg, err := decode(t, yaml)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	want := &config.LoadAwareArgs{
		NodeMetricExpirationSeconds: 180,
		ResourceWeights:             map[corev1.ResourceName]int64{"cpu": 1, "memory": 1},
		// Written: kept as written; memory's threshold is not added back.
		UsageThresholds:            map[corev1.ResourceName]int64{"cpu": 70},
		ProdUsageThresholds:        map[corev1.ResourceName]int64{"cpu": 55},
		ProdUsageIncludePrediction: true,
		// cpu written, memory defaulted.
		EstimatedScalingFactors: map[corev1.ResourceName]int64{"cpu": 90, "memory": 70},
	}
	if diff := cmp.Diff(want, loadAwareArgs(t, cfg)); diff != "" {
		t.Errorf("LoadAware args (-want +got):\n%s", diff)
	}
}

func TestDecodeDefaultsArgsOfAnEnabledPlugin(t *testing.T) {
	const yaml = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: waterline-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: LoadAware
`
	cfg, err := decode(t, yaml)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	got := loadAwareArgs(t, cfg)
	if got.NodeMetricExpirationSeconds != 180 || got.UsageThresholds["cpu"] != 75 || got.EstimatedScalingFactors["memory"] != 70 {
		t.Errorf("LoadAware args without pluginConfig = %+v, want the defaults", got)
	}
}

func TestDecodeRejectsUnknownFields(t *testing.T) {
	const yaml = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: waterline-scheduler
  pluginConfig:
  - name: LoadAware
    args:
      usageThreshold:
        cpu: 70
`
	_, err := decode(t, yaml)
	if err == nil || !strings.Contains(err.Error(), "usageThreshold") {
		t.Errorf("decode with a misspelt field: err = %v, want an error naming usageThreshold", err)
	}
}

// TestSampleConfiguration keeps config/scheduler/loadaware.yaml honest: it
// decodes strictly, and the values it shows are the defaults it says they
// are.
func TestSampleConfiguration(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "..", "config", "scheduler", "loadaware.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := decode(t, string(data))
	if err != nil {
		t.Fatalf("decoding the sample: %v", err)
	}
	got := loadAwareArgs(t, cfg)
	if errs := validation.ValidateLoadAwareArgs(nil, got); len(errs) > 0 {
		t.Errorf("the sample's args are invalid: %v", errs.ToAggregate())
	}
	want := configv1.DefaultedLoadAwareArgs()
	if diff := cmp.Diff(&want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the sample's args are not the defaults it claims (-defaults +sample):\n%s", diff)
	}
}
