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
	"fmt"
	"io/fs"
	"syscall"
)

// Filesystem magic numbers (statfs f_type) of the kernel filesystems whose
// files are generated on every read and whose removal makes an open file
// return ENODEV.
const (
	cgroupSuperMagic  = 0x27e0eb
	cgroup2SuperMagic = 0x63677270
	procSuperMagic    = 0x9fa0
	sysfsMagic        = 0x62656572
)

// File is a cgroup or proc file read again every cycle. It stays open
// between reads: reading an open file from offset 0 makes the kernel
// generate it afresh, and skips the path walk of open(2), which costs
// several times the read itself (see the collector's README for numbers).
//
// When the cgroup is removed, kernel files return ENODEV, an IsGone error.
// On other filesystems (fixture trees in tests) a removed file stays
// readable through an open descriptor, so there a read first checks that
// the file still has a link and reports a gone error when not, giving
// fixtures the kernel's semantics.
//
// Each open File holds a descriptor (and, on kernel filesystems, about a
// page of kernel buffer). A File is used by one goroutine at a time. Close
// releases the descriptor.
type File struct {
	path string
	fd   int
	// checkLinks is set when the file is not on a kernel filesystem.
	checkLinks bool
}

// NewFile returns a File for path; it is opened on first read.
func NewFile(path string) *File { return &File{path: path, fd: -1} }

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Close closes the descriptor, if open. The File may be read again later,
// which reopens it.
func (f *File) Close() error {
	if f == nil || f.fd < 0 {
		return nil
	}
	err := syscall.Close(f.fd)
	f.fd = -1
	if err != nil {
		return fmt.Errorf("closing %s: %w", f.path, err)
	}
	return nil
}

// open opens the file if it is not open.
func (f *File) open(flags int) error {
	if f.fd >= 0 {
		return nil
	}
	fd, err := openRetry(f.path, flags)
	if err != nil {
		return fmt.Errorf("opening %s: %w", f.path, err)
	}
	var st syscall.Statfs_t
	if err := syscall.Fstatfs(fd, &st); err != nil {
		syscall.Close(fd)
		return fmt.Errorf("statfs %s: %w", f.path, err)
	}
	switch st.Type {
	case cgroupSuperMagic, cgroup2SuperMagic, procSuperMagic, sysfsMagic:
		f.checkLinks = false
	default:
		f.checkLinks = true
	}
	f.fd = fd
	return nil
}

// unlinked reports, for files outside kernel filesystems, whether the open
// file was removed.
func (f *File) unlinked() (bool, error) {
	if !f.checkLinks {
		return false, nil
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		return false, fmt.Errorf("stat %s: %w", f.path, err)
	}
	return st.Nlink == 0, nil
}

func (f *File) goneError() error {
	return fmt.Errorf("reading %s: %w", f.path, fs.ErrNotExist)
}

// Read returns the file's current contents, valid until the Reader's next
// call. A read error closes the file, so a cgroup recreated at the same
// path is opened afresh.
func (r *Reader) Read(f *File) ([]byte, error) {
	if err := f.open(syscall.O_RDONLY); err != nil {
		return nil, err
	}
	if gone, err := f.unlinked(); err != nil || gone {
		f.Close()
		if err == nil {
			err = f.goneError()
		}
		return nil, err
	}
	for {
		n, err := syscall.Pread(f.fd, r.buf, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("reading %s: %w", f.path, err)
		}
		if n < len(r.buf) {
			return r.buf[:n], nil
		}
		// Filled the buffer: the file may be longer. Grow and read again
		// from the start, so the content is one consistent generation.
		r.buf = append(r.buf, make([]byte, len(r.buf))...)
	}
}

// ReadHeadOf returns at most a buffer's worth (16 KiB or more) of a kept-open
// file, for files such as /proc/stat whose first line is all that is needed
// (the rest grows with the number of CPUs and interrupts).
func (r *Reader) ReadHeadOf(f *File) ([]byte, error) {
	if err := f.open(syscall.O_RDONLY); err != nil {
		return nil, err
	}
	for {
		n, err := syscall.Pread(f.fd, r.buf, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("reading %s: %w", f.path, err)
		}
		return r.buf[:n], nil
	}
}

// Dir is a directory listed again every cycle, kept open like File.
type Dir struct {
	File
}

// NewDir returns a Dir for path; it is opened on first listing.
func NewDir(path string) *Dir { return &Dir{File{path: path, fd: -1}} }

// Subdirs calls fn with the name of every subdirectory of d (not . and
// ..). name is valid only during the call, and fn must not use the Reader
// (name points into its buffer). A removed directory lists as an IsGone
// error on every filesystem.
func (r *Reader) Subdirs(d *Dir, fn func(name []byte)) error {
	if err := d.open(syscall.O_RDONLY | syscall.O_DIRECTORY); err != nil {
		return err
	}
	if _, err := syscall.Seek(d.fd, 0, 0); err != nil {
		d.Close()
		return fmt.Errorf("rewinding %s: %w", d.path, err)
	}
	if err := r.listFD(d.fd, d.path, fn); err != nil {
		d.Close()
		return err
	}
	return nil
}

// SubdirsOf is Subdirs for a directory not kept open.
func (r *Reader) SubdirsOf(dir string, fn func(name []byte)) error {
	fd, err := openRetry(dir, syscall.O_RDONLY|syscall.O_DIRECTORY)
	if err != nil {
		return fmt.Errorf("opening %s: %w", dir, err)
	}
	defer syscall.Close(fd)
	return r.listFD(fd, dir, fn)
}

func (r *Reader) listFD(fd int, dir string, fn func(name []byte)) error {
	for {
		n, err := syscall.ReadDirent(fd, r.buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", dir, err)
		}
		if n <= 0 {
			return nil
		}
		if err := eachDirent(dir, r.buf[:n], fn); err != nil {
			return err
		}
	}
}
