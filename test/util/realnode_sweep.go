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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A test binary killed with SIGKILL takes kubelet and containerd with it
// (Pdeathsig), but not what they started: containerd's shims outlive it,
// the pods' processes outlive their shims, and the mounts and cgroups stay.
// Every real node therefore names what it owns after one suffix -- its
// directory <TMPDIR>/waterline-node-<suffix> and its cgroup root
// /waterline-node-<suffix> -- and holds an exclusive flock on
// <dir>/.owner.lock for as long as it lives. The kernel drops the lock
// when the owner dies, however it dies, so "the lock is free" is the proof
// that nobody uses the node any more; a directory without the lock file
// (another tool's, or an older harness's) is never touched.

const (
	// nodeNamePrefix starts the name of a real node's directory and of
	// its cgroup root.
	nodeNamePrefix = "waterline-node-"
	// ownerLockFile is the node's owner lock, inside its directory.
	ownerLockFile = ".owner.lock"
	// stagingSuffix marks a node directory being created: the sweep's
	// pattern does not match it until it holds its lock.
	stagingSuffix = ".new"
)

// nodeBaseDir is where real nodes keep their directories.
func nodeBaseDir() string { return os.TempDir() }

// createNodeDir makes <base>/waterline-node-<suffix> with its owner lock
// held by the returned file. The directory is built under a name the sweep
// ignores and renamed once locked, so no sweep can see it unlocked.
func createNodeDir(base, suffix string) (string, *os.File, error) {
	staging := filepath.Join(base, "."+nodeNamePrefix+suffix+stagingSuffix)
	if err := os.Mkdir(staging, 0o700); err != nil {
		return "", nil, err
	}
	lock, err := os.OpenFile(filepath.Join(staging, ownerLockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		_ = os.RemoveAll(staging)
		return "", nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = lock.Close()
		_ = os.RemoveAll(staging)
		return "", nil, fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	// For whoever looks: the pid of the test binary that owns the node.
	_, _ = fmt.Fprintf(lock, "%d\n", os.Getpid())
	dir := filepath.Join(base, nodeNamePrefix+suffix)
	if err := os.Rename(staging, dir); err != nil {
		_ = lock.Close()
		_ = os.RemoveAll(staging)
		return "", nil, err
	}
	return dir, lock, nil
}

// nodeCgroupRoot is the cgroup root of the node whose directory is dir.
func nodeCgroupRoot(dir string) string { return "/" + filepath.Base(dir) }

// tryLockNode takes the owner lock of the node directory dir. It returns
// (nil, false, nil) when a live process holds it, and an error wrapping
// fs.ErrNotExist when dir has no owner lock (not a harness node).
func tryLockNode(dir string) (*os.File, bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, ownerLockFile), os.O_RDWR, 0)
	if err != nil {
		return nil, false, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("locking %s: %w", f.Name(), err)
	}
	return f, true, nil
}

// SweepRealNodes cleans up what real nodes of earlier test runs left on this
// machine: nodes whose owner died without stopping them (a test binary
// killed by a timeout or by hand). For each, it kills the processes that
// belong to it (shims serving its containerd socket, anything whose
// command line names its directory, every process in its cgroups),
// unmounts everything under its directory, removes its cgroups and pod
// logs, and removes the directory. Nodes whose owner lives are not
// touched, nor is anything without the harness's owner lock. logf reports
// each node swept. StartRealNode calls it before it starts a node.
func SweepRealNodes(logf func(format string, args ...any)) error {
	return sweepRealNodes(nodeBaseDir(), logf)
}

