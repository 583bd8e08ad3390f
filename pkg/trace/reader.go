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

// Package trace reads the public cluster traces Waterline is tested on --
// Alibaba cluster-trace-v2018 machine usage, Bitbrains GWA-T-12 per-VM
// usage, Alibaba cluster-trace-gpu-v2023 "openb" node and pod lists -- into
// typed rows, and shapes rows into time series.
//
// Readers stream: they hold one line at a time, so a multi-gigabyte trace
// costs no more memory than the sample. Every bad row is an error that
// names the file, the line and the column (*ParseError), never a silent
// skip; a missing optional value becomes NaN and is documented as such.
//
// The package decides nothing about scheduling or prediction, and must
// never write files or reach the network.
package trace

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// ParseError is a bad row of a trace file. Callers can tell a bad trace
// (ParseError) from a missing one (an *os.PathError) with errors.As.
type ParseError struct {
	// File is the name the reader was given, usually the path.
	File string
	// Line is the 1-based line number.
	Line int
	// Column names the column, empty when the whole row is bad.
	Column string
	// Err says what is wrong.
	Err error
}

func (e *ParseError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("%s:%d: column %s: %v", e.File, e.Line, e.Column, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// maxLine bounds one line of a trace; longer lines are an error rather
// than an unbounded allocation.
const maxLine = 1 << 20

// lineReader yields the fields of each non-empty line, counting lines.
type lineReader struct {
	sc     *bufio.Scanner
	file   string
	line   int
	fields []string
}

func newLineReader(r io.Reader, file string) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	return &lineReader{sc: sc, file: file}
}

// next returns the fields of the next non-blank line split at sep, each
// trimmed of spaces and tabs, or io.EOF. The slice is reused by the next
// call.
func (r *lineReader) next(sep byte) ([]string, error) {
	for r.sc.Scan() {
		r.line++
		text := strings.TrimRight(r.sc.Text(), "\r")
		if r.line == 1 {
			// A UTF-8 byte order mark, as spreadsheet tools write, is
			// no part of the first field (a machine ID, a column name).
			text = strings.TrimPrefix(text, "\ufeff")
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		r.fields = r.fields[:0]
		for {
			i := strings.IndexByte(text, sep)
			if i < 0 {
				r.fields = append(r.fields, strings.TrimSpace(text))
				break
			}
			r.fields = append(r.fields, strings.TrimSpace(text[:i]))
			text = text[i+1:]
		}
		return r.fields, nil
	}
	if err := r.sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s after line %d: %w", r.file, r.line, err)
	}
	return nil, io.EOF
}

func (r *lineReader) errorf(column, format string, args ...any) error {
	return &ParseError{File: r.file, Line: r.line, Column: column, Err: fmt.Errorf(format, args...)}
}

// wantFields checks the number of fields of the current row.
func (r *lineReader) wantFields(fields []string, n int) error {
	if len(fields) != n {
		return r.errorf("", "got %d fields, want %d", len(fields), n)
	}
	return nil
}

func (r *lineReader) float(column, s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, r.errorf(column, "%q is not a finite number", s)
	}
	return v, nil
}

// optFloat is float, with "" meaning missing (NaN).
func (r *lineReader) optFloat(column, s string) (float64, error) {
	if s == "" {
		return math.NaN(), nil
	}
	return r.float(column, s)
}

func (r *lineReader) int(column, s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, r.errorf(column, "%q is not an integer", s)
	}
	return v, nil
}

func (r *lineReader) nonNegInt(column, s string) (int64, error) {
	v, err := r.int(column, s)
	if err == nil && v < 0 {
		return 0, r.errorf(column, "%d is negative", v)
	}
	return v, err
}

// header reads the first line and maps each wanted column to its index,
// erroring on a missing one.
func (r *lineReader) header(sep byte, want ...string) (map[string]int, error) {
	fields, err := r.next(sep)
	if errors.Is(err, io.EOF) {
		return nil, &ParseError{File: r.file, Line: r.line + 1, Err: errors.New("empty file: want a header")}
	}
	if err != nil {
		return nil, err
	}
	idx := make(map[string]int, len(fields))
	for i, f := range fields {
		idx[f] = i
	}
	var missing []string
	for _, w := range want {
		if _, ok := idx[w]; !ok {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		return nil, r.errorf("", "header %q lacks columns %s", strings.Join(fields, string(sep)), strings.Join(missing, ", "))
	}
	return idx, nil
}

// Open opens a trace file for reading, decompressing it when it is gzip
// (by content, not by name). Close the returned ReadCloser.
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(f)
	magic, err := br.Peek(2)
	if err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("opening %s as gzip: %w", path, err)
		}
		return &gzipFile{Reader: zr, f: f}, nil
	}
	return &plainFile{Reader: br, f: f}, nil
}

type gzipFile struct {
	*gzip.Reader
	f *os.File
}

func (g *gzipFile) Close() error {
	return errors.Join(g.Reader.Close(), g.f.Close())
}

type plainFile struct {
	*bufio.Reader
	f *os.File
}

func (p *plainFile) Close() error { return p.f.Close() }
