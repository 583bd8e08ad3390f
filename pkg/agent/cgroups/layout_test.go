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
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const uid = types.UID("9b4e7f10-2d3c-4e5f-8a9b-0c1d2e3f4a02")

func TestPodCgroup(t *testing.T) {
	tests := []struct {
		version Version
		driver  Driver
		root    string
		qos     corev1.PodQOSClass
		want    string // PodCgroup
		wantDir string // Path(cpuacct, PodCgroup)
	}{
		{V1, DriverCgroupfs, "/", corev1.PodQOSGuaranteed,
			"kubepods/pod" + string(uid),
			"/sys/fs/cgroup/cpuacct/kubepods/pod" + string(uid)},
		{V1, DriverCgroupfs, "/", corev1.PodQOSBurstable,
			"kubepods/burstable/pod" + string(uid),
			"/sys/fs/cgroup/cpuacct/kubepods/burstable/pod" + string(uid)},
		{V1, DriverCgroupfs, "/waterline-test-1", corev1.PodQOSBestEffort,
			"waterline-test-1/kubepods/besteffort/pod" + string(uid),
			"/sys/fs/cgroup/cpuacct/waterline-test-1/kubepods/besteffort/pod" + string(uid)},
		{V1, DriverSystemd, "/", corev1.PodQOSGuaranteed,
			"kubepods.slice/kubepods-pod9b4e7f10_2d3c_4e5f_8a9b_0c1d2e3f4a02.slice",
			"/sys/fs/cgroup/cpuacct/kubepods.slice/kubepods-pod9b4e7f10_2d3c_4e5f_8a9b_0c1d2e3f4a02.slice"},
		{V1, DriverSystemd, "/", corev1.PodQOSBurstable,
			"kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod9b4e7f10_2d3c_4e5f_8a9b_0c1d2e3f4a02.slice",
			"/sys/fs/cgroup/cpuacct/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod9b4e7f10_2d3c_4e5f_8a9b_0c1d2e3f4a02.slice"},
		{V2, DriverSystemd, "/", corev1.PodQOSBestEffort,
			"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9b4e7f10_2d3c_4e5f_8a9b_0c1d2e3f4a02.slice",
			"/sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod9b4e7f10_2d3c_4e5f_8a9b_0c1d2e3f4a02.slice"},
		// A systemd cgroup root slice prefixes every slice below it.
		{V2, DriverSystemd, "/wl.slice", corev1.PodQOSBurstable,
			"wl.slice/wl-kubepods.slice/wl-kubepods-burstable.slice/wl-kubepods-burstable-pod9b4e7f10_2d3c_4e5f_8a9b_0c1d2e3f4a02.slice",
			"/sys/fs/cgroup/wl.slice/wl-kubepods.slice/wl-kubepods-burstable.slice/wl-kubepods-burstable-pod9b4e7f10_2d3c_4e5f_8a9b_0c1d2e3f4a02.slice"},
		{V2, DriverCgroupfs, "/", corev1.PodQOSGuaranteed,
			"kubepods/pod" + string(uid),
			"/sys/fs/cgroup/kubepods/pod" + string(uid)},
	}
	for _, tc := range tests {
		t.Run(string(tc.version)+"/"+string(tc.driver)+tc.root+"/"+string(tc.qos), func(t *testing.T) {
			l, err := NewLayout("/sys/fs/cgroup", tc.version, tc.driver, tc.root)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{l.PodCgroup(uid, tc.qos), l.Path(ControllerCPUAcct, l.PodCgroup(uid, tc.qos))}
			if diff := cmp.Diff([]string{tc.want, tc.wantDir}, got); diff != "" {
				t.Errorf("PodCgroup, Path (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodCgroupCandidates(t *testing.T) {
	l, err := NewLayout("/r", V1, DriverCgroupfs, "/")
	if err != nil {
		t.Fatal(err)
	}
	p := "/pod" + string(uid)
	tests := []struct {
		qos  corev1.PodQOSClass
		want []string
	}{
		{corev1.PodQOSBestEffort, []string{"kubepods/besteffort" + p, "kubepods/burstable" + p, "kubepods" + p}},
		{corev1.PodQOSGuaranteed, []string{"kubepods" + p, "kubepods/burstable" + p, "kubepods/besteffort" + p}},
		{"", []string{"kubepods/burstable" + p, "kubepods/besteffort" + p, "kubepods" + p}},
	}
	for _, tc := range tests {
		t.Run(string(tc.qos), func(t *testing.T) {
			if diff := cmp.Diff(tc.want, l.PodCgroupCandidates(uid, tc.qos)); diff != "" {
				t.Errorf("PodCgroupCandidates (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContainerID(t *testing.T) {
	const id = "13ab6d4d692daadd8918b64b09ddc49746a11fcf7f90b47e9c56e71bdf91118c"
	tests := []struct {
		driver Driver
		dir    string
		want   string
		wantOK bool
	}{
		{DriverCgroupfs, id, id, true},
		{DriverCgroupfs, "crio-" + id, id, true},
		{DriverSystemd, "cri-containerd-" + id + ".scope", id, true},
		{DriverSystemd, "crio-" + id + ".scope", id, true},
		{DriverSystemd, "docker-" + id + ".scope", id, true},
		{DriverSystemd, "crio-conmon-" + id + ".scope", "", false},
		{DriverSystemd, id, "", false}, // not a scope
		{DriverSystemd, "cri-containerd-.scope", "", false},
	}
	for _, tc := range tests {
		t.Run(string(tc.driver)+"/"+tc.dir, func(t *testing.T) {
			l, err := NewLayout("/r", V2, tc.driver, "/")
			if err != nil {
				t.Fatal(err)
			}
			got, ok := l.ContainerID(tc.dir)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("ContainerID(%q) = %q, %v; want %q, %v", tc.dir, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name        string
		dirs        []string // created under the root
		files       []string
		opts        Options
		wantVersion Version
		wantDriver  Driver
		wantErr     error
	}{{
		name: "v1 cgroupfs", dirs: []string{"cpuacct/kubepods", "memory/kubepods"},
		wantVersion: V1, wantDriver: DriverCgroupfs,
	}, {
		name: "v1 systemd", dirs: []string{"cpuacct/kubepods.slice", "memory/kubepods.slice"},
		wantVersion: V1, wantDriver: DriverSystemd,
	}, {
		name: "v2 cgroupfs", dirs: []string{"kubepods"}, files: []string{"cgroup.controllers"},
		wantVersion: V2, wantDriver: DriverCgroupfs,
	}, {
		name: "v2 systemd", dirs: []string{"kubepods.slice"}, files: []string{"cgroup.controllers"},
		wantVersion: V2, wantDriver: DriverSystemd,
	}, {
		name: "custom kubelet cgroup root", dirs: []string{"memory/custom/kubepods", "cpuacct"},
		opts:        Options{KubeletCgroupRoot: "/custom"},
		wantVersion: V1, wantDriver: DriverCgroupfs,
	}, {
		name: "driver override skips detection", dirs: []string{"cpuacct"},
		opts:        Options{Driver: DriverSystemd},
		wantVersion: V1, wantDriver: DriverSystemd,
	}, {
		name: "version override wins over cgroup.controllers", files: []string{"cgroup.controllers"}, dirs: []string{"cpuacct/kubepods", "memory/kubepods"},
		opts:        Options{Version: V1},
		wantVersion: V1, wantDriver: DriverCgroupfs,
	}, {
		name: "kubelet not started", dirs: []string{"cpuacct", "memory"},
		wantErr: ErrKubepodsNotFound,
	}, {
		name: "kubelet switched drivers", dirs: []string{"kubepods", "kubepods.slice"}, files: []string{"cgroup.controllers"},
		wantErr: ErrAmbiguousDriver,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range tc.dirs {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range tc.files {
				if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			opts := tc.opts
			opts.Root = root
			l, err := Detect(opts)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Detect error %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if l.Version() != tc.wantVersion || l.Driver() != tc.wantDriver {
				t.Errorf("Detect = %s/%s, want %s/%s", l.Version(), l.Driver(), tc.wantVersion, tc.wantDriver)
			}
		})
	}
}

func TestDetectNoCgroupFilesystem(t *testing.T) {
	_, err := Detect(Options{Root: t.TempDir()})
	if err == nil {
		t.Fatal("Detect on an empty directory succeeded, want an error naming the missing cpuacct hierarchy")
	}
}

func TestOptionsValidate(t *testing.T) {
	p := field.NewPath("cgroups")
	tests := []struct {
		name string
		opts Options
		want field.ErrorList
	}{{
		name: "defaults are valid",
	}, {
		name: "every field wrong",
		opts: Options{Root: "sys/fs/cgroup", Version: "v3", Driver: "runit", KubeletCgroupRoot: "kubepods"},
		want: field.ErrorList{
			field.Invalid(p.Child("root"), "sys/fs/cgroup", "must be an absolute path"),
			field.NotSupported(p.Child("version"), Version("v3"), []Version{VersionAuto, V1, V2}),
			field.NotSupported(p.Child("driver"), Driver("runit"), []Driver{DriverAuto, DriverCgroupfs, DriverSystemd}),
			field.Invalid(p.Child("kubeletCgroupRoot"), "kubepods", "must be an absolute cgroup path such as / or /kubepods-parent"),
		},
	}, {
		name: "unclean cgroup root",
		opts: Options{KubeletCgroupRoot: "/a/../b"},
		want: field.ErrorList{field.Invalid(p.Child("kubeletCgroupRoot"), "/a/../b", "must be a clean path (no .., //, or trailing /)")},
	}, {
		name: "systemd root must be a slice",
		opts: Options{Driver: DriverSystemd, KubeletCgroupRoot: "/custom"},
		want: field.ErrorList{field.Invalid(p.Child("kubeletCgroupRoot"), "/custom", "must be / or a systemd slice (name.slice) with the systemd driver")},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.SetDefaults()
			if diff := cmp.Diff(tc.want, o.Validate(p)); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOptionsDefaultsOnlyFillUnset(t *testing.T) {
	o := Options{Root: "/host/sys/fs/cgroup", Driver: DriverSystemd}
	o.SetDefaults()
	want := Options{Root: "/host/sys/fs/cgroup", Version: VersionAuto, Driver: DriverSystemd, KubeletCgroupRoot: "/"}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("SetDefaults (-want +got):\n%s", diff)
	}
}
