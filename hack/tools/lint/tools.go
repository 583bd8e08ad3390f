//go:build tools

// Package tools pins the golangci-lint release `make verify` runs. A module
// of its own so that the linter's dependencies never move Waterline's or the
// control plane's.
package tools

import _ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
