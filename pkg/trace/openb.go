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

package trace

import (
	"errors"
	"fmt"
	"io"
)

// Alibaba cluster-trace-gpu-v2023 "openb" (github.com/alibaba/clusterdata,
// cluster-trace-gpu-v2023/README.md): node and pod lists with a header
// row. Columns are found by name, so added columns do not break reading.

// OpenBNode is one row of openb_node_list_*.csv.
type OpenBNode struct {
	// Name is the node's serial name (column sn).
	Name string
	// CPUMilli is the node's CPU in millicores.
	CPUMilli int64
	// MemoryMiB is the node's memory in MiB.
	MemoryMiB int64
	// GPU is the number of GPUs.
	GPU int64
	// Model is the GPU model, empty for nodes without GPUs.
	Model string
}

var openBNodeColumns = []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}

// OpenBNodeReader streams the rows of a node list.
type OpenBNodeReader struct {
	lr  *lineReader
	col map[string]int
}

// NewOpenBNodeReader checks the header of a node list read from r; name
// appears in errors.
func NewOpenBNodeReader(r io.Reader, name string) (*OpenBNodeReader, error) {
	lr := newLineReader(r, name)
	col, err := lr.header(',', openBNodeColumns...)
	if err != nil {
		return nil, err
	}
	return &OpenBNodeReader{lr: lr, col: col}, nil
}

// Read returns the next node, io.EOF after the last one, or a *ParseError.
func (r *OpenBNodeReader) Read() (OpenBNode, error) {
	f, err := r.lr.next(',')
	if err != nil {
		return OpenBNode{}, err
	}
	if err := r.lr.wantFields(f, len(r.col)); err != nil {
		return OpenBNode{}, err
	}
	n := OpenBNode{Name: f[r.col["sn"]], Model: f[r.col["model"]]}
	if n.Name == "" {
		return OpenBNode{}, r.lr.errorf("sn", "empty")
	}
	for _, c := range []struct {
		name string
		dst  *int64
	}{{"cpu_milli", &n.CPUMilli}, {"memory_mib", &n.MemoryMiB}, {"gpu", &n.GPU}} {
		if *c.dst, err = r.lr.nonNegInt(c.name, f[r.col[c.name]]); err != nil {
			return OpenBNode{}, err
		}
	}
	return n, nil
}

// OpenBPod is one row of openb_pod_list_*.csv. Times are seconds from the
// start of the trace.
type OpenBPod struct {
	Name string
	// CPUMilli is the pod's CPU request in millicores.
	CPUMilli int64
	// MemoryMiB is the pod's memory request in MiB.
	MemoryMiB int64
	// NumGPU is the number of GPUs requested; GPUMilli the share of each
	// (1000 = a whole GPU).
	NumGPU   int64
	GPUMilli int64
	// GPUSpec constrains the GPU model; empty means any.
	GPUSpec string
	// QoS is the pod's class: LS (latency-sensitive), BE (best-effort),
	// Burstable or Guaranteed.
	QoS string
	// Phase is the pod's last phase: Running, Succeeded, Failed, Pending.
	Phase string
	// CreationTime and DeletionTime bound the pod's life.
	CreationTime int64
	DeletionTime int64
	// Scheduled is false for pods the trace never saw scheduled (an empty
	// scheduled_time); ScheduledTime is then 0.
	Scheduled     bool
	ScheduledTime int64
}

var openBPodColumns = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
	"pod_phase", "creation_time", "deletion_time", "scheduled_time"}

// OpenBPodReader streams the rows of a pod list.
type OpenBPodReader struct {
	lr  *lineReader
	col map[string]int
}

// NewOpenBPodReader checks the header of a pod list read from r; name
// appears in errors.
func NewOpenBPodReader(r io.Reader, name string) (*OpenBPodReader, error) {
	lr := newLineReader(r, name)
	col, err := lr.header(',', openBPodColumns...)
	if err != nil {
		return nil, err
	}
	return &OpenBPodReader{lr: lr, col: col}, nil
}

// Read returns the next pod, io.EOF after the last one, or a *ParseError.
// A deletion before the creation is an error.
func (r *OpenBPodReader) Read() (OpenBPod, error) {
	f, err := r.lr.next(',')
	if err != nil {
		return OpenBPod{}, err
	}
	if err := r.lr.wantFields(f, len(r.col)); err != nil {
		return OpenBPod{}, err
	}
	get := func(c string) string { return f[r.col[c]] }
	p := OpenBPod{Name: get("name"), GPUSpec: get("gpu_spec"), QoS: get("qos"), Phase: get("pod_phase")}
	if p.Name == "" {
		return OpenBPod{}, r.lr.errorf("name", "empty")
	}
	for _, c := range []struct {
		name string
		dst  *int64
	}{
		{"cpu_milli", &p.CPUMilli}, {"memory_mib", &p.MemoryMiB}, {"num_gpu", &p.NumGPU}, {"gpu_milli", &p.GPUMilli},
		{"creation_time", &p.CreationTime}, {"deletion_time", &p.DeletionTime},
	} {
		if *c.dst, err = r.lr.nonNegInt(c.name, get(c.name)); err != nil {
			return OpenBPod{}, err
		}
	}
	if s := get("scheduled_time"); s != "" {
		if p.ScheduledTime, err = r.lr.nonNegInt("scheduled_time", s); err != nil {
			return OpenBPod{}, err
		}
		p.Scheduled = true
	}
	if p.DeletionTime < p.CreationTime {
		return OpenBPod{}, r.lr.errorf("deletion_time", "%d is before creation_time %d", p.DeletionTime, p.CreationTime)
	}
	return p, nil
}

// LoadOpenBNodes reads a whole node list (plain or gzip).
func LoadOpenBNodes(path string) ([]OpenBNode, error) {
	return loadAll(path, "node list", func(r io.Reader) (func() (OpenBNode, error), error) {
		nr, err := NewOpenBNodeReader(r, path)
		if err != nil {
			return nil, err
		}
		return nr.Read, nil
	})
}

// LoadOpenBPods reads a whole pod list (plain or gzip).
func LoadOpenBPods(path string) ([]OpenBPod, error) {
	return loadAll(path, "pod list", func(r io.Reader) (func() (OpenBPod, error), error) {
		pr, err := NewOpenBPodReader(r, path)
		if err != nil {
			return nil, err
		}
		return pr.Read, nil
	})
}

func loadAll[T any](path, what string, newReader func(io.Reader) (func() (T, error), error)) ([]T, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	read, err := newReader(f)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", what, err)
	}
	var out []T
	for {
		v, err := read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("loading %s: %w", what, err)
		}
		out = append(out, v)
	}
}
