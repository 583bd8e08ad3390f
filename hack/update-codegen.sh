#!/usr/bin/env bash
# Regenerates everything generated: deepcopy, CRDs and RBAC (controller-gen),
# the conversion and defaulting of the scheduler plugin args (conversion-gen,
# defaulter-gen), and the typed clientset, listers, informers and apply configurations of
# the waterline.dev API (code-generator). Tools come from bin/ (make tools).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bin="$root/bin"
module=github.com/waterline-dev/waterline
header=hack/boilerplate.go.txt

for tool in controller-gen conversion-gen defaulter-gen client-gen lister-gen informer-gen applyconfiguration-gen; do
  [[ -x "$bin/$tool" ]] || { echo "$bin/$tool missing: run make tools" >&2; exit 1; }
done

deepcopy_paths=(paths=./apis/...)
[[ -d pkg/scheduler/apis ]] && deepcopy_paths+=(paths=./pkg/scheduler/apis/...)
"$bin/controller-gen" object:headerFile="$header" "${deepcopy_paths[@]}"

# Scheduler plugin args, laid out as scheduler-plugins does: internal types in
# pkg/scheduler/apis/config, versioned ones (pointers, defaults) in
# pkg/scheduler/apis/config/v1. The v1 package's doc.go carries the
# +k8s:conversion-gen and +k8s:defaulter-gen tags.
sched_v1="$module/pkg/scheduler/apis/config/v1"
"$bin/conversion-gen" --go-header-file "$header" --output-file zz_generated.conversion.go "$sched_v1"
"$bin/defaulter-gen" --go-header-file "$header" --output-file zz_generated.defaults.go "$sched_v1"
rm -rf config/crd/bases
"$bin/controller-gen" crd:crdVersions=v1 paths=./apis/... output:crd:artifacts:config=config/crd/bases
"$bin/controller-gen" rbac:roleName=waterline-manager paths=./pkg/manager/... output:rbac:artifacts:config=config/rbac/manager
"$bin/controller-gen" rbac:roleName=waterline-agent paths=./pkg/agent/... output:rbac:artifacts:config=config/rbac/agent

# The Helm chart carries copies: config/ stays the one source (tests and
# kubectl apply -f read it), the chart is what clusters install.
chart=charts/waterline
rm -rf "$chart/crds" && mkdir -p "$chart/crds" "$chart/files/rbac"
cp config/crd/bases/*.yaml "$chart/crds/"
cp config/rbac/manager/role.yaml "$chart/files/rbac/manager-role.yaml"
cp config/rbac/agent/role.yaml "$chart/files/rbac/agent-role.yaml"
cp config/priorityclasses/priorityclasses.yaml "$chart/files/priorityclasses.yaml"
# The CRDs' spec schemas into values.schema.json (its "definitions").
go run ./hack/chart-schema

rm -rf pkg/client
"$bin/applyconfiguration-gen" \
  --go-header-file "$header" \
  --output-dir pkg/client/applyconfiguration \
  --output-pkg "$module/pkg/client/applyconfiguration" \
  "$module/apis/v1alpha1"
"$bin/client-gen" \
  --go-header-file "$header" \
  --clientset-name versioned \
  --input-base "$module" \
  --input apis/v1alpha1 \
  --apply-configuration-package "$module/pkg/client/applyconfiguration" \
  --output-dir pkg/client/clientset \
  --output-pkg "$module/pkg/client/clientset"
"$bin/lister-gen" \
  --go-header-file "$header" \
  --output-dir pkg/client/listers \
  --output-pkg "$module/pkg/client/listers" \
  "$module/apis/v1alpha1"
"$bin/informer-gen" \
  --go-header-file "$header" \
  --versioned-clientset-package "$module/pkg/client/clientset/versioned" \
  --listers-package "$module/pkg/client/listers" \
  --output-dir pkg/client/informers \
  --output-pkg "$module/pkg/client/informers" \
  "$module/apis/v1alpha1"

# informer-gen ignores +resourceName and pluralises NodeQOS as "nodeqoss" in
# the informer's identifying GVR (the clientset, which makes the requests,
# honours the tag and uses "nodeqoses"). Keep the name the API serves.
sed -i 's/Resource: "nodeqoss"/Resource: "nodeqoses"/' pkg/client/informers/externalversions/apis/v1alpha1/nodeqos.go
