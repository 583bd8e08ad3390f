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
