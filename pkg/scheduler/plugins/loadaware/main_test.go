package loadaware

import (
	"os"
	"testing"

	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

func TestMain(m *testing.M) {
	// The framework records plugin metrics; they must exist before it runs.
	metrics.Register()
	os.Exit(m.Run())
}
