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

package predictor

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/waterline-dev/waterline/apis/extension"
	"github.com/waterline-dev/waterline/pkg/agent/atomicfile"
	"github.com/waterline-dev/waterline/pkg/core/predict"
)

// Checkpoint file: JSON, {"format", "version", "crc32c", "state"}, where
// crc32c (Castagnoli) covers the exact bytes of state. JSON because the
// histograms' checkpoints are JSON-able and the file is small (a few KB
// per pod) and written every few minutes, not every second; the checksum
// because a flipped digit would still parse. Bump checkpointVersion on any
// change of state's meaning: a checkpoint of another version is ignored,
// not misread.
const (
	checkpointFormat  = "waterline.dev/predictor"
	checkpointVersion = 1
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptCheckpoint wraps every reason a checkpoint cannot be used.
var ErrCorruptCheckpoint = errors.New("unusable predictor checkpoint")

type checkpointFile struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	CRC32C  uint32          `json:"crc32c"`
	State   json.RawMessage `json:"state"`
}

// checkpointState is everything the predictor learned: the histograms and
// where their update grid stands.
type checkpointState struct {
	// SavedAt is when the checkpoint was taken (for the log).
	SavedAt time.Time `json:"savedAt"`
	// FedUntil is the end of the last window fed; the restored predictor
	// feeds the windows after it from the metric cache.
	FedUntil time.Time `json:"fedUntil,omitzero"`
	// Resources holds cpu and memory.
	Resources map[corev1.ResourceName]resourceCheckpoint `json:"resources"`
}

type resourceCheckpoint struct {
	// Prod is the Prod tracker: node level, every Prod pod and the system.
	Prod predict.TrackerCheckpoint `json:"prod"`
	// Bands holds every band's histogram.
	Bands map[extension.Band]predict.HistogramCheckpoint `json:"bands"`
}

func encodeCheckpoint(st *checkpointState) ([]byte, error) {
	state, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encoding the predictor state: %w", err)
	}
	data, err := json.Marshal(checkpointFile{
		Format:  checkpointFormat,
		Version: checkpointVersion,
		CRC32C:  crc32.Checksum(state, crcTable),
		State:   state,
	})
	if err != nil {
		return nil, fmt.Errorf("encoding the predictor checkpoint: %w", err)
	}
	return data, nil
}

func decodeCheckpoint(data []byte) (*checkpointState, error) {
	var f checkpointFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptCheckpoint, err)
	}
	if f.Format != checkpointFormat || f.Version != checkpointVersion {
		return nil, fmt.Errorf("%w: format %q version %d, want %q version %d", ErrCorruptCheckpoint, f.Format, f.Version, checkpointFormat, checkpointVersion)
	}
	if got := crc32.Checksum(f.State, crcTable); got != f.CRC32C {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorruptCheckpoint, got, f.CRC32C)
	}
	var st checkpointState
	if err := json.Unmarshal(f.State, &st); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptCheckpoint, err)
	}
	return &st, nil
}

// readCheckpoint returns the checkpoint at path, or nil (logged) when
// there is none or it cannot be read.
func readCheckpoint(logger klog.Logger, path string) *checkpointState {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		logger.V(2).Info("No predictor checkpoint, starting the histograms from the metric cache", "path", path)
		return nil
	}
	if err != nil {
		logger.Error(err, "Cannot read the predictor checkpoint, starting the histograms from the metric cache", "path", path)
		return nil
	}
	st, err := decodeCheckpoint(data)
	if err != nil {
		logger.Error(err, "Ignoring the predictor checkpoint, starting the histograms from the metric cache", "path", path, "bytes", len(data))
		return nil
	}
	return st
}

