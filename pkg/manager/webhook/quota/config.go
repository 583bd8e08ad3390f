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

package quota

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Config says which pods need a ResourceQuota. It mirrors one
// limitedResources entry of the ResourceQuota admission plugin's
// configuration (resource: pods, matchScopes on scopeName PriorityClass).
// Exactly one of PriorityClasses and AllPriorityClasses must be set: a
// webhook that limits nothing is a configuration mistake.
type Config struct {
	// PriorityClasses are the names of the classes whose pods need a covering
	// ResourceQuota -- a PriorityClass scope with operator In and these values
	// (docs/design/preemption.md#quota-per-priorityclass). Each must be a valid
	// PriorityClass name (a DNS subdomain), listed once. Pods of other classes,
	// and pods without a class, are never judged. Default: empty.
	PriorityClasses []string `json:"priorityClasses,omitempty"`
	// AllPriorityClasses makes every pod that names a PriorityClass need a
	// covering ResourceQuota -- a PriorityClass scope with operator Exists.
	// Pods without a class are never judged. Default: false.
	AllPriorityClasses bool `json:"allPriorityClasses,omitempty"`
}

// Validate returns every problem of the configuration, each naming its
// field and value.
func (c *Config) Validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	classesPath := path.Child("priorityClasses")
	switch {
	case len(c.PriorityClasses) == 0 && !c.AllPriorityClasses:
		errs = append(errs, field.Required(classesPath, "list the PriorityClasses that need a ResourceQuota, or set allPriorityClasses"))
	case len(c.PriorityClasses) > 0 && c.AllPriorityClasses:
		errs = append(errs, field.Invalid(path.Child("allPriorityClasses"), c.AllPriorityClasses,
			"may not be true when priorityClasses is set: allPriorityClasses already covers every class"))
	}
	seen := sets.New[string]()
	for i, name := range c.PriorityClasses {
		p := classesPath.Index(i)
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			errs = append(errs, field.Invalid(p, name, msg))
		}
		if seen.Has(name) {
			errs = append(errs, field.Duplicate(p, name))
		}
		seen.Insert(name)
	}
	return errs
}

// limits reports whether pods of class need a covering quota.
func (c *Config) limits(class string) bool {
	if class == "" {
		return false
	}
	return c.AllPriorityClasses || slices.Contains(c.PriorityClasses, class)
}
