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

// Package validation checks waterline.dev/v1alpha1 objects in Go, returning
// every error as a field.ErrorList that names the field and the value.
//
// The CRD schema (kubebuilder markers and CEL rules in apis/v1alpha1)
// refuses the same objects at admission; ValidateNodeQOSSpec repeats those
// checks so that a component reading an object written before the schema
// had them, or one that never went through the API server (a simulator
// config, a test fixture), refuses it too. test/integration's
// TestNodeQOSValidationAgreesWithAdmission holds the two to the same
// verdict and the same field, and lists where they differ on purpose.
//
// What it decides: whether a spec is valid on its own, on any node. What
// depends on a node -- a percent line that rounds to 0 on a tiny node, a
// utilization without a known capacity, a cpu_usage rule against a
// cpu_utilization one -- is the conversion's (pkg/core/qos
// BuildWaterlines). It never defaults, repairs or converts a spec, never
// does I/O, and holds no state: like upstream's validation packages, it
// sits beside the API types it checks.
package validation
