#!/usr/bin/env bash
# Lints and renders charts/waterline with its defaults, with the largest and
# the smallest values it admits, and checks that values.schema.json refuses
# bad values naming the field. helm comes from bin/ (hack/build-tools.sh helm).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
helm="$root/bin/helm"
chart="$root/charts/waterline"
[[ -x "$helm" ]] || { echo "$helm missing: run hack/build-tools.sh helm" >&2; exit 1; }
failed=0
cases="$chart/ci"

"$helm" lint --strict "$chart" >/dev/null || { "$helm" lint --strict "$chart" >&2; failed=1; }
for values in "$cases"/*-values.yaml; do
  if ! out=$("$helm" lint --strict "$chart" -f "$values" 2>&1); then
    echo "helm lint with $(basename "$values") failed:" >&2; echo "$out" >&2; failed=1
  fi
  if ! out=$("$helm" template waterline "$chart" -n waterline-system -f "$values" 2>&1 >/dev/null); then
    echo "helm template with $(basename "$values") failed:" >&2; echo "$out" >&2; failed=1
  fi
done
# Each bad-*.yaml starts with "# want: <text the error must contain>".
for values in "$cases"/bad/*.yaml; do
  want=$(sed -n 's/^# want: //p' "$values" | head -1)
  if out=$("$helm" template waterline "$chart" -n waterline-system -f "$values" 2>&1); then
    echo "helm template accepted $(basename "$values"); want an error containing: $want" >&2; failed=1
  elif [[ "$out" != *"$want"* ]]; then
    echo "helm template refused $(basename "$values") without naming '$want':" >&2; echo "$out" >&2; failed=1
  fi
done
exit $failed
