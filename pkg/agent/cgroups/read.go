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

package cgroups

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"syscall"
)

// ParseError says a cgroup file did not hold what its format promises:
// empty, cut short while kubelet or the kernel was writing it, or missing
// the key asked for. The caller skips the value this cycle.
type ParseError struct {
	Path   string
	Reason string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("parsing %s: %s", e.Path, e.Reason)
}

// IsGone reports whether err means the cgroup (or a file in it) no longer
// exists: the pod or container was removed, or not created yet. ENODEV is
// what reading a file of a cgroup removed under us returns.
func IsGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENODEV)
}

// IsMalformed reports whether err is a ParseError.
func IsMalformed(err error) bool {
	var pe *ParseError
	return errors.As(err, &pe)
}

// UsageFiles are the files that hold one cgroup's cumulative CPU time and
// memory working set, kept open between cycles (see File). Build them once
// per cgroup with Layout.UsageFiles, read them every cycle with a Reader,
// and Close them when the cgroup is gone or no longer read.
type UsageFiles struct {
	// cpu holds cumulative CPU time: cpuacct.usage (ns, v1) or cpu.stat
	// (usage_usec, v2).
	cpu *File
	// memUsage holds the charged memory: memory.usage_in_bytes (v1) or
	// memory.current (v2).
	memUsage *File
	// memStat holds the inactive file pages to subtract: memory.stat,
	// key total_inactive_file (v1, hierarchical) or inactive_file (v2).
	memStat *File
	v2      bool
}

// UsageFiles returns the usage files of a cgroup (relative to the
// hierarchy root, as returned by PodCgroup). Nothing is opened yet.
func (l *Layout) UsageFiles(cgroup string) *UsageFiles {
	if l.version == V2 {
		dir := l.Path("", cgroup)
		return &UsageFiles{cpu: NewFile(dir + "/cpu.stat"), memUsage: NewFile(dir + "/memory.current"), memStat: NewFile(dir + "/memory.stat"), v2: true}
	}
	mem := l.Path(ControllerMemory, cgroup)
	return &UsageFiles{
		cpu:      NewFile(l.Path(ControllerCPUAcct, cgroup) + "/cpuacct.usage"),
		memUsage: NewFile(mem + "/memory.usage_in_bytes"),
		memStat:  NewFile(mem + "/memory.stat"),
	}
}

// Close closes the files.
func (f *UsageFiles) Close() error {
	return errors.Join(f.cpu.Close(), f.memUsage.Close(), f.memStat.Close())
}

// Reader reads cgroup and proc files into one reused buffer, without
// os.File (whose poller registration costs a syscall per open on regular
// files). A Reader is not safe for concurrent use; each goroutine owns one.
type Reader struct {
	buf []byte
}

// NewReader returns a Reader.
func NewReader() *Reader {
	return &Reader{buf: make([]byte, 16<<10)}
}

