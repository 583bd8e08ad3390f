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

package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func run(t *testing.T, events ...event) (string, int) {
	t.Helper()
	var b strings.Builder
	s := newSummary(&b)
	for _, e := range events {
		// Round-trip through JSON as test2json's output would be read.
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var got event
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		s.add(got)
	}
	code := s.finish()
	return b.String(), code
}

func TestSummaryShowsSkipsWithReasonsAndCounts(t *testing.T) {
	out, code := run(t,
		event{Action: "start", Package: "p"},
		event{Action: "run", Package: "p", Test: "TestA"},
		event{Action: "pass", Package: "p", Test: "TestA"},
		event{Action: "run", Package: "p", Test: "TestNode"},
		event{Action: "output", Package: "p", Test: "TestNode", Output: "=== RUN   TestNode\n"},
		event{Action: "output", Package: "p", Test: "TestNode", Output: "    realnode.go:10: SKIP: no containerd on this machine\n"},
		event{Action: "output", Package: "p", Test: "TestNode", Output: "--- SKIP: TestNode (0.00s)\n"},
		event{Action: "skip", Package: "p", Test: "TestNode"},
		event{Action: "pass", Package: "p", Elapsed: 1.5},
	)
	if code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	for _, want := range []string{
		"--- SKIP p TestNode: realnode.go:10: SKIP: no containerd on this machine",
		"ok   p (1.5s)",
		"1 skipped:",
		"1 passed, 0 failed, 1 skipped",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestSummaryFailsOnFailedTestBuildErrorOrCutInput(t *testing.T) {
	for name, events := range map[string][]event{
		"failed test": {
			{Action: "start", Package: "p"},
			{Action: "output", Package: "p", Test: "TestB", Output: "    b_test.go:3: boom\n"},
			{Action: "fail", Package: "p", Test: "TestB"},
			{Action: "fail", Package: "p"},
		},
		"build error": {
			{Action: "start", Package: "p"},
			{Action: "output", Package: "p", Output: "p.go:1: syntax error\n"},
			{Action: "fail", Package: "p"},
		},
		"cut input": {
			{Action: "start", Package: "p"},
			{Action: "run", Package: "p", Test: "TestC"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			out, code := run(t, events...)
			if code != 1 {
				t.Errorf("exit code %d, want 1; output:\n%s", code, out)
			}
			if !strings.Contains(out, "FAIL") {
				t.Errorf("output says nothing failed:\n%s", out)
			}
		})
	}
}

func TestSummaryListsTheSlowestTopLevelTests(t *testing.T) {
	events := []event{{Action: "start", Package: "p"}}
	for i := range 12 {
		name := "Test" + string(rune('A'+i))
		events = append(events, event{Action: "pass", Package: "p", Test: name, Elapsed: float64(i)})
	}
	events = append(events,
		event{Action: "pass", Package: "p", Test: "TestL/sub", Elapsed: 99},
		event{Action: "fail", Package: "p", Test: "TestSlowFail", Elapsed: 50},
		event{Action: "fail", Package: "p"})
	out, _ := run(t, events...)
	_, list, ok := strings.Cut(out, "slowest 10 tests:\n")
	if !ok {
		t.Fatalf("no list of the slowest tests:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(list), "\n")[:10]
	if !strings.HasSuffix(lines[0], " p TestSlowFail") || !strings.HasSuffix(lines[1], " p TestL") || !strings.HasSuffix(lines[9], " p TestD") {
		t.Errorf("slowest first, failures included, subtests left out; got:\n%s", strings.Join(lines, "\n"))
	}
	if strings.Contains(out, "TestL/sub") && strings.Contains(list, "TestL/sub") {
		t.Errorf("a subtest is listed:\n%s", list)
	}
}

// A log cut to its last lines, as CI shows it, still names each failed
// test and why, after the long lists.
func TestSummaryRecapsFailuresLast(t *testing.T) {
	events := []event{{Action: "start", Package: "p"}}
	for i := range 12 {
		events = append(events, event{Action: "pass", Package: "p", Test: "TestOK" + string(rune('A'+i)), Elapsed: 1})
	}
	events = append(events,
		event{Action: "output", Package: "p", Test: "TestFlaky", Output: "=== RUN   TestFlaky\n"},
		event{Action: "output", Package: "p", Test: "TestFlaky", Output: "    log.go:7: the agent started\n"},
		event{Action: "output", Package: "p", Test: "TestFlaky", Output: "agent: I1129 a log line of a process\n"},
		event{Action: "output", Package: "p", Test: "TestFlaky", Output: "    flaky_test.go:42: want 200, got 500\n"},
		event{Action: "output", Package: "p", Test: "TestFlaky", Output: "--- FAIL: TestFlaky (3.00s)\n"},
		event{Action: "fail", Package: "p", Test: "TestFlaky", Elapsed: 3},
		event{Action: "output", Package: "p", Test: "TestSilent", Output: "=== RUN   TestSilent\n"},
		event{Action: "output", Package: "p", Test: "TestSilent", Output: "exit status 3\n"},
		event{Action: "fail", Package: "p", Test: "TestSilent", Elapsed: 1},
		event{Action: "fail", Package: "p", Elapsed: 5},
	)
	out, code := run(t, events...)
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	_, recap, ok := strings.Cut(out, "2 failures (their output is above):\n")
	if !ok {
		t.Fatalf("no recap of the failures:\n%s", out)
	}
	want := "  FAIL p TestFlaky\n      log.go:7: the agent started\n      flaky_test.go:42: want 200, got 500\n" +
		"  FAIL p TestSilent\n      exit status 3\n\n12 passed, 2 failed, 0 skipped"
	if !strings.HasPrefix(recap, want) {
		t.Errorf("recap:\n%s\nwant it to start:\n%s", recap, want)
	}
	if strings.Contains(recap, "a log line of a process") || strings.Contains(recap, "slowest") {
		t.Errorf("the recap repeats more than why, or is not last:\n%s", recap)
	}
}
