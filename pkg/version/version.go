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

// Package version reports which Waterline build is running. The Makefile
// stamps the variables with -ldflags -X; an unstamped build says so.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Stamped at build time by the Makefile.
var (
	gitVersion = "v0.0.0-dev"
	gitCommit  = ""
	buildDate  = ""
)

// Info describes a build.
type Info struct {
	GitVersion string `json:"gitVersion"`
	GitCommit  string `json:"gitCommit,omitempty"`
	BuildDate  string `json:"buildDate,omitempty"`
	GoVersion  string `json:"goVersion"`
	Compiler   string `json:"compiler"`
	Platform   string `json:"platform"`
	// Kubernetes is the k8s.io/kubernetes module version the build links.
	Kubernetes string `json:"kubernetes,omitempty"`
}

// Get returns the running build's Info.
func Get() Info {
	info := Info{
		GitVersion: gitVersion,
		GitCommit:  gitCommit,
		BuildDate:  buildDate,
		GoVersion:  runtime.Version(),
		Compiler:   runtime.Compiler,
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
	info.Kubernetes = kubernetesVersion()
	return info
}

// kubernetesVersion is the version of k8s.io/kubernetes the binary links,
// or of client-go (a staging module, replaced) for binaries that link only that.
func kubernetesVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var clientGo string
	for _, dep := range bi.Deps {
		if dep.Replace != nil {
			dep = dep.Replace
		}
		switch dep.Path {
		case "k8s.io/kubernetes":
			return dep.Version
		case "k8s.io/client-go":
			clientGo = dep.Version
		}
	}
	return clientGo
}

// String is the one-line form `waterline version` prints.
func (i Info) String() string {
	s := i.GitVersion
	if i.GitCommit != "" {
		s += " (" + i.GitCommit + ")"
	}
	s += fmt.Sprintf(" %s %s", i.GoVersion, i.Platform)
	if i.Kubernetes != "" {
		s += " kubernetes " + i.Kubernetes
	}
	return s
}
