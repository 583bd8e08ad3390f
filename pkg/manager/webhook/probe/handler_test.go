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

package probe

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/waterline-dev/waterline/pkg/webhookprobe"
)

// The probe allows what it sees and says who answered, in a warning the
// check reads back.
func TestHandlerAnswersWithTheReplica(t *testing.T) {
	resp := (&Handler{Replica: "waterline-manager-7d9f-abcde"}).Handle(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create}})
	if !resp.Allowed {
		t.Fatalf("the probe was refused: %+v", resp.Result)
	}
	if len(resp.Warnings) != 1 {
		t.Fatalf("warnings %q, want one", resp.Warnings)
	}
	if replica, ok := webhookprobe.Answered(resp.Warnings[0]); !ok || replica != "waterline-manager-7d9f-abcde" {
		t.Errorf("Answered(%q) = %q, %v; want the replica", resp.Warnings[0], replica, ok)
	}
	if _, ok := webhookprobe.Answered("some other webhook's warning"); ok {
		t.Error("another warning was read as the probe's answer")
	}
}
