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

package app

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/waterline-dev/waterline/pkg/trace"
	testutil "github.com/waterline-dev/waterline/test/util"
)

// citationLine is a line of Markdown that is only a command of this
// binary, run from the repository root, whose output follows:
// "`go run ./cmd/waterline ARGS`", optionally in parentheses and with a
// colon. The rest of its paragraph is prose; the next block, after any
// further such citations (their outputs follow one another, a blank line
// apart), is the output: a fenced block, or a table with the bullet list
// under it (what `sim -o markdown` prints).
var citationLine = regexp.MustCompile("^\\(?`go run \\./cmd/waterline ([^`]+)`\\)?:?$")

// tracePath is where an output names a shared trace folder, which depends
// on where the clone sits beside the traces.
var tracePath = regexp.MustCompile(`\([^()\s]*shared/traces/([^()\s]+)\)`)

// citedOutput is an output a Markdown file shows, and the commands that
// print it.
type citedOutput struct {
	file     string // from the repository root
	line     int    // of the first command
	commands [][]string
	want     string
}

// TestREADMEOutputs runs every command whose output a Markdown file of
// the repository shows (see citationLine) and checks the file shows what
// it prints today: the README's tables are the commands', not figures
// copied once and left behind.
func TestREADMEOutputs(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPING: runs the simulator and the predictor evaluations the READMEs cite (-short)")
	}
	root := testutil.RepoRoot()
	cited := citedOutputs(t, root)
	if len(cited) < 5 {
		t.Fatalf("found %d cited outputs in the repository's Markdown, want the README's, pkg/sim's and pkg/core/predict's", len(cited))
	}
	// The commands are run as the READMEs say: from the repository root.
	t.Chdir(root)
	_, tracesErr := trace.FindShared(".", trace.AlibabaV2018Folder)
	for _, c := range cited {
		t.Run(c.file+":"+strconv.Itoa(c.line), func(t *testing.T) {
			var got strings.Builder
			for _, args := range c.commands {
				var report string
				if args[0] == "sim" && !slices.ContainsFunc(args, func(a string) bool { return a == "--out" || strings.HasPrefix(a, "--out=") }) {
					// Not the default waterline-sim/ in the repository.
					report = t.TempDir()
					args = append(slices.Clone(args), "--out="+report)
				}
				cmd := NewCommand()
				var out, errOut bytes.Buffer
				cmd.SetOut(&out)
				cmd.SetErr(&errOut)
				cmd.SetArgs(args)
				if err := cmd.ExecuteContext(t.Context()); err != nil {
					if tracesErr != nil {
						t.Skipf("SKIP: waterline %s: %v; the shared traces are not available (%v)", strings.Join(args, " "), err, tracesErr)
					}
					t.Fatalf("waterline %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
				}
				if got.Len() > 0 {
					got.WriteString("\n") // a blank line between two outputs
				}
				got.WriteString(out.String())
				if slices.Equal(args[:len(args)-1], []string{"sim", "-o", "markdown"}) {
					checkDemoCharts(t, root, report)
				}
			}
			norm := func(s string) string {
				return strings.TrimRight(tracePath.ReplaceAllString(s, "(shared/traces/$1)"), "\n")
			}
			if diff := cmp.Diff(strings.Split(norm(c.want), "\n"), strings.Split(norm(got.String()), "\n")); diff != "" {
				t.Errorf("%s:%d shows an output its command no longer prints; put the command's output there (-shown +printed):\n%s", c.file, c.line, diff)
			}
		})
	}
}

// checkDemoCharts checks that the demo's charts the READMEs show
// (pkg/sim/docs/demo-ID.svg) are the charts of the default simulation,
// whose report is in dir.
func checkDemoCharts(t *testing.T, root, dir string) {
	t.Helper()
	shown, err := filepath.Glob(filepath.Join(root, "pkg", "sim", "docs", "demo-*.svg"))
	if err != nil || len(shown) == 0 {
		t.Fatalf("no pkg/sim/docs/demo-*.svg (%v)", err)
	}
	for _, path := range shown {
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "demo-"), ".svg")
		got, err := os.ReadFile(filepath.Join(dir, id+".svg"))
		if err != nil {
			t.Fatalf("%s: the demo has no chart %s: %v", path, id, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not the demo's %s.svg today; copy it from make demo's _output/demo", path, id)
		}
	}
}