// restoreLocked replaces the predictor's histograms by the checkpoint's.
// Errors wrap ErrCorruptCheckpoint or predict.ErrIncompatibleLayout (the
// half-life changed while the agent was down); nothing is changed then.
func (p *Predictor) restoreLocked(cp *checkpointState, layouts [len(resourceKinds)]*predict.Layout) error {
	var res [len(resourceKinds)]*resourceState
	tracked := map[string]time.Time{}
	for i, k := range resourceKinds {
		rc, ok := cp.Resources[k.name]
		if !ok {
			return fmt.Errorf("%w: no %s histograms", ErrCorruptCheckpoint, k.name)
		}
		tr, err := layouts[i].RestoreTracker(rc.Prod)
		if err != nil {
			return fmt.Errorf("restoring the %s histograms: %w", k.name, err)
		}
		rs := &resourceState{layout: layouts[i], prod: tr}
		for b, band := range extension.Bands {
			hc, ok := rc.Bands[band]
			if !ok {
				return fmt.Errorf("%w: no %s histogram of band %s", ErrCorruptCheckpoint, k.name, band)
			}
			if rs.bands[b], err = layouts[i].Restore(hc); err != nil {
				return fmt.Errorf("restoring the %s histogram of band %s: %w", k.name, band, err)
			}
		}
		if tr.Pod(predict.SystemPodID) == nil {
			return fmt.Errorf("%w: no %s history of the system", ErrCorruptCheckpoint, k.name)
		}
		res[i] = rs
		if i == cpuIndex {
			for _, pod := range rc.Prod.Pods {
				if pod.ID != predict.SystemPodID {
					tracked[pod.ID] = pod.Start
				}
			}
		}
	}
	// Both resources must track the same pods.
	for i, rs := range res {
		if n := rs.prod.Len() - 1; n != len(tracked) {
			return fmt.Errorf("%w: %d pods in the %s histograms, %d in the cpu ones", ErrCorruptCheckpoint, n, resourceKinds[i].name, len(tracked))
		}
		for id := range tracked {
			if rs.prod.Pod(id) == nil {
				return fmt.Errorf("%w: pod %s has cpu but no %s histogram", ErrCorruptCheckpoint, id, resourceKinds[i].name)
			}
		}
	}
	p.res = res
	p.tracked = tracked
	p.fedUntil = cp.FedUntil
	return nil
}

// stateLocked returns the checkpoint of the predictor's state, independent
// of it (histogram checkpoints are copies).
func (p *Predictor) stateLocked(now time.Time) *checkpointState {
	st := &checkpointState{SavedAt: now, FedUntil: p.fedUntil, Resources: map[corev1.ResourceName]resourceCheckpoint{}}
	for i, k := range resourceKinds {
		rs := p.res[i]
		rc := resourceCheckpoint{Prod: rs.prod.Checkpoint(), Bands: map[extension.Band]predict.HistogramCheckpoint{}}
		for b, band := range extension.Bands {
			rc.Bands[band] = rs.bands[b].Checkpoint()
		}
		st.Resources[k.name] = rc
	}
	return st
}

// Checkpoint writes the histograms to Config.CheckpointPath atomically
// (temporary file in the same directory, fsync, rename, directory fsync):
// a crash leaves the old or the new checkpoint, never a torn one. The lock
// is held only while the histograms are copied. It reports false, writing
// nothing, without a path or before the first cycle (so an agent stopped
// before it learned anything keeps the previous checkpoint).
func (p *Predictor) Checkpoint() (bool, error) {
	if p.cfg.CheckpointPath == "" {
		return false, nil
	}
	p.checkpointMu.Lock()
	defer p.checkpointMu.Unlock()
	p.mu.Lock()
	if p.res[0] == nil {
		p.mu.Unlock()
		return false, nil
	}
	st := p.stateLocked(p.deps.Clock.Now())
	p.mu.Unlock()
	data, err := encodeCheckpoint(st)
	if err == nil {
		err = atomicfile.Write(p.cfg.CheckpointPath, data)
	}
	if err != nil {
		p.metrics.checkpoints.WithLabelValues("error").Inc()
		return false, err
	}
	p.metrics.checkpoints.WithLabelValues("success").Inc()
	return true, nil
}
