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
