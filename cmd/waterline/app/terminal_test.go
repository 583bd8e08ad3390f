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
	"io"
	"os"
	"testing"
)

// TestIsTerminalNotDevNull: /dev/null is a character device but not a
// terminal; `waterline sim 2>/dev/null` must not draw a progress bar.
func TestIsTerminalNotDevNull(t *testing.T) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("opening %s: %v", os.DevNull, err)
	}
	defer devNull.Close()
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, w := range map[string]io.Writer{"/dev/null": devNull, "a regular file": f, "a buffer": &bytes.Buffer{}} {
		if isTerminal(w) {
			t.Errorf("isTerminal(%s) = true, want false", name)
		}
	}
}
