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

package imagetar

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// readTar returns the regular files of a tarball by name.
func readTar(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[h.Name] = b
		} else {
			out[h.Name] = nil
		}
	}
}

// TestWriteIsADockerArchive checks what `ctr images import` relies on:
// manifest.json names the config and the layer, the config's diff_ids is
// the layer's sha256, and the layer holds the files with parents.
func TestWriteIsADockerArchive(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "prog")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "img.tar")
	err := Write(Image{
		Name:       "waterline-agent:latest",
		Files:      []File{{Path: "/usr/local/bin/waterline", Source: bin}, {Path: "/bin/sh", Link: "busybox"}, {Path: "/tmp", Mode: 0o777}},
		Entrypoint: []string{"/usr/local/bin/waterline"},
		User:       "65532:65532",
	}, out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := readTar(t, f)
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(manifest) != 1 || len(manifest[0].Layers) != 1 {
		t.Fatalf("manifest %+v, want one image with one layer", manifest)
	}
	if diff := cmp.Diff([]string{"waterline-agent:latest"}, manifest[0].RepoTags); diff != "" {
		t.Errorf("RepoTags (-want +got):\n%s", diff)
	}
	var config struct {
		OS     string `json:"os"`
		Config struct {
			Entrypoint []string
			User       string
		} `json:"config"`
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(files[manifest[0].Config], &config); err != nil {
		t.Fatalf("config %s: %v", manifest[0].Config, err)
	}
	layer := files[manifest[0].Layers[0]]
	sum := sha256.Sum256(layer)
	if diff := cmp.Diff([]string{"sha256:" + hex.EncodeToString(sum[:])}, config.RootFS.DiffIDs); diff != "" {
		t.Errorf("diff_ids (-want +got):\n%s", diff)
	}
	if config.OS != "linux" || config.Config.User != "65532:65532" || !cmp.Equal(config.Config.Entrypoint, []string{"/usr/local/bin/waterline"}) {
		t.Errorf("config %+v", config)
	}
	got := readTar(t, bytes.NewReader(layer))
	var names []string
	for n := range got {
		names = append(names, n)
	}
	for _, want := range []string{"usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/waterline", "bin/", "bin/sh", "tmp/"} {
		if _, ok := got[want]; !ok {
			t.Errorf("layer lacks %s (has %v)", want, names)
		}
	}
	if string(got["usr/local/bin/waterline"]) != "#!/bin/true\n" {
		t.Errorf("the binary's content changed in the layer")
	}
}

func TestWriteRejectsRelativePath(t *testing.T) {
	err := Write(Image{Name: "x:y", Files: []File{{Path: "bin/sh", Link: "busybox"}}}, filepath.Join(t.TempDir(), "x.tar"))
	if err == nil || !strings.Contains(err.Error(), `"bin/sh"`) {
		t.Errorf("error %v, want one naming the relative path", err)
	}
}
