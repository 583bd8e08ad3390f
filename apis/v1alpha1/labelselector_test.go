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

package v1alpha1

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLabelSelectorIsMetav1s: a selector written for metav1.LabelSelector
// decodes into LabelSelector unchanged, AsMetav1 gives what metav1 decodes,
// and both encode alike, so objects stored before the type changed read
// the same and webhook configurations get the same selectors.
func TestLabelSelectorIsMetav1s(t *testing.T) {
	for _, doc := range []string{
		`{}`,
		`{"matchLabels":{"team":"data","example.com/app":""}}`,
		`{"matchExpressions":[{"key":"team","operator":"In","values":["data","ml"]},{"key":"app","operator":"Exists"}]}`,
		`{"matchLabels":{"a":"b"},"matchExpressions":[{"key":"c","operator":"NotIn","values":[""]}]}`,
	} {
		var ours LabelSelector
		var theirs metav1.LabelSelector
		if err := json.Unmarshal([]byte(doc), &ours); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(doc), &theirs); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&theirs, ours.AsMetav1()); diff != "" {
			t.Errorf("%s: AsMetav1() differs from metav1's decoding (-metav1 +ours):\n%s", doc, diff)
		}
		a, _ := json.Marshal(&ours)
		b, _ := json.Marshal(&theirs)
		if string(a) != string(b) {
			t.Errorf("%s: encodes as %s, metav1 as %s", doc, a, b)
		}
	}
	if (*LabelSelector)(nil).AsMetav1() != nil {
		t.Error("AsMetav1() of nil is not nil")
	}
}