// ReadFile returns the contents of a file, valid until the next call. Files
// larger than the buffer grow it.
func (r *Reader) ReadFile(path string) ([]byte, error) {
	fd, err := openRetry(path, syscall.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer syscall.Close(fd)
	n := 0
	for {
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		m, err := syscall.Read(fd, r.buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if m == 0 {
			return r.buf[:n], nil
		}
		n += m
	}
}

func openRetry(path string, flags int) (int, error) {
	for {
		fd, err := syscall.Open(path, flags|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// ReadUint reads a file holding one unsigned decimal number and its
// newline. The kernel always ends such files with a newline, so a file
// without one was cut short and is a ParseError, not a smaller number.
func (r *Reader) ReadUint(path string) (uint64, error) {
	b, err := r.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parseUintLine(path, b)
}

// FileUint is ReadUint for a kept-open File.
func (r *Reader) FileUint(f *File) (uint64, error) {
	b, err := r.Read(f)
	if err != nil {
		return 0, err
	}
	return parseUintLine(f.path, b)
}

func parseUintLine(path string, b []byte) (uint64, error) {
	if len(b) == 0 {
		return 0, &ParseError{Path: path, Reason: "empty"}
	}
	line, ok := bytes.CutSuffix(b, []byte{'\n'})
	if !ok {
		return 0, &ParseError{Path: path, Reason: fmt.Sprintf("no trailing newline in %q", truncate(b))}
	}
	return ParseUint(path, line)
}

// ReadKey reads the value of key in a flat-keyed file ("key value" per
// line, as memory.stat and cpu.stat).
func (r *Reader) ReadKey(path, key string) (uint64, error) {
	b, err := r.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parseKey(path, b, key)
}

// FileKey is ReadKey for a kept-open File.
func (r *Reader) FileKey(f *File, key string) (uint64, error) {
	b, err := r.Read(f)
	if err != nil {
		return 0, err
	}
	return parseKey(f.path, b, key)
}

func parseKey(path string, b []byte, key string) (uint64, error) {
	v, ok := lookupKey(b, key)
	if !ok {
		return 0, &ParseError{Path: path, Reason: fmt.Sprintf("no complete %q line", key)}
	}
	return ParseUint(path, v)
}

// CPUUsage returns the cumulative CPU time the cgroup used, in nanoseconds.
func (r *Reader) CPUUsage(f *UsageFiles) (uint64, error) {
	if f.v2 {
		us, err := r.FileKey(f.cpu, "usage_usec")
		return us * 1000, err
	}
	return r.FileUint(f.cpu)
}

// MemoryWorkingSet returns the cgroup's working set in bytes: charged
// memory minus inactive file pages (what kubelet evicts on and what the
// OOM killer cannot simply drop), floored at zero as kubelet does.
func (r *Reader) MemoryWorkingSet(f *UsageFiles) (uint64, error) {
	usage, err := r.MemoryCharge(f)
	if err != nil {
		return 0, err
	}
	inactive, err := r.InactiveFile(f)
	if err != nil {
		return 0, err
	}
	return WorkingSet(usage, inactive), nil
}

// MemoryCharge returns the memory charged to the cgroup in bytes
// (memory.usage_in_bytes, v1; memory.current, v2). The kernel reads it
// from a page counter: about a microsecond, an eighth of a memory.stat.
func (r *Reader) MemoryCharge(f *UsageFiles) (uint64, error) {
	return r.FileUint(f.memUsage)
}

// InactiveFile returns the cgroup's inactive file pages in bytes, from
// memory.stat (total_inactive_file, v1, which counts the whole subtree;
// inactive_file, v2, hierarchical too). memory.stat is the dearest file the
// collector reads: the kernel formats some forty counters on every read.
func (r *Reader) InactiveFile(f *UsageFiles) (uint64, error) {
	key := "total_inactive_file"
	if f.v2 {
		key = "inactive_file"
	}
	return r.FileKey(f.memStat, key)
}

// WorkingSet is charge minus inactive file pages, floored at zero.
func WorkingSet(charge, inactive uint64) uint64 {
	if inactive > charge {
		return 0
	}
	return charge - inactive
}

// lookupKey finds "key value\n" in b. A last line without its newline is
// treated as cut short: a half-written file must not yield a truncated
// number.
func lookupKey(b []byte, key string) ([]byte, bool) {
	for len(b) > 0 {
		line, rest, complete := bytes.Cut(b, []byte{'\n'})
		if !complete {
			return nil, false
		}
		b = rest
		if len(line) > len(key) && line[len(key)] == ' ' && string(line[:len(key)]) == key {
			return line[len(key)+1:], true
		}
	}
	return nil, false
}

// ParseUint parses an unsigned decimal number (no sign, no spaces) read
// from path, returning a ParseError naming path when it is not one.
func ParseUint(path string, b []byte) (uint64, error) {
	if len(b) == 0 {
		return 0, &ParseError{Path: path, Reason: "empty"}
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, &ParseError{Path: path, Reason: fmt.Sprintf("not an unsigned number: %q", truncate(b))}
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, &ParseError{Path: path, Reason: "number overflows uint64"}
		}
		v = v*10 + d
	}
	return v, nil
}

func parseInt(path string, b []byte) (int64, error) {
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, &ParseError{Path: path, Reason: fmt.Sprintf("not an integer: %q", truncate(b))}
	}
	return v, nil
}

func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// linux_dirent64: d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name.
const (
	direntReclenOff = 16
	direntTypeOff   = 18
	direntNameOff   = 19
)

func eachDirent(dir string, b []byte, fn func(name []byte)) error {
	for len(b) >= direntNameOff {
		reclen := int(binary.NativeEndian.Uint16(b[direntReclenOff:]))
		if reclen < direntNameOff || reclen > len(b) {
			return &ParseError{Path: dir, Reason: "corrupt directory entry"}
		}
		rec := b[:reclen]
		b = b[reclen:]
		name := rec[direntNameOff:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if len(name) == 0 || (name[0] == '.' && (len(name) == 1 || (len(name) == 2 && name[1] == '.'))) {
			continue
		}
		switch rec[direntTypeOff] {
		case syscall.DT_DIR:
			fn(name)
		case syscall.DT_UNKNOWN:
			// Some filesystems leave the type out; ask.
			var st syscall.Stat_t
			if err := syscall.Lstat(dir+"/"+string(name), &st); err == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
				fn(name)
			}
		}
	}
	return nil
}