// citedOutputs finds every cited output in the repository's Markdown.
func citedOutputs(t *testing.T, root string) []citedOutput {
	t.Helper()
	var cited []citedOutput
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "bin" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".md") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		found, err := parseCitations(rel, string(data))
		if err != nil {
			t.Error(err)
		}
		cited = append(cited, found...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return cited
}

// parseCitations finds the cited outputs of one Markdown file; an error
// names a citation without an output under it.
func parseCitations(file, text string) ([]citedOutput, error) {
	lines := strings.Split(text, "\n")
	blank := func(i int) bool { return i < len(lines) && strings.TrimSpace(lines[i]) == "" }
	var out []citedOutput
	var cur *citedOutput
	for i := 0; i < len(lines); i++ {
		m := citationLine.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			continue
		}
		if strings.ContainsAny(m[1], `"'\$`) {
			return out, fmt.Errorf("%s:%d: the cited command quotes its arguments; write them so that splitting at spaces gives them", file, i+1)
		}
		if cur == nil {
			cur = &citedOutput{file: file, line: i + 1}
		}
		cur.commands = append(cur.commands, strings.Fields(m[1]))
		// The rest of the paragraph, then the blank lines after it.
		j := i + 1
		for j < len(lines) && !blank(j) {
			j++
		}
		for blank(j) {
			j++
		}
		if j < len(lines) && citationLine.MatchString(strings.TrimSpace(lines[j])) {
			i = j - 1 // another command whose output comes in the same block
			continue
		}
		var block []string
		switch {
		case j < len(lines) && strings.HasPrefix(lines[j], "```"):
			k := j + 1
			for k < len(lines) && !strings.HasPrefix(lines[k], "```") {
				k++
			}
			block = lines[j+1 : min(k, len(lines))]
			i = k
		case j < len(lines) && strings.HasPrefix(lines[j], "|"):
			k := j
			for k < len(lines) && strings.HasPrefix(lines[k], "|") {
				k++
			}
			block = lines[j:k]
			// The bullets sim -o markdown prints under its table.
			if blank(k) && k+1 < len(lines) && strings.HasPrefix(lines[k+1], "- ") {
				block = append(block, "")
				k++
				for k < len(lines) && strings.HasPrefix(lines[k], "- ") {
					block = append(block, lines[k])
					k++
				}
			}
			i = k - 1
		default:
			return out, fmt.Errorf("%s:%d: `go run ./cmd/waterline %s` is not followed by its output (a fenced block or a table)", file, cur.line, strings.Join(cur.commands[0], " "))
		}
		cur.want = strings.Join(block, "\n")
		out = append(out, *cur)
		cur = nil
	}
	return out, nil
}

func TestParseCitations(t *testing.T) {
	text := strings.Join([]string{
		"Prose that names `go run ./cmd/waterline sim` in passing is not a citation.",
		"",
		"`go run ./cmd/waterline sim -o markdown`:",
		"",
		"| a | b |",
		"|---|---|",
		"",
		"- a line under the table",
		"",
		"after",
		"",
		"The two halves",
		"(`go run ./cmd/waterline predict --nodes a`):",
		"",
		"`go run ./cmd/waterline predict --nodes b`",
		"",
		"```",
		"out a",
		"out b",
		"```",
	}, "\n")
	got, err := parseCitations("x.md", text)
	if err != nil {
		t.Fatal(err)
	}
	want := []citedOutput{
		{file: "x.md", line: 3, commands: [][]string{{"sim", "-o", "markdown"}}, want: "| a | b |\n|---|---|\n\n- a line under the table"},
		{file: "x.md", line: 13, commands: [][]string{{"predict", "--nodes", "a"}, {"predict", "--nodes", "b"}}, want: "out a\nout b"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(citedOutput{})); diff != "" {
		t.Errorf("parseCitations (-want +got):\n%s", diff)
	}

	// A citation must be followed by what it printed.
	if _, err := parseCitations("y.md", "`go run ./cmd/waterline sim`:\n\nprose\n"); err == nil || !strings.Contains(err.Error(), "y.md:1") {
		t.Errorf("a citation without output: error %v, want one naming y.md:1", err)
	}
}