func sweepRealNodes(base string, logf func(format string, args ...any)) error {
	var errs []error
	// Directories that died while being created hold nothing but the lock.
	staging, _ := filepath.Glob(filepath.Join(base, "."+nodeNamePrefix+"*"+stagingSuffix))
	for _, dir := range staging {
		if lock, ok, err := tryLockNode(dir); err == nil && ok {
			_ = os.RemoveAll(dir)
			_ = lock.Close()
		}
	}
	dirs, err := filepath.Glob(filepath.Join(base, nodeNamePrefix+"*"))
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		if st, err := os.Lstat(dir); err != nil || !st.IsDir() {
			continue
		}
		lock, ok, err := tryLockNode(dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue // not a node of this harness
		case err != nil:
			errs = append(errs, err)
			continue
		case !ok:
			continue // its owner lives
		}
		left, err := sweepNode(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweeping the leftover real node %s: %w", dir, err))
		}
		if logf != nil {
			logf("Swept a real node a dead test run left: %s (cgroup root %s): %s", dir, nodeCgroupRoot(dir), left)
		}
		_ = lock.Close()
	}
	return errors.Join(errs...)
}

// sweepNode removes everything of the dead node in dir and says what it
// found. The directory is removed only once nothing is mounted under it,
// so a removal can never reach into a mounted filesystem.
func sweepNode(dir string) (string, error) {
	socket := filepath.Join(dir, "containerd.sock")
	cgroupRoot := nodeCgroupRoot(dir)
	var errs []error
	killed, err := killNodeProcesses(dir, socket, cgroupRoot)
	if err != nil {
		errs = append(errs, err)
	}
	mounts, _ := mountPointsUnder(dir)
	if err := unmountUnder(dir); err != nil {
		errs = append(errs, err)
	}
	cgroups := len(cgroupTree(cgroupRoot))
	if err := removeCgroupTree(cgroupRoot); err != nil {
		errs = append(errs, err)
	}
	removePodLogs(podUIDsIn(dir))
	summary := fmt.Sprintf("%d processes killed, %d mounts, %d cgroups", killed, len(mounts), cgroups)
	if left, _ := mountPointsUnder(dir); len(left) > 0 {
		errs = append(errs, fmt.Errorf("not removing %s: still mounted under it: %v", dir, left))
		return summary, errors.Join(errs...)
	}
	if len(errs) > 0 {
		// Keep the directory (and its lock file): the next sweep tries again.
		return summary, errors.Join(errs...)
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", dir, err))
	}
	return summary, errors.Join(errs...)
}

