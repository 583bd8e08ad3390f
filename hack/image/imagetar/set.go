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
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// The images of a Waterline test node and local cluster.
const (
	// BusyboxImage runs shell burners and probes (imagePullPolicy: Never).
	BusyboxImage = "local/busybox:test"
	// PauseImage is the pod sandbox image containerd is configured with.
	PauseImage = "local/pause:test"
	// WaterlineTag is the tag of Waterline's own images; the e2e and
	// local-up install charts/waterline with image.tag set to it.
	WaterlineTag = "latest"
)

// WaterlineBinaries are the binaries that get an image each, named after
// them (waterline-agent:latest, ...).
var WaterlineBinaries = []string{"waterline", "waterline-agent", "waterline-manager", "waterline-scheduler"}

// SetOptions says what BuildSet builds.
type SetOptions struct {
	// RepoRoot is the module root of the Waterline checkout.
	RepoRoot string
	// OutDir gets one <name>.tar per image and the static binaries.
	OutDir string
	// LDFlags stamp versions into Waterline's binaries.
	LDFlags string
	// Binaries are the Waterline binaries to pack (default all).
	Binaries []string
	// Busybox is a static busybox binary (default /bin/busybox).
	Busybox string
	// NoTestImages skips the busybox and pause images.
	NoTestImages bool
}

// Built is one image tarball BuildSet wrote.
type Built struct {
	Name, Tarball string
}

// BuildSet builds each Waterline binary statically and packs it as the
// Dockerfile does (the binary alone at /usr/local/bin/waterline, user
// 65532:65532, that path as entrypoint), then the busybox test image and
// the pause image.
func BuildSet(ctx context.Context, o SetOptions) ([]Built, error) {
	if o.Busybox == "" {
		o.Busybox = "/bin/busybox"
	}
	binaries := o.Binaries
	if len(binaries) == 0 {
		binaries = WaterlineBinaries
	}
	binDir := filepath.Join(o.OutDir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return nil, err
	}
	var out []Built
	for _, b := range binaries {
		bin := filepath.Join(binDir, b)
		if err := BuildStatic(ctx, o.RepoRoot, "./cmd/"+b, bin, o.LDFlags); err != nil {
			return nil, err
		}
		img := Image{
			Name:       b + ":" + WaterlineTag,
			Files:      []File{{Path: "/usr/local/bin/waterline", Source: bin, Mode: 0o755}},
			Entrypoint: []string{"/usr/local/bin/waterline"},
			User:       "65532:65532",
		}
		tarball := filepath.Join(o.OutDir, b+".tar")
		if err := Write(img, tarball); err != nil {
			return nil, err
		}
		out = append(out, Built{Name: img.Name, Tarball: tarball})
	}
	if o.NoTestImages {
		return out, nil
	}
	if _, err := os.Stat(o.Busybox); err != nil {
		return nil, fmt.Errorf("the busybox test image needs a static busybox at %s (Debian: apt-get install busybox-static): %w", o.Busybox, err)
	}
	bb, err := BusyboxFiles(o.Busybox)
	if err != nil {
		return nil, err
	}
	pause := filepath.Join(binDir, "pause")
	if err := BuildStatic(ctx, o.RepoRoot, "./hack/image/pause", pause, "-s -w"); err != nil {
		return nil, err
	}
	for _, img := range []Image{
		// As the public busybox image: no entrypoint and `sh` as the
		// command, so `kubectl run --image=local/busybox:test -- sh -c …`
		// (the README's walkthrough) runs what it says.
		{Name: BusyboxImage, Files: bb, Cmd: []string{"sh"}},
		{Name: PauseImage, Files: []File{{Path: "/pause", Source: pause, Mode: 0o755}}, Entrypoint: []string{"/pause"}, User: "65535:65535"},
	} {
		tarball := filepath.Join(o.OutDir, imageFile(img.Name))
		if err := Write(img, tarball); err != nil {
			return nil, err
		}
		out = append(out, Built{Name: img.Name, Tarball: tarball})
	}
	return out, nil
}

// imageFile is the tarball name of a test image: local/busybox:test →
// busybox.tar.
func imageFile(name string) string {
	base := filepath.Base(name)
	for i := range base {
		if base[i] == ':' {
			return base[:i] + ".tar"
		}
	}
	return base + ".tar"
}
