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

package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
	chart "github.com/waterline-dev/waterline/charts/waterline"
	"github.com/waterline-dev/waterline/pkg/core/nodeload"
	"github.com/waterline-dev/waterline/pkg/crdschema"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
	configv1 "github.com/waterline-dev/waterline/pkg/scheduler/apis/config/v1"
	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config/validation"
	"github.com/waterline-dev/waterline/pkg/scheduler/plugins/loadaware"
	"github.com/waterline-dev/waterline/pkg/sim"
)

// chartSettings are what `waterline sim --values` simulates of an install
// of charts/waterline: the NodeQOS, the default ColocationPolicy's tiers,
// collect and predict policies, and waterline-scheduler's LoadAware args
// and weight.
type chartSettings struct {
	nodeQOS         []v1alpha1.NodeQOS
	policies        []v1alpha1.ColocationPolicy
	loadAware       nodeload.Spec
	loadAwareWeight int64
	// notes say what of the values the simulation does not follow.
	notes []string
}

// apply sets what the values decide in cfg.
func (s *chartSettings) apply(cfg *sim.Config) {
	cfg.NodeQOS = s.nodeQOS
	cfg.ColocationPolicies = s.policies
	cfg.LoadAware = &s.loadAware
	cfg.LoadAwareWeight = s.loadAwareWeight
}

// loadChartValues reads a values file of charts/waterline, merges it over
// the chart's defaults as Helm does, and admits what the simulation takes
// of it as the cluster would: the NodeQOS and ColocationPolicy specs
// against their CRDs (schema, defaults and CEL rules), LoadAware's args as
// waterline-scheduler decodes them. Every refusal names its field as the
// values file spells it (nodeQOS.spec.cpu.throttlePercent).
func loadChartValues(ctx context.Context, path string) (*chartSettings, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var user, values map[string]any
	if err := yaml.Unmarshal(raw, &user); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := yaml.Unmarshal(chart.Values, &values); err != nil {
		return nil, fmt.Errorf("the chart's values.yaml: %w", err)
	}
	var schema map[string]any
	if err := json.Unmarshal(chart.ValuesSchema, &schema); err != nil {
		return nil, fmt.Errorf("the chart's values.schema.json: %w", err)
	}
	values = mergeValues(values, user)

	s := &chartSettings{}
	// A key the chart does not know, such as a misspelt nodeQos, would
	// otherwise leave the defaults simulated in silence; helm install
	// refuses it.
	errs := unknownValues(schema, user, nil)
	// mapAt is the map under key of m, at path; empty when unset, and an
	// error when it is not a map.
	mapAt := func(m map[string]any, key string, path *field.Path) map[string]any {
		v, ok := m[key]
		if !ok || v == nil {
			return map[string]any{}
		}
		sub, ok := v.(map[string]any)
		if !ok {
			errs = append(errs, field.TypeInvalid(path, v, "must be a map, as in the chart's values.yaml"))
			return map[string]any{}
		}
		return sub
	}
	// create is a section's create flag: true unless set false.
	create := func(m map[string]any, path *field.Path) bool {
		v, ok := m["create"]
		if !ok {
			return true
		}
		b, ok := v.(bool)
		if !ok {
			errs = append(errs, field.TypeInvalid(path.Child("create"), v, "must be true or false"))
			return true
		}
		return b
	}
	nodeQOSPath := field.NewPath("nodeQOS")
	nodeQOS := mapAt(values, "nodeQOS", nodeQOSPath)
	if !create(nodeQOS, nodeQOSPath) {
		s.nodeQOS = []v1alpha1.NodeQOS{}
		s.notes = append(s.notes, "nodeQOS.create is false: the agents have no waterlines, Waterline's node QoS never acts")
	} else {
		var nq v1alpha1.NodeQOS
		errs = append(errs, admit(ctx, "NodeQOS", nodeQOSPath, mapAt(nodeQOS, "spec", nodeQOSPath.Child("spec")), &nq)...)
		if nq.Spec.NodeSelector != nil {
			s.notes = append(s.notes, "nodeQOS.spec.nodeSelector is not simulated: the simulated nodes have no such labels, the NodeQOS applies to every node")
			nq.Spec.NodeSelector = nil
		}
		if nq.Spec.DryRun {
			s.notes = append(s.notes, "nodeQOS.spec.dryRun is true (the chart's default): simulated as false, the agents act, as at the rollout's end")
			nq.Spec.DryRun = false
		}
		s.nodeQOS = []v1alpha1.NodeQOS{nq}
	}

	policyPath := field.NewPath("colocationPolicy")
	policy := mapAt(values, "colocationPolicy", policyPath)
	if !create(policy, policyPath) {
		errs = append(errs, field.Invalid(field.NewPath("colocationPolicy", "create"), false,
			"the simulation needs the default ColocationPolicy: its profiles make the simulated pods Prod, Mid and Batch"))
	}
	var cp v1alpha1.ColocationPolicy
	errs = append(errs, admit(ctx, "ColocationPolicy", policyPath, mapAt(policy, "spec", policyPath.Child("spec")), &cp)...)
	s.policies = sim.DefaultColocationPolicies()
	own := &s.policies[0].Spec
	own.Tiers, own.CollectPolicy, own.PredictPolicy = cp.Spec.Tiers, cp.Spec.CollectPolicy, cp.Spec.PredictPolicy
	if cp.Spec.NodeSelector != nil {
		s.notes = append(s.notes, "colocationPolicy.spec.nodeSelector is not simulated: the policy applies to every simulated node")
	}
	if len(cp.Spec.Profiles) > 0 {
		s.notes = append(s.notes, fmt.Sprintf("colocationPolicy.spec.profiles (%d) are not simulated: the simulation's own profiles make its pods Prod, Mid and Batch by namespace", len(cp.Spec.Profiles)))
	}

	schedulerPath := field.NewPath("scheduler")
	scheduler := mapAt(values, "scheduler", schedulerPath)
	weightPath := schedulerPath.Child("loadAwareWeight")
	switch w, ok := scheduler["loadAwareWeight"].(float64); {
	case !ok || w != float64(int64(w)) || w < 1 || w > 100:
		errs = append(errs, field.Invalid(weightPath, scheduler["loadAwareWeight"], "must be an integer in [1, 100]"))
	default:
		s.loadAwareWeight = int64(w)
	}
	laPath := schedulerPath.Child("loadAware")
	argsPath := laPath.Child("args")
	spec, argsErrs := loadAwareArgs(mapAt(mapAt(scheduler, "loadAware", laPath), "args", argsPath), argsPath)
	errs = append(errs, argsErrs...)
	s.loadAware = spec
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", path, errs.ToAggregate())
	}
	return s, nil
}

