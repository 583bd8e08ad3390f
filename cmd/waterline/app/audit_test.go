package app

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestAuditPreemptionFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{
			name:    "unknown output format",
			args:    []string{"audit", "preemption", "-o", "yaml"},
			wantErr: `--output "yaml": want table or json`,
		},
		{
			name:    "missing kubeconfig file",
			args:    []string{"audit", "preemption", "--kubeconfig", filepath.Join(t.TempDir(), "nope")},
			wantErr: "loading kubeconfig: stat ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := NewCommand()
			cmd.SetArgs(tt.args)
			cmd.SetOut(&strings.Builder{})
			cmd.SetErr(&strings.Builder{})
			err := cmd.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
