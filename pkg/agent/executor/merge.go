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

package executor

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/pkg/agent"
)

// refuseMerge refuses waterlines whose merge is out of order (the NodeQOS
// objects selecting the node are each valid, but together put an evict
// line under a throttle line, say). Acting on them would evict before
// throttling, so the executor keeps its last good planner -- or, without
// one, acts on nothing -- until the objects change. It records one Warning
// event per refused set of objects on the node (the manager reports the
// same refusal as a condition on the NodeQOS objects) and returns err for
// the cycle to report.
func (e *Executor) refuseMerge(logger klog.Logger, s *agent.Snapshot, key uint64, err error) error {
	if e.refusedKey != key {
		e.refusedKey = key
		logger.Error(err, "Refusing the merged NodeQOS lines; keeping the last good ones", "node", klog.KObj(s.Node), "haveLastGood", e.planner != nil)
		e.d.Recorder.Eventf(s.Node, corev1.EventTypeWarning, "RefusedNodeQOSMerge",
			"Refusing the NodeQOS objects selecting this node, keeping the last good waterlines: %v", err)
	}
	return fmt.Errorf("node %s: %w", s.Node.Name, err)
}
