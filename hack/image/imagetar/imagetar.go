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

// Package imagetar writes container images as docker-archive tarballs
// (what `docker save` writes and `ctr images import` reads) without docker
// or a registry: one layer of files, a config with the entrypoint and the
// user, and a manifest naming the image.
package imagetar

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// File is one entry of an image's layer.
type File struct {
	// Path inside the image, absolute ("/usr/local/bin/waterline").
	Path string
	// Source is a file on this machine to copy; empty with Link for a
	// symbolic link, or empty with neither for a directory.
	Source string
	// Link is the target of a symbolic link.
	Link string
	// Mode of a regular file or directory; 0 keeps the source's.
	Mode os.FileMode
}

// Image is a one-layer image.
type Image struct {
	// Name is the reference it imports as, e.g. "waterline-agent:latest"
	// or "local/busybox:test" (containerd stores it with its default
	// registry added, and finds it by either form).
	Name string
	// Files make up the layer; parent directories are added.
	Files []File
	// Entrypoint and Cmd as in a Dockerfile's exec form.
	Entrypoint, Cmd []string
	// User is "uid:gid", empty for root.
	User string
	// Env is KEY=value pairs.
	Env []string
}

// created is the image creation time: fixed, so the same inputs give the
// same image ID.
var created = time.Unix(0, 0).UTC()

// Write writes img as a docker-archive tarball at out.
func Write(img Image, out string) error {
	layer, err := layerTar(img.Files)
	if err != nil {
		return fmt.Errorf("image %s: %w", img.Name, err)
	}
	layerSum := sha256.Sum256(layer)
	layerDigest := hex.EncodeToString(layerSum[:])
	env := img.Env
	if len(env) == 0 {
		env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	config := map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      created.Format(time.RFC3339),
		"config": map[string]any{
			"Entrypoint": img.Entrypoint,
			"Cmd":        img.Cmd,
			"User":       img.User,
			"Env":        env,
		},
		"rootfs": map[string]any{
			"type":     "layers",
			"diff_ids": []string{"sha256:" + layerDigest},
		},
		"history": []map[string]any{{"created": created.Format(time.RFC3339), "created_by": "waterline hack/image"}},
	}
	configJSON, err := json.Marshal(config)
	if err != nil {
		return fmt.Errorf("image %s: encoding config: %w", img.Name, err)
	}
	configSum := sha256.Sum256(configJSON)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	layerName := layerDigest + "/layer.tar"
	manifest, err := json.Marshal([]map[string]any{{
		"Config":   configName,
		"RepoTags": []string{img.Name},
		"Layers":   []string{layerName},
	}})
	if err != nil {
		return fmt.Errorf("image %s: encoding manifest: %w", img.Name, err)
	}

	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	tw := tar.NewWriter(f)
	for _, e := range []struct {
		name string
		data []byte
	}{{configName, configJSON}, {layerName, layer}, {"manifest.json", manifest}} {
		if dir := path.Dir(e.name); dir != "." {
			if err := tw.WriteHeader(&tar.Header{Name: dir + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: created}); err != nil {
				return err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(e.data)), ModTime: created}); err != nil {
			return err
		}
		if _, err := tw.Write(e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("image %s: writing %s: %w", img.Name, out, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("image %s: writing %s: %w", img.Name, out, err)
	}
	return os.Rename(tmp, out)
}

// layerTar returns the uncompressed layer holding files and their parent
// directories.
func layerTar(files []File) ([]byte, error) {
	dirs := map[string]bool{}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	addDirs := func(p string) error {
		var parents []string
		for d := path.Dir(p); d != "/" && d != "." && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
		}
		sort.Strings(parents)
		for _, d := range parents {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(d, "/") + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: created}); err != nil {
				return err
			}
		}
		return nil
	}
	for _, f := range files {
		if !path.IsAbs(f.Path) {
			return nil, fmt.Errorf("file path %q: want an absolute path", f.Path)
		}
		if err := addDirs(f.Path); err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(path.Clean(f.Path), "/")
		switch {
		case f.Link != "":
			if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: f.Link, Mode: 0o777, ModTime: created}); err != nil {
				return nil, err
			}
		case f.Source == "":
			mode := f.Mode
			if mode == 0 {
				mode = 0o755
			}
			dirs[path.Clean(f.Path)] = true
			perm := int64(mode.Perm())
			if mode&os.ModeSticky != 0 {
				perm |= 0o1000
			}
			if err := tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: perm, ModTime: created}); err != nil {
				return nil, err
			}
		default:
			data, err := os.ReadFile(f.Source)
			if err != nil {
				return nil, fmt.Errorf("file %s: %w", f.Path, err)
			}
			mode := f.Mode
			if mode == 0 {
				st, err := os.Stat(f.Source)
				if err != nil {
					return nil, err
				}
				mode = st.Mode()
			}
			if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: int64(mode.Perm()), Size: int64(len(data)), ModTime: created}); err != nil {
				return nil, err
			}
			if _, err := tw.Write(data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// BuildStatic builds Go package pkg (e.g. ./cmd/waterline-agent) of the
// module at dir into out as a static binary (CGO_ENABLED=0), as the
// Dockerfile does.
func BuildStatic(ctx context.Context, dir, pkg, out, ldflags string) error {
	args := []string{"build", "-o", out}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg, err, output)
	}
	return nil
}

// BusyboxFiles is a layer with a static busybox at /bin/busybox and a
// link to it for each applet it lists (sh, sleep, yes, ...), plus /tmp.
func BusyboxFiles(busybox string) ([]File, error) {
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("listing the applets of %s (is it busybox-static?): %w", busybox, err)
	}
	files := []File{{Path: "/bin/busybox", Source: busybox, Mode: 0o755}, {Path: "/tmp", Mode: 0o777 | os.ModeSticky}}
	for _, applet := range strings.Fields(string(out)) {
		if applet == "busybox" || strings.Contains(applet, "/") {
			continue
		}
		files = append(files, File{Path: "/bin/" + applet, Link: "busybox"})
	}
	return files, nil
}

// Import loads the image tarball into containerd's namespace ns (kubelet's
// is k8s.io) at the socket address, with ctr.
func Import(ctx context.Context, address, ns, tarball string) error {
	cmd := exec.CommandContext(ctx, "ctr", "--address", address, "-n", ns, "images", "import", tarball)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("importing %s into containerd at %s: %w\n%s", tarball, address, err, output)
	}
	return nil
}
