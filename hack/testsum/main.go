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

// Command testsum reads `go test -json` on stdin and prints a readable
// summary: each package's result, the output of every failed test, every
// skipped test with its reason, then, last, each failed test again with
// the lines that say why (a log cut to its tail still names them), and a
// final "N passed, N failed, N skipped" line. It exits 1 when anything failed (a test, a package
// build, or the input ended in the middle of a package).
//
//	go test -json ./... | go run ./hack/testsum
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
)

// event is one line of test2json output.
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type key struct{ pkg, test string }

type summary struct {
	out                     io.Writer
	output                  map[key][]string
	passed, failed, skipped int
	failedPkgs              []string
	skips                   []string
	// failures are the failed tests and packages, each with the lines of
	// its output that say why, for the recap at the end.
	failures       []failure
	started, ended map[string]bool
	// timed are the top-level tests that passed or failed, for the list of
	// the slowest.
	timed []timedTest
}

type failure struct {
	name   string
	reason []string
}

// recapLines is how many lines of a failure's output the recap repeats.
const recapLines = 6

// why picks from a failed test's output the lines that say why: the
// test's own messages (file:line: ...), panics and timeouts; failing
// that, its last lines. At most recapLines, the first ones.
func why(lines []string) []string {
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		if fileLine.MatchString(t) || strings.HasPrefix(t, "panic:") || strings.HasPrefix(t, "test timed out") {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		for _, l := range lines {
			if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- ") && t != "FAIL" {
				out = append(out, t)
			}
		}
		out = out[max(0, len(out)-recapLines):]
	}
	return out[:min(len(out), recapLines)]
}

// fileLine matches a test's message: "name_test.go:12: ...".
var fileLine = regexp.MustCompile(`^[\w.-]+\.go:\d+: `)

type timedTest struct {
	name    string
	elapsed float64
}

// slowest is how many of the slowest top-level tests finish prints.
const slowest = 10

func newSummary(out io.Writer) *summary {
	return &summary{out: out, output: map[key][]string{}, started: map[string]bool{}, ended: map[string]bool{}}
}

func (s *summary) add(e event) {
	k := key{e.Package, e.Test}
	switch e.Action {
	case "start":
		s.started[e.Package] = true
	case "output":
		s.output[k] = append(s.output[k], e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			s.ended[e.Package] = true
			s.packageDone(e)
			return
		}
		if e.Action != "skip" && !strings.Contains(e.Test, "/") {
			s.timed = append(s.timed, timedTest{e.Package + " " + e.Test, e.Elapsed})
		}
		switch e.Action {
		case "pass":
			s.passed++
		case "fail":
			s.failed++
			s.failures = append(s.failures, failure{name: e.Package + " " + e.Test, reason: why(s.output[k])})
			fmt.Fprintf(s.out, "--- FAIL %s %s (%.1fs)\n", e.Package, e.Test, e.Elapsed)
			for _, line := range s.output[k] {
				fmt.Fprint(s.out, "    ", line)
			}
		case "skip":
			s.skipped++
			reason := skipReason(s.output[k])
			s.skips = append(s.skips, fmt.Sprintf("SKIP %s %s: %s", e.Package, e.Test, reason))
			fmt.Fprintf(s.out, "--- SKIP %s %s: %s\n", e.Package, e.Test, reason)
		}
		delete(s.output, k)
	}
}

func (s *summary) packageDone(e event) {
	k := key{e.Package, ""}
	switch e.Action {
	case "pass":
		fmt.Fprintf(s.out, "ok   %s (%.1fs)\n", e.Package, e.Elapsed)
	case "skip":
		fmt.Fprintf(s.out, "-    %s (no tests)\n", e.Package)
	case "fail":
		s.failedPkgs = append(s.failedPkgs, e.Package)
		fmt.Fprintf(s.out, "FAIL %s (%.1fs)\n", e.Package, e.Elapsed)
		// Build errors and panics outside a test land on the package.
		var own []string
		for _, line := range s.output[k] {
			if strings.HasPrefix(line, "FAIL") || strings.HasPrefix(line, "ok ") {
				continue
			}
			own = append(own, line)
			fmt.Fprint(s.out, "    ", line)
		}
		if len(own) > 0 {
			s.failures = append(s.failures, failure{name: e.Package + " (the package)", reason: why(own)})
		}
	}
	delete(s.output, k)
}

// skipReason is what t.Skip printed: the output lines after the "=== RUN"
// and before "--- SKIP", or the text of the "--- SKIP" line's follow-up.
func skipReason(lines []string) string {
	var parts []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " | ")
}

func (s *summary) finish() int {
	var unfinished []string
	for p := range s.started {
		if !s.ended[p] {
			unfinished = append(unfinished, p)
		}
	}
	sort.Strings(unfinished)
	for _, p := range unfinished {
		fmt.Fprintf(s.out, "FAIL %s (no result: the test binary died or the input was cut)\n", p)
		s.failedPkgs = append(s.failedPkgs, p)
	}
	if len(s.timed) > 0 {
		sort.SliceStable(s.timed, func(i, j int) bool { return s.timed[i].elapsed > s.timed[j].elapsed })
		n := min(slowest, len(s.timed))
		fmt.Fprintf(s.out, "\nslowest %d tests:\n", n)
		for _, t := range s.timed[:n] {
			fmt.Fprintf(s.out, "  %6.1fs %s\n", t.elapsed, t.name)
		}
	}
	if len(s.skips) > 0 {
		fmt.Fprintf(s.out, "\n%d skipped:\n", len(s.skips))
		for _, sk := range s.skips {
			fmt.Fprintln(s.out, "  "+sk)
		}
	}
	if len(s.failures) > 0 {
		fmt.Fprintf(s.out, "\n%d failures (their output is above):\n", len(s.failures))
		for _, f := range s.failures {
			fmt.Fprintln(s.out, "  FAIL "+f.name)
			for _, l := range f.reason {
				fmt.Fprintln(s.out, "      "+l)
			}
		}
	}
	fmt.Fprintf(s.out, "\n%d passed, %d failed, %d skipped", s.passed, s.failed, s.skipped)
	if len(s.failedPkgs) > 0 {
		fmt.Fprintf(s.out, "; failed packages: %s", strings.Join(s.failedPkgs, ", "))
	}
	fmt.Fprintln(s.out)
	if s.failed > 0 || len(s.failedPkgs) > 0 {
		return 1
	}
	return 0
}

func main() {
	s := newSummary(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not test2json (e.g. a build error on stderr merged in).
			fmt.Println(string(line))
			continue
		}
		s.add(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testsum: reading input:", err)
		os.Exit(2)
	}
	os.Exit(s.finish())
}
