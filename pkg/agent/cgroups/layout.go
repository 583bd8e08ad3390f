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
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Version is the cgroup version of the node.
type Version string

// Cgroup versions. VersionAuto asks Detect to find out.
const (
	VersionAuto Version = "auto"
	V1          Version = "v1"
	V2          Version = "v2"
)

// Driver is kubelet's cgroup driver (its --cgroup-driver).
type Driver string

// Cgroup drivers. DriverAuto asks Detect to find out.
const (
	DriverAuto     Driver = "auto"
	DriverCgroupfs Driver = "cgroupfs"
	DriverSystemd  Driver = "systemd"
)

// Controller names a cgroup v1 hierarchy. On v2 every controller lives in
// the one unified hierarchy and the name only selects the files.
type Controller string

// Controllers Waterline reads or writes.
const (
	ControllerCPU     Controller = "cpu"
	ControllerCPUAcct Controller = "cpuacct"
	ControllerMemory  Controller = "memory"
)

// Defaults of Options.
const (
	DefaultRoot              = "/sys/fs/cgroup"
	DefaultKubeletCgroupRoot = "/"
)

// Options says where the cgroup filesystem is and, optionally, which layout
// to assume instead of detecting it.
type Options struct {
	// Root is the absolute path where the cgroup filesystem is mounted: on
	// v1 the directory holding one mount per controller (cpu, cpuacct,
	// memory; co-mounted hierarchies such as cpu,cpuacct are found through
	// the usual symlinks), on v2 the unified mount. Inside a container that
	// is the host's cgroup filesystem mounted somewhere else, e.g.
	// /host/sys/fs/cgroup. Default /sys/fs/cgroup.
	Root string
	// Version is the cgroup version: v1, v2, or auto (the default) to
	// detect it: v2 when <Root>/cgroup.controllers exists, else v1.
	Version Version
	// Driver is kubelet's cgroup driver: cgroupfs, systemd, or auto (the
	// default) to detect it from which of kubepods and kubepods.slice
	// exists under the kubelet cgroup root.
	Driver Driver
	// KubeletCgroupRoot is kubelet's --cgroup-root: the cgroup, as an
	// absolute cgroup path, under which kubelet creates kubepods. With the
	// systemd driver it is "/" or a slice such as /waterline.slice, whose
	// name prefixes the kubepods slices as systemd requires
	// (waterline.slice/waterline-kubepods.slice/...). Default "/".
	KubeletCgroupRoot string
}

// SetDefaults fills the unset fields of o.
func (o *Options) SetDefaults() {
	if o.Root == "" {
		o.Root = DefaultRoot
	}
	if o.Version == "" {
		o.Version = VersionAuto
	}
	if o.Driver == "" {
		o.Driver = DriverAuto
	}
	if o.KubeletCgroupRoot == "" {
		o.KubeletCgroupRoot = DefaultKubeletCgroupRoot
	}
}

// Validate returns every problem of o, each naming the field under fldPath
// and its value. o is expected to be defaulted.
func (o *Options) Validate(fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !filepath.IsAbs(o.Root) {
		errs = append(errs, field.Invalid(fldPath.Child("root"), o.Root, "must be an absolute path"))
	}
	switch o.Version {
	case VersionAuto, V1, V2:
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("version"), o.Version, []Version{VersionAuto, V1, V2}))
	}
	switch o.Driver {
	case DriverAuto, DriverCgroupfs, DriverSystemd:
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("driver"), o.Driver, []Driver{DriverAuto, DriverCgroupfs, DriverSystemd}))
	}
	kcr := o.KubeletCgroupRoot
	switch {
	case !path.IsAbs(kcr):
		errs = append(errs, field.Invalid(fldPath.Child("kubeletCgroupRoot"), kcr, "must be an absolute cgroup path such as / or /kubepods-parent"))
	case path.Clean(kcr) != kcr:
		errs = append(errs, field.Invalid(fldPath.Child("kubeletCgroupRoot"), kcr, "must be a clean path (no .., //, or trailing /)"))
	case o.Driver == DriverSystemd && kcr != "/" && !strings.HasSuffix(kcr, ".slice"):
		errs = append(errs, field.Invalid(fldPath.Child("kubeletCgroupRoot"), kcr, "must be / or a systemd slice (name.slice) with the systemd driver"))
	}
	return errs
}

// ErrKubepodsNotFound is returned by Detect when no kubepods cgroup exists
// under the kubelet cgroup root, so the driver cannot be detected: kubelet
// has not started, Root or KubeletCgroupRoot is wrong, or the driver must
// be given explicitly.
var ErrKubepodsNotFound = errors.New("no kubepods cgroup found")

// ErrAmbiguousDriver is returned by Detect when both kubepods (cgroupfs) and
// kubepods.slice (systemd) exist, as after kubelet switched drivers: the
// driver must be given explicitly.
var ErrAmbiguousDriver = errors.New("both kubepods and kubepods.slice exist")

