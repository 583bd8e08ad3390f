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

package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/waterline-dev/waterline/pkg/scheduler/apis/config"
)

// ValidateBandPreemptionArgs returns every problem with defaulted
// BandPreemption args, or nil. The rules are DefaultPreemption's, which
// BandPreemption hands the values to.
func ValidateBandPreemptionArgs(path *field.Path, args *config.BandPreemptionArgs) field.ErrorList {
	var errs field.ErrorList
	pctPath := path.Child("minCandidateNodesPercentage")
	absPath := path.Child("minCandidateNodesAbsolute")
	if p := args.MinCandidateNodesPercentage; p < 0 || p > 100 {
		errs = append(errs, field.Invalid(pctPath, p, "must be in [0, 100]"))
	}
	if a := args.MinCandidateNodesAbsolute; a < 0 {
		errs = append(errs, field.Invalid(absPath, a, "must be at least 0"))
	}
	if args.MinCandidateNodesPercentage == 0 && args.MinCandidateNodesAbsolute == 0 {
		errs = append(errs,
			field.Invalid(pctPath, args.MinCandidateNodesPercentage, "may not be 0 when minCandidateNodesAbsolute is 0"),
			field.Invalid(absPath, args.MinCandidateNodesAbsolute, "may not be 0 when minCandidateNodesPercentage is 0"))
	}
	return errs
}
