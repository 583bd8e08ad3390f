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
	"fmt"
	"os"
	"path/filepath"
)

// Folders of the shared trace samples (see shared/traces/README.md).
const (
	// AlibabaV2018Folder holds machine_usage.csv and machine_meta.csv.
	AlibabaV2018Folder = "alibaba-v2018-machine-sample"
	// BitbrainsFolder holds one gzip CSV per VM.
	BitbrainsFolder = "bitbrains-rnd-2013-7"
	// OpenBFolder holds the openb node and pod lists.
	OpenBFolder = "alibaba-gpu-v2023-openb"
	// MachineUsageFile is the machine usage table of AlibabaV2018Folder.
	MachineUsageFile = "machine_usage.csv"
)

// FindShared looks for shared/traces/<folder> in start and each of its
// parents, the way the traces sit beside the repository (the repository's
// parent holds shared/). It returns the folder's path, or an error
// wrapping os.ErrNotExist that names where the search started.
func FindShared(start, folder string) (string, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", fmt.Errorf("finding shared traces from %s: %w", start, err)
	}
	for {
		candidate := filepath.Join(dir, "shared", "traces", folder)
		if fi, err := os.Stat(candidate); err == nil && fi.IsDir() {
			return candidate, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("finding shared traces: no shared/traces/%s in %s or any parent: %w", folder, start, os.ErrNotExist)
		}
		dir = parent
	}
}
