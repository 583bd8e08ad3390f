#!/usr/bin/env bash
# Builds the programs Waterline's tests and local cluster run -- the real
# control plane, kwok and the code generators -- from the Go module proxy,
# at the versions pinned in hack/tools/go.mod, and links them into bin/.
#
# Built binaries are kept in a cache outside the clone, keyed by tool, module
# version and Go version, so a clean clone on a machine that built them once
# only relinks (CI runs in a fresh clone every time). A binary already built
# at the pinned version is never rebuilt.
#
# Usage: hack/build-tools.sh [tool...]    (default: all tools)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools_dir="$root/hack/tools"
bin_dir="$root/bin"
cache_dir="${WATERLINE_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/waterline/tools}"
mkdir -p "$bin_dir" "$cache_dir"

go_version=$(go env GOVERSION)

# tool -> "module package"
declare -A module=(
  [etcd]=go.etcd.io/etcd/server/v3
  [kube-apiserver]=k8s.io/kubernetes
  [kube-apiserver-1.34]=k8s.io/kubernetes
  [kube-controller-manager]=k8s.io/kubernetes
  [kube-scheduler]=k8s.io/kubernetes
  [kubectl]=k8s.io/kubernetes
  [kwok]=sigs.k8s.io/kwok
  [controller-gen]=sigs.k8s.io/controller-tools
  [client-gen]=k8s.io/code-generator
  [lister-gen]=k8s.io/code-generator
  [informer-gen]=k8s.io/code-generator
  [applyconfiguration-gen]=k8s.io/code-generator
  [conversion-gen]=k8s.io/code-generator
  [defaulter-gen]=k8s.io/code-generator
  [kubelet]=k8s.io/kubernetes
  [helm]=helm.sh/helm/v4
  [golangci-lint]=github.com/golangci/golangci-lint/v2
  [promtool]=github.com/prometheus/prometheus
)
declare -A package=(
  [etcd]=go.etcd.io/etcd/server/v3
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-apiserver-1.34]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kube-scheduler]=k8s.io/kubernetes/cmd/kube-scheduler
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
  [kwok]=sigs.k8s.io/kwok/cmd/kwok
  [controller-gen]=sigs.k8s.io/controller-tools/cmd/controller-gen
  [client-gen]=k8s.io/code-generator/cmd/client-gen
  [lister-gen]=k8s.io/code-generator/cmd/lister-gen
  [informer-gen]=k8s.io/code-generator/cmd/informer-gen
  [applyconfiguration-gen]=k8s.io/code-generator/cmd/applyconfiguration-gen
  [conversion-gen]=k8s.io/code-generator/cmd/conversion-gen
  [defaulter-gen]=k8s.io/code-generator/cmd/defaulter-gen
  [kubelet]=k8s.io/kubernetes/cmd/kubelet
  [helm]=helm.sh/helm/v4/cmd/helm
  [golangci-lint]=github.com/golangci/golangci-lint/v2/cmd/golangci-lint
  [promtool]=github.com/prometheus/prometheus/cmd/promtool
)
# Tools whose dependencies must not meet the control plane's live in modules
# of their own under hack/tools; the rest share hack/tools/go.mod. The
# oldest supported kube-apiserver is another Kubernetes release.
declare -A module_dir=(
  [helm]=helm
  [golangci-lint]=lint
  [kube-apiserver-1.34]=apiserver-1.34
  [promtool]=promtool
)
# all: what `make tools` builds when no tool is named. The oldest supported
# kube-apiserver and promtool are only for their tests: `make test` names
# them (TEST_TOOLS).
all=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kwok controller-gen client-gen lister-gen informer-gen applyconfiguration-gen conversion-gen defaulter-gen helm golangci-lint)

dir_of() { echo "$tools_dir${module_dir[$1]:+/${module_dir[$1]}}"; }
mod_version() { (cd "$(dir_of "$1")" && go list -m -f '{{.Version}}' "${module[$1]}"); }

ldflags_for() {
  local tool=$1 version=$2
  case "$tool" in
    kube-*|kubectl|kubelet)
      local minor=${version#v1.}; minor=${minor%%.*}
      local pkg=k8s.io/component-base/version
      echo "-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
      ;;
    kwok) echo "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$version" ;;
    helm) echo "-s -w -X helm.sh/helm/v4/internal/version.version=$version" ;;
    golangci-lint) echo "-s -w -X main.version=${version#v}" ;;
    *) echo "-s -w" ;;
  esac
}

build_one() {
  local tool=$1
  local version; version=$(mod_version "$tool")
  local cached="$cache_dir/$tool-$version-$go_version"
  if [[ ! -x "$cached" ]]; then
    echo ">> building $tool $version (${package[$tool]})"
    local start=$SECONDS
    (cd "$(dir_of "$tool")" && CGO_ENABLED=0 go build -trimpath -ldflags "$(ldflags_for "$tool" "$version")" -o "$cached.tmp.$$" "${package[$tool]}")
    mv -f "$cached.tmp.$$" "$cached"
    echo "   $tool built in $((SECONDS - start))s"
  fi
  ln -sfn "$cached" "$bin_dir/$tool"
  echo "$version" > "$bin_dir/.$tool.version"
}

# kwok ships its stages as YAML in its module and none are built in (v0.8.0
# says "no stages found"): gather the ones our clusters need into one file.
kwok_stages() {
  local dir; dir=$(cd "$tools_dir" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  if [[ -z "$dir" || ! -d "$dir" ]]; then
    (cd "$tools_dir" && go mod download sigs.k8s.io/kwok)
    dir=$(cd "$tools_dir" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  fi
  local out="$bin_dir/kwok-stages.yaml"
  {
    for f in "$dir"/kustomize/stage/node/fast/*.yaml \
             "$dir"/kustomize/stage/node/heartbeat-with-lease/*.yaml \
             "$dir"/kustomize/stage/pod/general/*.yaml; do
      [[ "$(basename "$f")" == kustomization.yaml ]] && continue
      echo "---"
      cat "$f"
    done
  } > "$out.tmp.$$"
  mv -f "$out.tmp.$$" "$out"
}

tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=("${all[@]}")
for t in "${tools[@]}"; do
  [[ -n "${module[$t]:-}" ]] || { echo "unknown tool: $t (known: ${all[*]})" >&2; exit 2; }
  build_one "$t"
done
if [[ " ${tools[*]} " == *" kwok "* ]]; then
  kwok_stages
fi
