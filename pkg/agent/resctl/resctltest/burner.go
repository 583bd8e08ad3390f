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

package resctltest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// helperEnv makes a test binary act as a burner instead of running tests.
const helperEnv = "WATERLINE_RESCTLTEST_BURNER"

// RunBurnerIfAsked turns the process into a burner when the test binary was
// re-executed by StartBurner, and never returns then. Call it first thing
// in TestMain of every package that starts burners.
func RunBurnerIfAsked() {
	if os.Getenv(helperEnv) == "" {
		return
	}
	os.Exit(runBurner())
}

// runBurner waits for "go" on stdin (so it can be moved into its cgroup
// first), says "ready", then uses CPU at the rate of the last "rate <milli>"
// line it read, until stdin closes.
func runBurner() int {
	runtime.GOMAXPROCS(1)
	in := bufio.NewReader(os.Stdin)
	if line, err := in.ReadString('\n'); err != nil || strings.TrimSpace(line) != "go" {
		return 2
	}
	var rate atomic.Int64
	rate.Store(1000)
	if v, err := strconv.ParseInt(os.Getenv(helperEnv), 10, 64); err == nil {
		rate.Store(v)
	}
	go func() {
		for {
			line, err := in.ReadString('\n')
			if err != nil {
				os.Exit(0)
			}
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "rate "); ok {
				if m, err := strconv.ParseInt(v, 10, 64); err == nil {
					rate.Store(m)
				}
			}
		}
	}()
	fmt.Println("ready")
	burn(&rate)
	return 0
}

// burn uses rate millicores: in every 10 ms window it spins until the
// process has used rate/1000 of the window in CPU time, then sleeps to the
// window's end. Throttled by a CFS quota, it simply gets less.
func burn(rate *atomic.Int64) {
	const window = 10 * time.Millisecond
	x := uint64(1)
	for {
		start := time.Now()
		budget := time.Duration(rate.Load()) * window / 1000
		cpu0 := processCPU()
		for processCPU()-cpu0 < budget && time.Since(start) < window {
			for range 1000 {
				x = x*6364136223846793005 + 1442695040888963407
			}
		}
		if x == 0 {
			fmt.Println(x)
		}
		if rest := window - time.Since(start); rest > 0 {
			time.Sleep(rest)
		}
	}
}

func processCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// Burner is a CPU burner process in a cgroup.
type Burner struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	t     testing.TB
}

// StartBurner starts the test binary as a burner using milli millicores,
// moves it into cgroup cg of node and waits until it burns. It is killed
// when the test ends, before the node's cgroups are removed.
func StartBurner(t testing.TB, node *RealNode, cg string, milli int64) *Burner {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+strconv.FormatInt(milli, 10))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("Starting a burner: %v", err)
	}
	b := &Burner{cmd: cmd, stdin: stdin, t: t}
	// Registered after the node's cleanup, so it runs first.
	t.Cleanup(b.Stop)
	node.AddProcess(cg, cmd.Process.Pid)
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("Burner did not get ready: %q, %v", line, err)
	}
	return b
}

// SetRate changes the CPU the burner uses, in millicores.
func (b *Burner) SetRate(milli int64) {
	b.t.Helper()
	if _, err := fmt.Fprintf(b.stdin, "rate %d\n", milli); err != nil {
		b.t.Fatalf("Changing the burner's rate: %v", err)
	}
}

// Stop kills the burner and waits for it.
func (b *Burner) Stop() {
	if b.cmd.ProcessState != nil {
		return
	}
	_ = b.cmd.Process.Kill()
	_ = b.cmd.Wait()
}