// nodeProcesses are the processes of the node: those whose command line
// names its directory or its containerd socket (kubelet, containerd, the
// runc shims, whose -address is the socket), and every process in a cgroup
// under its cgroup root (the pods').
func nodeProcesses(dir, socket, cgroupRoot string) []int {
	// Only ever a node's own names: an empty or other path would match
	// every process of the machine.
	if !ownNodeNames(dir, cgroupRoot) {
		return nil
	}
	self := os.Getpid()
	seen := map[int]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		for _, a := range strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00") {
			if a == socket || a == dir || strings.Contains(a, dir+"/") {
				seen[pid] = true
				break
			}
		}
	}
	for _, cg := range cgroupTree(cgroupRoot) {
		b, err := os.ReadFile(filepath.Join(cg, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid != self && pid > 1 {
				seen[pid] = true
			}
		}
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	sort.Ints(out)
	return out
}

// ownNodeNames reports whether dir and cgroupRoot are a real node's names:
// an absolute directory named waterline-node-<suffix> and the cgroup root
// of the same name.
func ownNodeNames(dir, cgroupRoot string) bool {
	base := filepath.Base(dir)
	return filepath.IsAbs(dir) && strings.HasPrefix(base, nodeNamePrefix) && len(base) > len(nodeNamePrefix) &&
		cgroupRoot == "/"+base
}

// killNodeProcesses SIGKILLs the node's processes until none is left
// (a shell in a pod may fork between two rounds) and returns how many it
// killed.
func killNodeProcesses(dir, socket, cgroupRoot string) (int, error) {
	killed := map[int]bool{}
	for range 100 {
		pids := nodeProcesses(dir, socket, cgroupRoot)
		// A node is a few dozen processes: hundreds would be a bug in the
		// matching, not a node to kill.
		if len(pids) > 150 {
			return len(killed), fmt.Errorf("refusing to kill %d processes as the node's in %s: that is most of the machine", len(pids), dir)
		}
		live := 0
		for _, pid := range pids {
			if isZombie(pid) {
				continue
			}
			live++
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				killed[pid] = true
			}
		}
		if live == 0 {
			return len(killed), nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return len(killed), fmt.Errorf("processes of the node in %s survive SIGKILL: %v", dir, nodeProcesses(dir, socket, cgroupRoot))
}

// isZombie reports whether pid has exited and waits for its parent to
// reap it (or is gone already).
func isZombie(pid int) bool {
	state, _, ok := procStat(pid)
	return !ok || state == 'Z' || state == 'X'
}

// ProcessRunning reports whether pid exists and has not exited (a zombie
// waiting for its parent has).
func ProcessRunning(pid int) bool { return !isZombie(pid) }

// ChildProcesses lists the running children of parent whose command name
// is one of names.
func ChildProcesses(parent int, names ...string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, ok := procStat(pid); !ok || ppid != parent {
			continue
		}
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if slices.Contains(names, strings.TrimSpace(string(comm))) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procStat reads pid's state and parent from /proc/<pid>/stat.
func procStat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], ppid, true
}

// cgroupTree lists the directories of cgroup cg and everything under it in
// every hierarchy, deepest first.
func cgroupTree(cg string) []string {
	if !strings.HasPrefix(cg, "/"+nodeNamePrefix) {
		return nil // never a hierarchy's root, nor another tool's cgroup
	}
	var dirs []string
	for _, root := range cgroupDirs(cg) {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	sort.SliceStable(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	return dirs
}

// podUIDsIn are the UIDs of the pods kubelet kept state for under the node
// directory dir (kubelet/pods/<uid>).
func podUIDsIn(dir string) []string {
	entries, _ := os.ReadDir(filepath.Join(dir, "kubelet", "pods"))
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// unmountUnder unmounts every mount point at or under dir, deepest first,
// until /proc/self/mountinfo lists none. Each is unmounted normally and,
// only when it is busy, detached (MNT_DETACH); a path may have several
// mounts stacked on it (kubelet binds its root directory onto itself and
// makes it shared), so rounds repeat until nothing is left.
func unmountUnder(dir string) error {
	dir = filepath.Clean(dir)
	var errs []error
	for range 10 {
		mounts, err := mountPointsUnder(dir)
		if err != nil {
			return err
		}
		if len(mounts) == 0 {
			return nil
		}
		errs = errs[:0]
		for _, m := range mounts {
			err := syscall.Unmount(m, 0)
			if errors.Is(err, syscall.EBUSY) {
				err = syscall.Unmount(m, syscall.MNT_DETACH)
			}
			if err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
			}
		}
	}
	if mounts, _ := mountPointsUnder(dir); len(mounts) > 0 {
		errs = append(errs, fmt.Errorf("still mounted under %s after 10 rounds: %v", dir, mounts))
	}
	return errors.Join(errs...)
}

// mountPointsUnder lists the mount points at or under dir in this mount
// namespace, deepest first (a path stacked twice is listed twice).
func mountPointsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 5 {
			continue
		}
		mp := unescapeMount(fs[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return strings.Count(out[i], "/") > strings.Count(out[j], "/") })
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeCgroupTree removes cgroup cg and everything under it in every
// hierarchy, children first, retrying while killed processes leave.
func removeCgroupTree(cg string) error {
	var errs []error
	for _, d := range cgroupTree(cg) {
		var err error
		for range 100 {
			if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			procs, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			errs = append(errs, fmt.Errorf("removing cgroup %s (processes: %q): %w", d, strings.TrimSpace(string(procs)), err))
		}
	}
	return errors.Join(errs...)
}