// Layout maps pods to their cgroup directories for one node's cgroup
// version and kubelet driver. It is immutable and safe for concurrent use.
type Layout struct {
	root    string
	version Version
	driver  Driver
	// rootComponents are the cgroup names of the kubelet cgroup root, e.g.
	// [waterline] for /waterline.slice (systemd) or [a b] for /a/b.
	rootComponents []string
}

// Detect validates o (after defaulting a copy of it), detects the version
// and driver it leaves on auto, and returns the layout.
func Detect(o Options) (*Layout, error) {
	o.SetDefaults()
	if errs := o.Validate(field.NewPath("cgroups")); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	version := o.Version
	if version == VersionAuto {
		v, err := detectVersion(o.Root)
		if err != nil {
			return nil, err
		}
		version = v
	}
	driver := o.Driver
	if driver == DriverAuto {
		d, err := detectDriver(o.Root, version, o.KubeletCgroupRoot)
		if err != nil {
			return nil, err
		}
		driver = d
	}
	return NewLayout(o.Root, version, driver, o.KubeletCgroupRoot)
}

// NewLayout returns the layout for a known version and driver, without
// looking at the filesystem.
func NewLayout(root string, version Version, driver Driver, kubeletCgroupRoot string) (*Layout, error) {
	o := Options{Root: root, Version: version, Driver: driver, KubeletCgroupRoot: kubeletCgroupRoot}
	o.SetDefaults()
	errs := o.Validate(field.NewPath("cgroups"))
	if version != V1 && version != V2 {
		errs = append(errs, field.NotSupported(field.NewPath("cgroups", "version"), version, []Version{V1, V2}))
	}
	if driver != DriverCgroupfs && driver != DriverSystemd {
		errs = append(errs, field.NotSupported(field.NewPath("cgroups", "driver"), driver, []Driver{DriverCgroupfs, DriverSystemd}))
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return &Layout{
		root:           o.Root,
		version:        version,
		driver:         driver,
		rootComponents: rootComponents(o.KubeletCgroupRoot, driver),
	}, nil
}

func detectVersion(root string) (Version, error) {
	_, err := os.Stat(filepath.Join(root, "cgroup.controllers"))
	switch {
	case err == nil:
		return V2, nil
	case errors.Is(err, os.ErrNotExist):
	default:
		return "", fmt.Errorf("detecting cgroup version under %s: %w", root, err)
	}
	// A v1 node mounts one hierarchy per controller; without cpuacct we
	// could not read CPU usage anyway, so say so now rather than per pod.
	if _, err := os.Stat(filepath.Join(root, string(ControllerCPUAcct))); err != nil {
		return "", fmt.Errorf("detecting cgroup version: %s has neither cgroup.controllers (v2) nor a cpuacct hierarchy (v1): %w", root, err)
	}
	return V1, nil
}

func detectDriver(root string, version Version, kubeletCgroupRoot string) (Driver, error) {
	exists := func(d Driver) (bool, error) {
		l := &Layout{root: root, version: version, driver: d, rootComponents: rootComponents(kubeletCgroupRoot, d)}
		dir := l.Path(ControllerCPUAcct, l.KubepodsCgroup())
		if version == V1 {
			// Memory is as good a witness as cpuacct and is the hierarchy
			// a v1 node is least likely to leave out.
			dir = l.Path(ControllerMemory, l.KubepodsCgroup())
		}
		_, err := os.Stat(dir)
		if err == nil {
			return true, nil
		}
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("detecting cgroup driver: %w", err)
	}
	cgroupfs, err := exists(DriverCgroupfs)
	if err != nil {
		return "", err
	}
	systemd, err := exists(DriverSystemd)
	if err != nil {
		return "", err
	}
	switch {
	case cgroupfs && systemd:
		return "", fmt.Errorf("detecting cgroup driver under %s (kubelet cgroup root %s): %w; set the driver explicitly", root, kubeletCgroupRoot, ErrAmbiguousDriver)
	case cgroupfs:
		return DriverCgroupfs, nil
	case systemd:
		return DriverSystemd, nil
	}
	return "", fmt.Errorf("detecting cgroup driver under %s (kubelet cgroup root %s, cgroup %s): %w", root, kubeletCgroupRoot, version, ErrKubepodsNotFound)
}

func rootComponents(kubeletCgroupRoot string, driver Driver) []string {
	if kubeletCgroupRoot == "/" || kubeletCgroupRoot == "" {
		return nil
	}
	if driver == DriverSystemd {
		// kubelet turns /a.slice/a-b.slice into the cgroup name [a b]: the
		// last slice carries the whole ancestry in its dashes.
		base := strings.TrimSuffix(path.Base(kubeletCgroupRoot), ".slice")
		return strings.Split(base, "-")
	}
	return strings.Split(strings.TrimPrefix(kubeletCgroupRoot, "/"), "/")
}

// Root is the mount point the layout reads under.
func (l *Layout) Root() string { return l.root }

// Version is the node's cgroup version.
func (l *Layout) Version() Version { return l.version }

// Driver is kubelet's cgroup driver.
func (l *Layout) Driver() Driver { return l.driver }

// Path returns the directory of a cgroup (a path relative to the hierarchy
// root, as returned by PodCgroup) for a controller.
func (l *Layout) Path(c Controller, cgroup string) string {
	if l.version == V2 {
		return l.root + "/" + cgroup
	}
	return l.root + "/" + string(c) + "/" + cgroup
}

// KubepodsCgroup is the cgroup kubelet puts every pod under, relative to the
// hierarchy root: kubepods or kubepods.slice with the default cgroup root.
func (l *Layout) KubepodsCgroup() string {
	return l.name(nil)
}

// QoSCgroup is the cgroup of a QoS class, relative to the hierarchy root.
// Guaranteed pods live directly in the kubepods cgroup.
func (l *Layout) QoSCgroup(qos corev1.PodQOSClass) string {
	return l.name(qosComponents(qos))
}

// PodCgroup is the cgroup of a pod, relative to the hierarchy root, e.g.
// kubepods/burstable/pod<uid> (cgroupfs) or
// kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice
// (systemd, dashes of the UID escaped to underscores). It is the same in
// every v1 hierarchy.
func (l *Layout) PodCgroup(uid types.UID, qos corev1.PodQOSClass) string {
	return l.name(append(qosComponents(qos), "pod"+string(uid)))
}

// PodCgroupCandidates returns the pod's cgroup for each QoS class, the
// given one first, for callers that cannot trust or do not know the class
// (a pod whose status has no qosClass yet).
func (l *Layout) PodCgroupCandidates(uid types.UID, qos corev1.PodQOSClass) []string {
	classes := []corev1.PodQOSClass{qos}
	for _, c := range []corev1.PodQOSClass{corev1.PodQOSBurstable, corev1.PodQOSBestEffort, corev1.PodQOSGuaranteed} {
		if c != qos {
			classes = append(classes, c)
		}
	}
	if qos == "" {
		classes = classes[1:]
	}
	out := make([]string, 0, len(classes))
	for _, c := range classes {
		out = append(out, l.PodCgroup(uid, c))
	}
	return out
}

func qosComponents(qos corev1.PodQOSClass) []string {
	switch qos {
	case corev1.PodQOSBurstable:
		return []string{"burstable"}
	case corev1.PodQOSBestEffort:
		return []string{"besteffort"}
	}
	return nil
}

// name builds kubelet's cgroup name for kubepods + extra components.
func (l *Layout) name(extra []string) string {
	comps := make([]string, 0, len(l.rootComponents)+1+len(extra))
	comps = append(comps, l.rootComponents...)
	comps = append(comps, "kubepods")
	comps = append(comps, extra...)
	if l.driver == DriverCgroupfs {
		return strings.Join(comps, "/")
	}
	// systemd: every component becomes a slice whose name repeats its
	// ancestors joined by dashes, so dashes inside a component (UIDs) are
	// escaped to underscores first, as kubelet does.
	var b strings.Builder
	prefix := ""
	for i, c := range comps {
		c = strings.ReplaceAll(c, "-", "_")
		if i > 0 {
			b.WriteByte('/')
			prefix += "-"
		}
		prefix += c
		b.WriteString(prefix)
		b.WriteString(".slice")
	}
	return b.String()
}

// ContainerID returns the container ID a directory inside a pod cgroup
// names, and false for directories that are not containers (conmon scopes
// of CRI-O, anything not a scope under the systemd driver). Names are
// <id> (cgroupfs: containerd, docker), crio-<id> (CRI-O), or under systemd
// <runtime>-<id>.scope (cri-containerd-, crio-, docker-).
func (l *Layout) ContainerID(dirName string) (string, bool) {
	name := dirName
	if l.driver == DriverSystemd {
		var ok bool
		if name, ok = strings.CutSuffix(name, ".scope"); !ok {
			return "", false
		}
	}
	if strings.Contains(name, "conmon") {
		return "", false
	}
	for _, p := range []string{"cri-containerd-", "crio-", "docker-", "containerd-"} {
		if id, ok := strings.CutPrefix(name, p); ok {
			return id, id != ""
		}
	}
	return name, name != "" && l.driver == DriverCgroupfs
}

// ContainerCgroup is one container's cgroup inside a pod cgroup.
type ContainerCgroup struct {
	// ID is the container's runtime ID.
	ID string
	// Cgroup is its cgroup, relative to the hierarchy root.
	Cgroup string
}

// ContainerCgroups lists the containers of a pod cgroup (as PodCgroup
// returns it), sorted by ID: what a writer must visit on v1, where a
// pod's CPU quota may not go below a container's (see SetCPUQuota). It
// reads the directory each call; the collector keeps its own listing.
func (l *Layout) ContainerCgroups(podCgroup string) ([]ContainerCgroup, error) {
	entries, err := os.ReadDir(l.Path(ControllerCPU, podCgroup))
	if err != nil {
		return nil, fmt.Errorf("listing containers of %s: %w", podCgroup, err)
	}
	var out []ContainerCgroup
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if id, ok := l.ContainerID(e.Name()); ok {
			out = append(out, ContainerCgroup{ID: id, Cgroup: podCgroup + "/" + e.Name()})
		}
	}
	slices.SortFunc(out, func(a, b ContainerCgroup) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
