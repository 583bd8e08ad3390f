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
