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
	"bufio"
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
		t.Skip("SKIP: no room below the ephemeral port range here; FreePort takes ephemeral ports")
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

// helperReserve runs TestHelperReservePort in a child process, which
// reserves a port of [lo, hi) from file, prints it and exits.
func helperReserve(t *testing.T, lo, hi int, file string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperReservePort$")
	cmd.Env = append(os.Environ(), "WATERLINE_RESERVE_PORT="+strconv.Itoa(lo)+","+strconv.Itoa(hi)+","+file)
	b, err := cmd.Output()
	s := bufio.NewScanner(strings.NewReader(string(b)))
	for s.Scan() {
		if port, ok := strings.CutPrefix(s.Text(), "reserved "); ok {
			return port, err
		}
	}
	if err == nil {
		t.Fatalf("helper printed no port: %s", b)
	}
	return "", err
}

// TestHelperReservePort is helperReserve's child; without its variable it
// does nothing.
func TestHelperReservePort(t *testing.T) {
	spec, ok := os.LookupEnv("WATERLINE_RESERVE_PORT")
	if !ok {
		return
	}
	parts := strings.Split(spec, ",")
	lo, _ := strconv.Atoi(parts[0])
	hi, _ := strconv.Atoi(parts[1])
	port, release, err := reservePort(lo, hi, parts[2])
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	os.Stdout.WriteString("reserved " + strconv.Itoa(port) + "\n")
}
