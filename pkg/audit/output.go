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

package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("writing JSON report: %w", err)
	}
	return nil
}

// WriteTable writes the report as one table per finding, for people.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	section := func(title string, n int, header string) {
		fmt.Fprintf(tw, "\n%s (%d)\n", title, n)
		if n > 0 {
			fmt.Fprintln(tw, header)
		}
	}

	section("PODS WITHOUT A PRIORITY", len(r.PodsWithoutPriority), "NAMESPACE\tNAME\tNODE\tCLASS\tPRIORITY\tREASON")
	for _, p := range r.PodsWithoutPriority {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", p.Namespace, p.Name, dash(p.Node), dash(p.PriorityClassName), p.Priority, p.Reason)
	}
	section("PRIORITYCLASSES WITH globalDefault", len(r.GlobalDefaultClasses), "NAME\tVALUE")
	for _, c := range r.GlobalDefaultClasses {
		fmt.Fprintf(tw, "%s\t%d\n", c.Name, c.Value)
	}
	section("NONPREEMPTIBLE PRIORITYCLASSES", len(r.NonPreemptibleClasses), "NAME\tVALUE\tPREEMPTIBLE-BY")
	for _, c := range r.NonPreemptibleClasses {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", c.Name, c.Value, c.PreemptibleBy)
	}
	section("MALFORMED PRIORITYCLASS ANNOTATIONS", len(r.MalformedClasses), "NAME\tVALUE\tPROBLEM")
	for _, c := range r.MalformedClasses {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", c.Name, c.Value, c.Reason)
	}
	section("DAEMONSETS BELOW THE DAEMONSET CLASS", len(r.DaemonSetsBelowClass), "NAMESPACE\tNAME\tCLASS\tPRIORITY\tWANT")
	for _, d := range r.DaemonSetsBelowClass {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s (%d)\n", d.Namespace, d.Name, dash(d.PriorityClassName), d.Priority, d.WantClass, d.WantPriority)
	}
	section("DRY RUN: PENDING PODS IF PREEMPTION WERE ON", len(r.DryRun), "PENDING POD\tPRIORITY\tOUTCOME\tNODE\tVICTIMS\tDETAIL")
	for _, f := range r.DryRun {
		victims := make([]string, 0, len(f.Victims))
		for _, v := range f.Victims {
			victims = append(victims, fmt.Sprintf("%s/%s(%d)", v.Namespace, v.Name, v.Priority))
		}
		detail := f.Message
		if f.PDBViolations > 0 {
			detail = fmt.Sprintf("%d PodDisruptionBudget violation(s)", f.PDBViolations)
		}
		fmt.Fprintf(tw, "%s/%s\t%d\t%s\t%s\t%s\t%s\n", f.Pod.Namespace, f.Pod.Name, f.Pod.Priority, f.Outcome,
			dash(f.Node), dash(strings.Join(victims, ",")), dash(detail))
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintf(tw, "\nWARNINGS (%d)\n", len(r.Warnings))
		for _, w := range r.Warnings {
			fmt.Fprintln(tw, w)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing table report: %w", err)
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
