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

package util

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/waterline-dev/waterline/pkg/agent/cgroups"
)

// The checks tests make on the node's cgroups go through the agent's own
// cgroup layout code (pkg/agent/cgroups), which knows where kubelet puts a
// pod on cgroup v1 and v2 and which file holds what: a test reads a quota,
// shares or CPU time the same way on both, and checks against the files
// the agent writes rather than a copy of its rules.

// Layout is the node's cgroup layout: the version found at CgroupMount
// (v2 when it holds cgroup.controllers, else v1), kubelet's cgroupfs
// driver, and CgroupRoot as kubelet's cgroup root.
func (n *RealNode) Layout() (*cgroups.Layout, error) {
	n.layoutOnce.Do(func() {
		n.layout, n.layoutErr = cgroups.Detect(cgroups.Options{
			Root:              n.CgroupMount,
			Driver:            cgroups.DriverCgroupfs,
			KubeletCgroupRoot: n.CgroupRoot,
		})
	})
	return n.layout, n.layoutErr
}

// KubepodsCgroup is the cgroup of all the node's pods, relative to a
// hierarchy root.
func (n *RealNode) KubepodsCgroup() (string, error) {
	l, err := n.Layout()
	if err != nil {
		return "", err
	}
	return l.KubepodsCgroup(), nil
}

// PodCPUQuotaMilli is the CFS quota of the pod's kubelet-made cgroup in
// millicores (quota ÷ period), or -1 when it has none.
func (n *RealNode) PodCPUQuotaMilli(pod *corev1.Pod) (int64, error) {
	l, err := n.Layout()
	if err != nil {
		return 0, err
	}
	if pod.Status.QOSClass == "" {
		return 0, fmt.Errorf("pod %s/%s has no QoS class in its status yet: its cgroup is unknown", pod.Namespace, pod.Name)
	}
	q, err := l.ReadCPUQuota(l.PodCgroup(pod.UID, pod.Status.QOSClass))
	if err != nil {
		return 0, err
	}
	if q.QuotaMicros == cgroups.Unlimited {
		return -1, nil
	}
	if q.PeriodMicros == 0 {
		return 0, errors.New("CFS period 0")
	}
	return q.QuotaMicros * 1000 / int64(q.PeriodMicros), nil
}

// CgroupCPUNanos is the cumulative CPU time of cgroup cg (relative to a
// hierarchy root, e.g. from KubepodsCgroup) in nanoseconds: cpuacct.usage
// on v1, usage_usec of cpu.stat on v2.
func (n *RealNode) CgroupCPUNanos(cg string) (uint64, error) {
	l, err := n.Layout()
	if err != nil {
		return 0, err
	}
	f := l.UsageFiles(cg)
	defer f.Close()
	return cgroups.NewReader().CPUUsage(f)
}

// PodCPUNanos is CgroupCPUNanos of the pod's kubelet-made cgroup.
func (n *RealNode) PodCPUNanos(pod *corev1.Pod) (uint64, error) {
	l, err := n.Layout()
	if err != nil {
		return 0, err
	}
	return n.CgroupCPUNanos(l.PodCgroup(pod.UID, pod.Status.QOSClass))
}

// CgroupCPUShares is the CPU shares of cgroup cg: cpu.shares on v1,
// cpu.weight converted back to shares on v2.
func (n *RealNode) CgroupCPUShares(cg string) (uint64, error) {
	l, err := n.Layout()
	if err != nil {
		return 0, err
	}
	return l.ReadCPUShares(cg)
}

// QoSCgroup is the cgroup of a QoS class (kubepods/besteffort, ...),
// relative to a hierarchy root.
func (n *RealNode) QoSCgroup(qos corev1.PodQOSClass) (string, error) {
	l, err := n.Layout()
	if err != nil {
		return "", err
	}
	return l.QoSCgroup(qos), nil
}

// SetCPUShares sets the CPU weight of the node's cgroup root, which
// competes as one with every process outside it (cpu.shares on v1,
// cpu.weight converted from shares on v2), and returns how to put the old
// one back. The harness leaves it at the default (1024, one busy process)
// unless a test needs the node's pods to get the CPU their quotas allow on
// a machine shared with other work.
func (n *RealNode) SetCPUShares(shares uint64) (cgroups.Undo, error) {
	l, err := n.Layout()
	if err != nil {
		return nil, err
	}
	return l.SetCPUShares(strings.TrimPrefix(n.CgroupRoot, "/"), shares)
}
