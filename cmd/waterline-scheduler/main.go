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

	// Registers the plugins' args with the scheduler's scheme.
	_ "github.com/waterline-dev/waterline/pkg/scheduler/apis/config/scheme"
	"github.com/waterline-dev/waterline/pkg/scheduler/plugins/bandpreemption"
	"github.com/waterline-dev/waterline/pkg/scheduler/plugins/loadaware"
)

func main() {
	command := app.NewSchedulerCommand(
		app.WithPlugin(bandpreemption.Name, bandpreemption.New),
		app.WithPlugin(loadaware.Name, loadaware.New),
	)
	os.Exit(cli.Run(command))
}
