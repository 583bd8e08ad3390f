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

package executor

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/waterline-dev/waterline/pkg/agent/atomicfile"
)

// StateFile is the executor's state file inside the agent's state
// directory.
const StateFile = "qos-evictions.json"

const stateVersion = 1

// evictionState is what the executor persists: its two eviction budgets.
// It is written after every eviction that takes or gives back a token (a
// few a minute at most), atomically.
type evictionState struct {
	Version int         `json:"version"`
	All     bucketState `json:"all"`
	Memory  bucketState `json:"memory"`
}

// loadState reads the state file. A missing file is a first start (ok
// false, nil error); an unreadable one is an error, and the caller starts
// with empty budgets rather than a fresh burst.
func loadState(path string) (evictionState, bool, error) {
	var s evictionState
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("reading the eviction budget %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, false, fmt.Errorf("parsing the eviction budget %s: %w", path, err)
	}
	if s.Version != stateVersion {
		return s, false, fmt.Errorf("eviction budget %s: version %d, want %d", path, s.Version, stateVersion)
	}
	for name, bs := range map[string]bucketState{"all": s.All, "memory": s.Memory} {
		if bs.PerMinute < 0 || bs.Tokens < 0 || math.IsNaN(bs.Tokens) || math.IsInf(bs.Tokens, 0) || bs.Tokens > float64(bs.PerMinute) {
			return s, false, fmt.Errorf("eviction budget %s: %s: perMinute %d tokens %v out of range", path, name, bs.PerMinute, bs.Tokens)
		}
	}
	return s, true, nil
}

func saveState(path string, s evictionState) error {
	s.Version = stateVersion
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b)
}

// emptyBucket is a bucket with nothing to spend until it refills from now.
func emptyBucket(now time.Time) bucketState { return bucketState{Last: now} }
