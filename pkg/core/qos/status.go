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

package qos

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/waterline-dev/waterline/apis/v1alpha1"
)

// Conditions of NodeQOS.status the manager writes.
const (
	// ConditionValid is False when the object cannot be applied on some
	// node it selects (an invalid field, a bad selector, lines out of
	// order); the agents leave it out whole there.
	ConditionValid = "Valid"
	// ConditionOverlapping is True when another NodeQOS selects some of the
	// same nodes: there the lowest line of each action wins.
	ConditionOverlapping = "Overlapping"
	// ConditionMergeRefused is True when, on some node, this object merges
	// with others into lines out of order; the agents there refuse the
	// merge and keep their last good lines.
	ConditionMergeRefused = "MergeRefused"
)

// NodeView is what the status report needs of a node.
type NodeView struct {
	Name     string
	Labels   map[string]string
	Capacity Capacity
}

// NodeQOSReport is what the manager writes in one NodeQOS's status.
type NodeQOSReport struct {
	// MatchedNodes is how many nodes the object selects.
	MatchedNodes int32
	// Invalid is why the object cannot be applied, from the first node
	// (by name) where it cannot; empty when it can everywhere.
	Invalid string
	// InvalidNodes counts the nodes where it cannot.
	InvalidNodes int
	// OverlapsWith lists the other NodeQOS selecting some of the same
	// nodes, sorted.
	OverlapsWith []string
	// RefusedNodes lists the nodes where the merge including this object
	// is out of order, sorted; RefusedWhy is the first one's reason.
	RefusedNodes []string
	RefusedWhy   string
}

// maxListed caps the names a condition message lists.
const maxListed = 10

// ReportNodeQOS computes the status of every NodeQOS from the nodes: the
// same selection, build and merge check each node's agent makes, so that
// the objects say where they apply, where they cannot, and where their
// merge is refused.
func ReportNodeQOS(all []v1alpha1.NodeQOS, nodes []NodeView) map[string]*NodeQOSReport {
	out := make(map[string]*NodeQOSReport, len(all))
	for i := range all {
		out[all[i].Name] = &NodeQOSReport{}
	}
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b NodeView) int { return cmp.Compare(a.Name, b.Name) })
	type merged struct{ refused string }
	// Nodes with the same selection and capacity merge alike.
	cache := map[string]merged{}
	overlaps := map[string]map[string]bool{}
	for _, n := range nodes {
		selected, selErrs := SelectNodeQOS(all, n.Labels)
		for _, e := range selErrs {
			// field path nodeQOS[name].spec.nodeSelector
			for name, r := range out {
				if strings.Contains(e.Field, "["+name+"]") {
					r.InvalidNodes++
					if r.Invalid == "" {
						r.Invalid = e.Error()
					}
				}
			}
		}
		names := make([]string, 0, len(selected))
		var valid []*v1alpha1.NodeQOS
		for _, nq := range selected {
			r := out[nq.Name]
			r.MatchedNodes++
			names = append(names, nq.Name)
			if _, errs := BuildWaterlines([]*v1alpha1.NodeQOS{nq}, n.Capacity); len(errs) > 0 {
				r.InvalidNodes++
				if r.Invalid == "" {
					r.Invalid = fmt.Sprintf("on node %s: %v", n.Name, errs.ToAggregate())
				}
				continue
			}
			valid = append(valid, nq)
		}
		for _, a := range names {
			for _, b := range names {
				if a != b {
					if overlaps[a] == nil {
						overlaps[a] = map[string]bool{}
					}
					overlaps[a][b] = true
				}
			}
		}
		if len(valid) < 2 {
			continue
		}
		key := fmt.Sprintf("%d/%d/%s", n.Capacity.CPUMilli, n.Capacity.MemoryBytes, strings.Join(names, ","))
		m, ok := cache[key]
		if !ok {
			waterlines, _ := BuildWaterlines(valid, n.Capacity)
			if err := waterlines.CheckOrder(); err != nil {
				m.refused = err.Error()
			}
			cache[key] = m
		}
		if m.refused == "" {
			continue
		}
		for _, nq := range valid {
			r := out[nq.Name]
			if len(r.RefusedNodes) == 0 {
				r.RefusedWhy = m.refused
			}
			r.RefusedNodes = append(r.RefusedNodes, n.Name)
		}
	}
	for name, others := range overlaps {
		out[name].OverlapsWith = slices.Sorted(func(yield func(string) bool) {
			for o := range others {
				if !yield(o) {
					return
				}
			}
		})
	}
	return out
}

// Conditions turns the report into the object's conditions, with
// transitions at now. Conditions already in existing keep their transition
// time when their status does not change.
func (r *NodeQOSReport) Conditions(existing []metav1.Condition, generation int64, now metav1.Time) []metav1.Condition {
	set := func(typ string, status bool, reason, msg string) metav1.Condition {
		c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: msg,
			ObservedGeneration: generation, LastTransitionTime: now}
		if status {
			c.Status = metav1.ConditionTrue
		}
		for _, e := range existing {
			if e.Type == typ && e.Status == c.Status {
				c.LastTransitionTime = e.LastTransitionTime
			}
		}
		return c
	}
	var out []metav1.Condition
	if r.InvalidNodes > 0 {
		out = append(out, set(ConditionValid, false, "Invalid",
			fmt.Sprintf("Cannot be applied on %d node(s); agents leave it out there: %s", r.InvalidNodes, r.Invalid)))
	} else {
		out = append(out, set(ConditionValid, true, "Valid", "Applies on every node it selects"))
	}
	if len(r.OverlapsWith) > 0 {
		out = append(out, set(ConditionOverlapping, true, "SelectorsOverlap",
			fmt.Sprintf("Selects nodes also selected by %s; the lowest line of each action wins there", listed(r.OverlapsWith))))
	} else {
		out = append(out, set(ConditionOverlapping, false, "NoOverlap", "No other NodeQOS selects its nodes"))
	}
	if len(r.RefusedNodes) > 0 {
		out = append(out, set(ConditionMergeRefused, true, "LinesOutOfOrder",
			fmt.Sprintf("On %d node(s) (%s) the merge with other NodeQOS is out of order; their agents keep the last good lines: %s",
				len(r.RefusedNodes), listed(r.RefusedNodes), r.RefusedWhy)))
	} else {
		out = append(out, set(ConditionMergeRefused, false, "MergeInOrder", "Merges in order on every node it selects"))
	}
	return out
}

func listed(names []string) string {
	if len(names) > maxListed {
		return strings.Join(names[:maxListed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxListed)
	}
	return strings.Join(names, ", ")
}