// admit admits spec as the spec of kind's object "default", as the API
// server would create it, and decodes it into out.
func admit(ctx context.Context, kind string, root *field.Path, spec map[string]any, out any) field.ErrorList {
	schema, err := crdschema.For(kind)
	if err != nil {
		return field.ErrorList{field.InternalError(root, err)}
	}
	obj := map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": kind,
		"metadata": map[string]any{"name": "default"}, "spec": spec,
	}
	if errs := schema.Admit(ctx, root, obj); len(errs) > 0 {
		return errs
	}
	raw, err := json.Marshal(obj)
	if err == nil {
		err = json.Unmarshal(raw, out)
	}
	if err != nil {
		return field.ErrorList{field.Invalid(root.Child("spec"), "", err.Error())}
	}
	return nil
}

// loadAwareArgs decodes LoadAware's args (the chart's
// scheduler.loadAware.args) as waterline-scheduler does: strictly,
// defaulted, validated, then as the core's Spec.
func loadAwareArgs(args map[string]any, root *field.Path) (nodeload.Spec, field.ErrorList) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nodeload.Spec{}, field.ErrorList{field.Invalid(root, "", err.Error())}
	}
	var v1args configv1.LoadAwareArgs
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v1args); err != nil {
		return nodeload.Spec{}, field.ErrorList{field.Invalid(root, "", err.Error())}
	}
	configv1.SetDefaults_LoadAwareArgs(&v1args)
	var internal config.LoadAwareArgs
	if err := configv1.Convert_v1_LoadAwareArgs_To_config_LoadAwareArgs(&v1args, &internal, nil); err != nil {
		return nodeload.Spec{}, field.ErrorList{field.Invalid(root, "", err.Error())}
	}
	if errs := validation.ValidateLoadAwareArgs(root, &internal); len(errs) > 0 {
		return nodeload.Spec{}, errs
	}
	if internal.Aggregated != nil {
		return nodeload.Spec{}, field.ErrorList{field.Forbidden(root.Child("aggregated"),
			"the simulator's agents report no percentile aggregates of node usage")}
	}
	return loadaware.CoreSpec(&internal), nil
}

// unknownValues returns a Forbidden error for every key of values that
// schema (a part of the chart's values.schema.json) does not list where
// it allows no others, at every level where the schema lists properties.
// Parts it refers to elsewhere ($ref, allOf) are left to the CRDs' own
// schemas and the scheduler's strict decoding, which admit them later.
func unknownValues(schema, values map[string]any, path *field.Path) field.ErrorList {
	props, _ := schema["properties"].(map[string]any)
	if props == nil {
		return nil
	}
	closed := schema["additionalProperties"] == false
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(values)) {
		p := field.NewPath(k)
		if path != nil {
			p = path.Child(k)
		}
		sub, known := props[k].(map[string]any)
		if !known {
			if closed {
				errs = append(errs, field.Forbidden(p, "unknown field: the chart's values.schema.json has no such field"))
			}
			continue
		}
		if v, ok := values[k].(map[string]any); ok {
			errs = append(errs, unknownValues(sub, v, p)...)
		}
	}
	return errs
}

// mergeValues returns over merged into base as Helm merges a values file
// into the chart's: maps merge key by key, anything else replaces, and a
// null removes the key.
func mergeValues(base, over map[string]any) map[string]any {
	out := make(map[string]any, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		if v == nil {
			delete(out, k)
			continue
		}
		b, bok := out[k].(map[string]any)
		o, ook := v.(map[string]any)
		if bok && ook {
			out[k] = mergeValues(b, o)
		} else {
			out[k] = v
		}
	}
	return out
}
