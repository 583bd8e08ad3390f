#!/usr/bin/env bash
# Fails when the tree is not as `make generate` and gofmt would leave it, when
# a Go file lacks the licence header, when golangci-lint finds something, when
# the chart does not lint or render, when go vet complains, or when go.mod /
# go.sum are not tidy.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
failed=0

echo ">> checking generated code"
generated=(apis config/crd config/rbac pkg/client pkg/scheduler/apis charts/waterline/crds charts/waterline/files/rbac charts/waterline/files/priorityclasses.yaml charts/waterline/values.schema.json)
before=$(git status --porcelain --untracked-files=all -- "${generated[@]}")
before_diff=$(git diff -- "${generated[@]}")
hack/update-codegen.sh
after=$(git status --porcelain --untracked-files=all -- "${generated[@]}")
after_diff=$(git diff -- "${generated[@]}")
if [[ "$before" != "$after" || "$before_diff" != "$after_diff" ]]; then
  echo "generated code is stale: run 'make generate' and commit the result" >&2
  diff <(echo "$before_diff") <(echo "$after_diff") | head -40 >&2 || true
  failed=1
fi

echo ">> helm lint, helm template"
hack/verify-chart.sh || failed=1

echo ">> gofmt"
unformatted=$(gofmt -l $(git ls-files --cached --others --exclude-standard '*.go') 2>/dev/null || true)
if [[ -n "$unformatted" ]]; then
  echo "not gofmt'ed (run gofmt -w):" >&2
  echo "$unformatted" >&2
  failed=1
fi

echo ">> go vet"
go vet ./... || failed=1

echo ">> licence headers"
hack/boilerplate.sh || failed=1

echo ">> golangci-lint (.golangci.yml)"
bin/golangci-lint run ./... || failed=1

echo ">> go mod tidy"
# hack/tools only pins versions (tools.go imports programs, which go vet
# refuses by design): a tidy go.mod is what there is to check.
for dir in . hack/tools hack/tools/helm hack/tools/lint hack/tools/apiserver-1.34 hack/tools/promtool; do
  if ! (cd "$dir" && go mod tidy -diff >/dev/null); then
    echo "$dir/go.mod or go.sum is not tidy: run 'go mod tidy' in $dir" >&2
    (cd "$dir" && go mod tidy -diff | head -20) >&2 || true
    failed=1
  fi
done

exit $failed
