//go:build tools

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

// Package tools pins the golangci-lint release `make verify` runs. A module
// of its own so that the linter's dependencies never move Waterline's or the
// control plane's.
package tools

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
