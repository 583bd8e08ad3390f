// Command waterline-manager runs Waterline's cluster-wide controllers (the
// NodeMetric lifecycle, Mid/Batch tier allocatable on nodes) and its
// admission webhooks.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/waterline-dev/waterline/cmd/waterline-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewCommand()))
}
