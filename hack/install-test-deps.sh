#!/usr/bin/env bash
# Installs what some tests need beyond Go and the tools in bin/, from
# Debian's packages where root may:
#   chromium                       the test that renders the simulator's HTML report
#   containerd runc busybox-static the real node of test/e2e and make local-up
#                                  (kubelet itself comes from make tools)
# Without them those tests skip, loudly, saying what is missing. Does
# nothing for what is already there, and only warns where it cannot
# install (not root, no apt-get).
set -uo pipefail

want=()
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || want+=(chromium)
command -v containerd >/dev/null 2>&1 && command -v ctr >/dev/null 2>&1 || want+=(containerd)
command -v runc >/dev/null 2>&1 || want+=(runc)
[[ -x /bin/busybox ]] && /bin/busybox --list >/dev/null 2>&1 || want+=(busybox-static)
[[ ${#want[@]} -gt 0 ]] || exit 0

why() {
  for p in "$@"; do
    case "$p" in
      chromium) echo "  - chromium: the HTML report rendering test will skip" ;;
      containerd|runc|busybox-static) echo "  - $p: the real-node tests (test/e2e) will skip and make local-up runs kwok nodes only" ;;
    esac
  done
}

if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  {
    echo "**************************************************************************"
    echo "note: cannot install ${want[*]} here (needs root and apt-get):"
    why "${want[@]}"
    echo "**************************************************************************"
  } >&2
  exit 0
fi
echo ">> installing ${want[*]} for the tests"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y --no-install-recommends "${want[@]}" >/tmp/waterline-apt.log 2>&1; then
  apt-get update >>/tmp/waterline-apt.log 2>&1
  if ! apt-get install -y --no-install-recommends "${want[@]}" >>/tmp/waterline-apt.log 2>&1; then
    {
      echo "**************************************************************************"
      echo "note: installing ${want[*]} failed (see /tmp/waterline-apt.log):"
      why "${want[@]}"
      echo "**************************************************************************"
    } >&2
  fi
fi
exit 0
