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

package util

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackdateReport makes NodeMetric name's last report look stored at at,
// as the NodeMetric of an agent gone since then looks: a test writes its
// report now, but LoadAware and waterline check age a report by when the
// API server stored it (the managedFields entry that owns
// status.updateTime), not only by its updateTime, which is the node's
// clock. The API server ignores a change of managedFields times alone, so
// the entry is handed to the manager "waterline-agent" at at, together
// with a label that marks the object backdated.
func (c *Cluster) BackdateReport(ctx context.Context, name string, at time.Time) error {
	client := c.Waterline.WaterlineV1alpha1().NodeMetrics()
	nm, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	found := false
	for i := range nm.ManagedFields {
		mf := &nm.ManagedFields[i]
		if mf.Subresource == "status" && strings.Contains(mf.FieldsV1.GetRawString(), `"f:updateTime"`) {
			mf.Manager, mf.Time, found = "waterline-agent", &metav1.Time{Time: at}, true
		}
	}
	if !found {
		return fmt.Errorf("NodeMetric %s has no report to backdate (no status entry owns updateTime)", name)
	}
	if nm.Labels == nil {
		nm.Labels = map[string]string{}
	}
	nm.Labels["waterline.dev/test-backdated"] = fmt.Sprint(at.Unix())
	nm, err = client.Update(ctx, nm, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	for _, mf := range nm.ManagedFields {
		if mf.Subresource == "status" && mf.Manager == "waterline-agent" && mf.Time != nil && mf.Time.Unix() == at.Unix() {
			return nil
		}
	}
	return fmt.Errorf("the API server did not keep NodeMetric %s's report backdated to %s: %v", name, at, nm.ManagedFields)
}
