package bandpreemption

import (
	"os"
	"testing"

	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// TestMain registers the scheduler's metrics, which the framework's queue
// and the preemption evaluator record into; the real scheduler does this at
// start.
func TestMain(m *testing.M) {
	metrics.Register()
	os.Exit(m.Run())
}
