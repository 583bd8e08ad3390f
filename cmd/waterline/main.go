// Command waterline is Waterline's command-line tool: the trace-driven
// simulator, predictor evaluation, the preemption audit and version.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/waterline-dev/waterline/cmd/waterline/app"
)

func main() {
	os.Exit(cli.Run(app.NewCommand()))
}
