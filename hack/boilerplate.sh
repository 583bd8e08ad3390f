#!/usr/bin/env bash
# Checks (default) or adds (--fix) the licence header of hack/boilerplate.go.txt
# at the top of every Go file in the tree, build tags and generated files
# included. A file passes when its first comment block, after any //go:build
# line, is the header.
#
# Usage: hack/boilerplate.sh [--fix]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
header_file=hack/boilerplate.go.txt
fix=false
[[ "${1:-}" == --fix ]] && fix=true

# The header without its year-free wording changes: match the copyright and
# licence lines, so a generator that reflows blank lines still passes.
has_header() {
  head -n 20 "$1" | grep -q 'Copyright The Waterline Authors\.' &&
    head -n 20 "$1" | grep -q 'Licensed under the Apache License, Version 2.0'
}

missing=()
while IFS= read -r f; do
  has_header "$f" || missing+=("$f")
done < <(git ls-files --cached --others --exclude-standard '*.go')

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if ! $fix; then
  echo "missing the licence header of $header_file (run hack/boilerplate.sh --fix):" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
header=$(cat "$header_file") # without its trailing blank lines
for f in "${missing[@]}"; do
  tmp=$(mktemp)
  if head -n 1 "$f" | grep -q '^//go:build'; then
    # Keep the build constraint first: it must precede everything but comments
    # and blank lines, and gofmt keeps it on top.
    { head -n 1 "$f"; echo; printf '%s\n\n' "$header"; tail -n +2 "$f" | sed '1{/^$/d}'; } > "$tmp"
  else
    { printf '%s\n\n' "$header"; cat "$f"; } > "$tmp"
  fi
  mv "$tmp" "$f"
  echo "added the header to $f"
done
