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
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

var (
	repoRootOnce sync.Once
	repoRoot     string
)

// RepoRoot returns the root of this checkout (the directory with go.mod).
func RepoRoot() string {
	repoRootOnce.Do(func() {
		_, file, _, ok := runtime.Caller(0)
		if !ok {
			panic("util: cannot locate the source of the test harness")
		}
		repoRoot = filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	})
	return repoRoot
}

// BinDir is where make tools and make build put binaries.
func BinDir() string { return filepath.Join(RepoRoot(), "bin") }

// SharedTracesDir returns ../shared/traces beside the checkout, where the
// project's real trace samples live, or "" when it is not there.
func SharedTracesDir() string {
	dir := filepath.Join(RepoRoot(), "..", "shared", "traces")
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir
	}
	return ""
}

// toolPath returns bin/<name>, or an error that says how to build it.
func toolPath(name string) (string, error) {
	p := filepath.Join(BinDir(), name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is missing: run `make test-tools` in %s first", p, RepoRoot())
	}
	return p, nil
}
