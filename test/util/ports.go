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
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// FreePort returns a loopback TCP port for a process the test is about to
// start, held for the test until it ends.
//
// A port the kernel hands to a `:0` listener is free only for a moment:
// it comes from the ephemeral range, where every outgoing connection and
// every other `:0` listener of the parallel tests draws too, and can be
// taken before the process binds it. So FreePort takes ports below the
// ephemeral range (reservablePorts), which the kernel never hands out on
// its own, and reserves each for the test's lifetime with a lock on the
// port's byte of a file (portLockFile): test processes running side by
// side never get the same port, and a test that dies frees its ports with
// its locks. A port some other program listens on is skipped. Where that
// range is too small to search, it falls back to a `:0` port.
func FreePort(t testing.TB) int {
	t.Helper()
	if lo, hi, ok := reservablePorts(); ok {
		port, release, err := reservePort(lo, hi, portLockFile())
		if err == nil {
			t.Cleanup(release)
			return port
		}
		t.Logf("No port reserved in [%d, %d) (%v); taking an ephemeral one", lo, hi, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("Finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreePort reserves ports in [reservedPortsFloor, reservedPortsCeiling),
// cut short by the ephemeral range: above the well-known and most
// registered services' ports, below Kubernetes' NodePort range
// (30000-32767 by default).
const (
	reservedPortsFloor   = 20000
	reservedPortsCeiling = 30000
)

// reservablePorts is the range FreePort reserves from, when it holds at
// least 1000 ports.
func reservablePorts() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 0, 0, false
	}
	first, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0, 0, false
	}
	hi = min(first, reservedPortsCeiling)
	return reservedPortsFloor, hi, hi-reservedPortsFloor >= 1000
}

// portLockFile holds FreePort's locks, shared by every test process of
// this user on the machine.
func portLockFile() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("waterline-test-ports-%d", os.Getuid()))
}

// reservePort finds a port in [lo, hi) that no other caller holds and no
// program listens on, starting at a random one, and holds it until release
// is called (or the process exits). The hold is an open-file-description
// lock on byte port of file: it conflicts with every other open of the
// file, in this process too, and goes with the descriptor.
func reservePort(lo, hi int, file string) (port int, release func(), err error) {
	n := hi - lo
	start := rand.IntN(n)
	for i := range min(n, 200) {
		port := lo + (start+i)%n
		f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return 0, nil, err
		}
		lock := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: int64(port), Len: 1}
		if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &lock); err != nil {
			f.Close()
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
				continue // another test holds it
			}
			return 0, nil, err
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			f.Close() // some program listens on it
			continue
		}
		l.Close()
		return port, func() { f.Close() }, nil
	}
	return 0, nil, fmt.Errorf("every port tried is held or in use")
}
