#!/usr/bin/env bash
# Installs what some tests need beyond Go and the tools in bin/: Debian's
# chromium, for the test that renders the simulator's HTML report. Without
# it that test skips, loudly. Needs root and apt-get; does nothing where
# chromium is already there, and only warns where it cannot install.
set -uo pipefail

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: chromium is not installed and cannot be installed here (needs root and apt-get); the HTML report rendering test will skip" >&2
  exit 0
fi
echo ">> installing chromium for the report rendering test"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends chromium >/tmp/waterline-apt.log 2>&1; then
  apt-get update >>/tmp/waterline-apt.log 2>&1
  if ! apt-get install -y --no-install-recommends chromium >>/tmp/waterline-apt.log 2>&1; then
    echo "note: installing chromium failed (see /tmp/waterline-apt.log); the HTML report rendering test will skip" >&2
  fi
fi
exit 0
