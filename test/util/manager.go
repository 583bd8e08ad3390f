package util

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	managerapp "github.com/waterline-dev/waterline/cmd/waterline-manager/app"
)

// StartManager runs waterline-manager's Run in this test process against
// the cluster until the test ends, without leader election and, unless
// opts says otherwise, without webhooks. It returns once /readyz answers.
func (c *Cluster) StartManager(t testing.TB, mutate func(*managerapp.Options)) {
	t.Helper()
	opts := managerapp.NewOptions()
	opts.Kubeconfig = c.Kubeconfig
	opts.LeaderElect = false
	opts.Webhooks = false
	opts.MetricsBindAddress = "0"
	probePort := FreePort(t)
	opts.HealthProbeBindAddress = "127.0.0.1:" + strconv.Itoa(probePort)
	if mutate != nil {
		mutate(opts)
	}
	if errs := opts.Validate(); len(errs) > 0 {
		t.Fatalf("Invalid manager options: %v", errs.ToAggregate())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- managerapp.Run(ctx, opts) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("waterline-manager: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("waterline-manager did not stop within 30s")
		}
	})
	Eventually(t, time.Minute, 200*time.Millisecond, func() (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("waterline-manager exited: %v", err)
		default:
		}
		resp, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort))
		return err == nil && resp == 200, err
	}, "waiting for waterline-manager to be ready")
}
