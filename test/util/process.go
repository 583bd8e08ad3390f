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
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Process is a child process a test started. Stop ends it; t.Cleanup stops
// it anyway.
type Process struct {
	Name    string
	LogPath string

	cmd      *exec.Cmd
	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// StartProcess runs bin-relative or absolute path with args, logging stdout
// and stderr to a file in the test's temporary directory (printed when the
// test fails). The process gets its own process group and SIGKILL when the
// test binary dies.
func StartProcess(t testing.TB, name, path string, args ...string) *Process {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("Creating log file for %s: %v", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("Starting %s (%s): %v", name, path, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			dumpLog(t, name, logPath)
		}
	})
	return p
}

// Stop sends SIGTERM to the process group, waits up to 10 s, then SIGKILLs it.
func (p *Process) Stop() {
	p.stopOnce.Do(func() {
		p.signalGroup(unix.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.signalGroup(unix.SIGKILL)
			<-p.done
		}
	})
}

// Kill SIGKILLs the process group at once, as a crash would, and waits.
func (p *Process) Kill() {
	p.stopOnce.Do(func() {
		p.signalGroup(unix.SIGKILL)
		<-p.done
	})
}

// Exited reports whether the process has ended, and its error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

func (p *Process) signalGroup(sig unix.Signal) {
	if err := unix.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		_ = p.cmd.Process.Signal(sig)
	}
}

// WaitExit waits for the process to end by itself, failing the test when
// it does not within timeout.
func (p *Process) WaitExit(t testing.TB, timeout time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.waitErr
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %v", p.Name, timeout)
		return nil
	}
}

func dumpLog(t testing.TB, name, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	const max = 16 << 10
	if len(data) > max {
		data = append([]byte("...\n"), data[len(data)-max:]...)
	}
	t.Logf("Last output of %s (%s):\n%s", name, path, data)
}

var buildMu sync.Mutex

// BuildBinary builds ./cmd/<name> of this checkout into bin/<name> and
// returns its path. The go command relinks only when something changed, so
// tests always run the code in the tree, never a stale binary. A file lock
// keeps test packages running in parallel from building over each other.
func BuildBinary(t testing.TB, name string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	out := filepath.Join(BinDir(), name)
	if err := os.MkdirAll(BinDir(), 0o755); err != nil {
		t.Fatalf("Creating %s: %v", BinDir(), err)
	}
	lock, err := os.OpenFile(filepath.Join(BinDir(), ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("Opening build lock: %v", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatalf("Locking build lock: %v", err)
	}
	defer func() { _ = unix.Flock(int(lock.Fd()), unix.LOCK_UN) }()

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/"+name)
	cmd.Dir = RepoRoot()
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("Building %s: %v\n%s", name, err, output)
	}
	return out
}

// Eventually polls cond every interval until it returns true or timeout
// passes, then fails the test with msg and the last error cond returned.
func Eventually(t testing.TB, timeout, interval time.Duration, cond func() (bool, error), msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("Timed out after %v: %s (last error: %v)", timeout, fmt.Sprintf(msg, args...), lastErr)
		}
		time.Sleep(interval)
	}
}
