// Command waterline-agent runs on every node (a DaemonSet): it collects the
// node's and its pods' usage from /proc and cgroups, keeps it in a metric
// cache, runs the node's modules (prediction, QoS) and reports the node's
// NodeMetric status.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/waterline-dev/waterline/cmd/waterline-agent/app"
)

func main() {
	os.Exit(cli.Run(app.NewCommand()))
}
