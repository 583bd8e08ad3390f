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

// Command image builds Waterline's images without docker or a registry:
// each binary, static, alone in an image as the Dockerfile builds it, plus
// the busybox and pause images the real test node runs. Each image is a
// docker-archive tarball that `ctr -n k8s.io images import` loads.
//
//	go run ./hack/image --out _output/images [--import /path/containerd.sock]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/waterline-dev/waterline/hack/image/imagetar"
)

func main() {
	out := flag.String("out", "_output/images", "Directory for the image tarballs.")
	ldflags := flag.String("ldflags", "", "Go linker flags for Waterline's binaries (version stamps).")
	binaries := flag.String("binaries", strings.Join(imagetar.WaterlineBinaries, ","), "Comma-separated Waterline binaries to pack.")
	busybox := flag.String("busybox", "/bin/busybox", "Static busybox for the test image.")
	noTest := flag.Bool("no-test-images", false, "Skip the busybox and pause images.")
	importTo := flag.String("import", "", "containerd socket to import the images into (namespace k8s.io); empty only writes tarballs.")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := os.Getwd()
	if err != nil {
		fail(err)
	}
	var bins []string
	for _, b := range strings.Split(*binaries, ",") {
		if b = strings.TrimSpace(b); b != "" {
			bins = append(bins, b)
		}
	}
	absOut, err := filepath.Abs(*out)
	if err != nil {
		fail(err)
	}
	built, err := imagetar.BuildSet(ctx, imagetar.SetOptions{
		RepoRoot: root, OutDir: absOut, LDFlags: *ldflags, Binaries: bins, Busybox: *busybox, NoTestImages: *noTest,
	})
	if err != nil {
		fail(err)
	}
	for _, b := range built {
		fmt.Printf("%s\t%s\n", b.Name, b.Tarball)
		if *importTo != "" {
			if err := imagetar.Import(ctx, *importTo, "k8s.io", b.Tarball); err != nil {
				fail(err)
			}
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "image:", err)
	os.Exit(1)
}
