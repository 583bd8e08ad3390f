#!/usr/bin/env bash
# Pins k8s.io/kubernetes at VERSION (e.g. v1.36.3) in the main module and in
# hack/tools, replacing every staging module with its v0.X.Y release.
#
# The list of staging modules is read from kubernetes' own go.mod (its
# "k8s.io/foo => ./staging/src/k8s.io/foo" replace block), so a release that
# adds or drops a staging repository needs no edit here.
set -euo pipefail

if [[ $# -ne 1 || ! "$1" =~ ^v1\.[0-9]+\.[0-9]+$ ]]; then
  echo "usage: $0 v1.MINOR.PATCH   (e.g. $0 v1.36.3)" >&2
  exit 2
fi
version=$1
staging_version="v0.${version#v1.}"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

gomod=$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
if [[ -z "$gomod" || ! -f "$gomod" ]]; then
  echo "could not download the go.mod of k8s.io/kubernetes@${version}" >&2
  exit 1
fi

mapfile -t staging < <(sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\) => \./staging/src/k8s\.io/[a-z0-9-]*$#\1#p' "$gomod" | sort -u)
if [[ ${#staging[@]} -eq 0 ]]; then
  echo "no staging replace lines found in $gomod" >&2
  exit 1
fi
echo "k8s.io/kubernetes ${version}: ${#staging[@]} staging modules at ${staging_version}"

for dir in "$root" "$root/hack/tools"; do
  args=(-require="k8s.io/kubernetes@${version}")
  # Drop replaces of staging modules that no longer exist, then add the current ones.
  while read -r old; do
    [[ -n "$old" ]] && args+=(-dropreplace="$old")
  done < <(cd "$dir" && go mod edit -json | sed -n 's#^[[:space:]]*"Path": "\(k8s\.io/[a-z0-9-]*\)"$#\1#p' | sort -u)
  for m in "${staging[@]}"; do
    args+=(-replace="${m}=${m}@${staging_version}")
  done
  (cd "$dir" && go mod edit "${args[@]}" && go mod tidy)
  echo "updated ${dir#"$root"/}/go.mod"
done
