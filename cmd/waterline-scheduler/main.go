// Command waterline-scheduler is kube-scheduler built with Waterline's
// plugins. It takes every kube-scheduler flag; enable the plugins in a
// KubeSchedulerConfiguration profile (see config/scheduler/).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	command := app.NewSchedulerCommand()
	os.Exit(cli.Run(command))
}
