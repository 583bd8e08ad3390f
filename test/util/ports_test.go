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
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// testPortRange is three ports below the ephemeral range for the
// reservation tests, at a place that differs from run to run.
func testPortRange(t *testing.T) (lo, hi int) {
	lo, hi, ok := reservablePorts()
	if !ok {
		t.Skip("SKIPPING: no room below the ephemeral port range here; FreePort takes ephemeral ports")
	}
	lo += os.Getpid() % (hi - lo - 3)
	return lo, lo + 3
}

// TestReservePort: a reserved port is bindable, not handed out again
// while held, in this process or another, and handed out again once
// released.
func TestReservePort(t *testing.T) {
	lo, hi := testPortRange(t)
	file := filepath.Join(t.TempDir(), "ports")
	held := map[int]func(){}
	for {
		port, release, err := reservePort(lo, hi, file)
		if err != nil {
			break
		}
		if port < lo || port >= hi {
			t.Fatalf("reserved port %d, outside [%d, %d)", port, lo, hi)
		}
		if _, dup := held[port]; dup {
			t.Fatalf("port %d reserved twice", port)
		}
		held[port] = release
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("reserved port %d cannot be bound: %v", port, err)
		}
		l.Close()
		if len(held) > hi-lo {
			t.Fatalf("%d ports reserved out of %d", len(held), hi-lo)
		}
	}
	if len(held) == 0 {
		t.Fatalf("no port of [%d, %d) reserved", lo, hi)
	}

	// Another process gets none of them while they are held.
	out, err := helperReserve(t, lo, hi, file)
	if err == nil {
		t.Fatalf("another process reserved port %s while this one holds %v", out, held)
	}

	// Released, a port goes again: to this process and to another.
	var port int
	for p, release := range held {
		port = p
		release()
		break
	}
	if out, err := helperReserve(t, lo, hi, file); err != nil || out != strconv.Itoa(port) {
		t.Fatalf("another process reserved %q (%v) after port %d was released", out, err, port)
	}
	got, release, err := reservePort(lo, hi, file)
	if err != nil || got != port {
		t.Fatalf("reserved %d (%v) after port %d was released, want it", got, err, port)
	}
	release()
}

// helperReserve runs this test binary as a child that reserves a port of
// [lo, hi) from file, prints it and exits (TestMain).
func helperReserve(t *testing.T, lo, hi int, file string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), reservePortEnv+"="+strconv.Itoa(lo)+","+strconv.Itoa(hi)+","+file)
	b, err := cmd.Output()
	if port, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "reserved "); ok {
		return port, err
	}
	if err == nil {
		t.Fatalf("helper printed no port: %q", b)
	}
	return "", err
}

// reservePortEnv makes the test binary helperReserve's child.
const reservePortEnv = "WATERLINE_TEST_RESERVE_PORT"

// TestMain runs the tests, or, as helperReserve's child, reserves a port:
// it prints "reserved PORT" and exits 0, or prints the error and exits 1.
func TestMain(m *testing.M) {
	spec, ok := os.LookupEnv(reservePortEnv)
	if !ok {
		os.Exit(m.Run())
	}
	var lo, hi int
	var file string
	if parts := strings.SplitN(spec, ",", 3); len(parts) == 3 {
		lo, _ = strconv.Atoi(parts[0])
		hi, _ = strconv.Atoi(parts[1])
		file = parts[2]
	}
	if hi <= lo {
		fmt.Fprintf(os.Stderr, "bad %s=%q\n", reservePortEnv, spec)
		os.Exit(2)
	}
	port, release, err := reservePort(lo, hi, file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("reserved %d\n", port)
	release()
	os.Exit(0)
}
