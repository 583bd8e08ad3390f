#!/usr/bin/env bash
# Regenerates the fixture trees in this directory: one node with three pods
# (Guaranteed, Burstable, BestEffort) as kubelet lays them out on cgroup v1
# and v2 with the cgroupfs and systemd drivers, plus the node's /proc files.
#
# The paths are spelled out here, independently of pkg/agent/cgroups, so the
# tests check the layout code against what kubelet really creates rather
# than against itself. Values are chosen for hand arithmetic; see README.md.
#
# Usage: ./generate.sh   (from this directory; rewrites v1-*/ v2-*/)
set -euo pipefail
cd "$(dirname "$0")"

MiB=1048576
G=6d0a1c62-0c5e-4d1c-9f2e-1a2b3c4d5e01   # Guaranteed
B=9b4e7f10-2d3c-4e5f-8a9b-0c1d2e3f4a02   # Burstable
E=c3d2e1f0-a9b8-4c7d-8e6f-5a4b3c2d1e03   # BestEffort
id() { printf '%s' "$1" | sha256sum | cut -c1-64; }

# memory.stat bodies; only (total_)inactive_file matters to the agent.
v1stat() { # usage inactive
  cat <<STAT
cache $(( $2 + 4096000 ))
rss $(( $1 - $2 ))
rss_huge 0
shmem 0
mapped_file 7577600
dirty 0
writeback 0
swap 0
pgpgin 37866
pgpgout 32129
pgfault 39026
pgmajfault 0
inactive_anon 0
active_anon 1531904
inactive_file 294912
active_file 4960256
unevictable 0
hierarchical_memory_limit 9223372036854771712
hierarchical_memsw_limit 9223372036854771712
total_cache $(( $2 + 4096000 ))
total_rss $(( $1 - $2 ))
total_rss_huge 0
total_shmem 0
total_mapped_file 49500160
total_dirty 0
total_writeback 0
total_swap 0
total_pgpgin 38947898
total_pgpgout 38512978
total_pgfault 42013214
total_pgmajfault 2779
total_inactive_anon 0
total_active_anon $(( $1 - $2 ))
total_inactive_file $2
total_active_file 4096000
total_unevictable 0
STAT
}
v2stat() { # usage inactive
  cat <<STAT
anon $(( $1 - $2 ))
file $2
kernel 1048576
kernel_stack 98304
pagetables 262144
sec_pagetables 0
percpu 0
sock 0
vmalloc 0
shmem 0
file_mapped 0
file_dirty 0
file_writeback 0
swapcached 0
anon_thp 0
file_thp 0
shmem_thp 0
inactive_anon 0
active_anon $(( $1 - $2 ))
inactive_file $2
active_file 0
unevictable 0
slab_reclaimable 0
slab_unreclaimable 0
slab 0
workingset_refault_anon 0
workingset_refault_file 0
pgscan 0
pgsteal 0
pgfault 12345
pgmajfault 0
STAT
}

# cg TREE VERSION CGROUP CPU_NS MEM_USAGE INACTIVE QUOTA SHARES MEMLIMIT
cg() {
  local t=$1 v=$2 c=$3 cpu=$4 mem=$5 inact=$6 quota=$7 shares=$8 limit=$9
  if [[ $v == v1 ]]; then
    mkdir -p "$t/cpu/$c" "$t/cpuacct/$c" "$t/memory/$c"
    echo "$cpu" >"$t/cpuacct/$c/cpuacct.usage"
    echo "$quota" >"$t/cpu/$c/cpu.cfs_quota_us"
    echo 100000 >"$t/cpu/$c/cpu.cfs_period_us"
    echo "$shares" >"$t/cpu/$c/cpu.shares"
    : >"$t/cpu/$c/tasks"
    echo "$mem" >"$t/memory/$c/memory.usage_in_bytes"
    v1stat "$mem" "$inact" >"$t/memory/$c/memory.stat"
    if [[ $limit == max ]]; then limit=9223372036854771712; fi
    echo "$limit" >"$t/memory/$c/memory.limit_in_bytes"
  else
    mkdir -p "$t/$c"
    printf 'usage_usec %d\nuser_usec %d\nsystem_usec %d\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n' \
      $((cpu / 1000)) $((cpu / 1000 * 3 / 4)) $((cpu / 1000 - cpu / 1000 * 3 / 4)) >"$t/$c/cpu.stat"
    if [[ $quota == -1 ]]; then quota=max; fi
    echo "$quota 100000" >"$t/$c/cpu.max"
    # kubelet's shares → weight (2→1, 512→59, 1024→100).
    case $shares in 2) w=1 ;; 512) w=59 ;; 1024) w=100 ;; *) w=100 ;; esac
    echo "$w" >"$t/$c/cpu.weight"
    echo "$mem" >"$t/$c/memory.current"
    v2stat "$mem" "$inact" >"$t/$c/memory.stat"
    echo "$limit" >"$t/$c/memory.max"
    : >"$t/$c/cgroup.procs"
  fi
}

# tree NAME VERSION DRIVER RUNTIME
tree() {
  local t=$1 v=$2 d=$3 rt=$4
  rm -rf "$t"
  mkdir -p "$t/proc" "$t/cgroup"
  # Node: 155000 busy jiffies (user 93000, system 46500, softirq 15500),
  # 800000 idle; 16 GiB total, 12 GiB available → 4 GiB used.
  cat >"$t/proc/stat" <<STAT
cpu  93000 0 46500 800000 0 0 15500 0 0 0
cpu0 46500 0 23250 400000 0 0 7750 0 0 0
cpu1 46500 0 23250 400000 0 0 7750 0 0 0
intr 1234567 0 9 0 0 0 0 0 0 0 0
ctxt 987654321
btime 1700000000
processes 123456
procs_running 3
procs_blocked 0
softirq 2345678 0 1 2 3 4 5 6 7 8 9
STAT
  cat >"$t/proc/meminfo" <<MEM
MemTotal:       16777216 kB
MemFree:         8388608 kB
MemAvailable:   12582912 kB
Buffers:           45452 kB
Cached:          3359236 kB
SwapTotal:             0 kB
SwapFree:              0 kB
MEM
  local root=$t/cgroup
  if [[ $v == v2 ]]; then echo "cpuset cpu io memory hugetlb pids rdma misc" >"$root/cgroup.controllers"; fi

  local kp bu be pg pb pe
  if [[ $d == cgroupfs ]]; then
    kp=kubepods bu=kubepods/burstable be=kubepods/besteffort
    pg=$kp/pod$G pb=$bu/pod$B pe=$be/pod$E
  else
    kp=kubepods.slice bu=$kp/kubepods-burstable.slice be=$kp/kubepods-besteffort.slice
    pg=$kp/kubepods-pod${G//-/_}.slice
    pb=$bu/kubepods-burstable-pod${B//-/_}.slice
    pe=$be/kubepods-besteffort-pod${E//-/_}.slice
  fi
  ctr() { # container cgroup name for a container ID
    case $d/$rt in
      cgroupfs/*) echo "$1" ;;
      systemd/containerd) echo "cri-containerd-$1.scope" ;;
      systemd/crio) echo "crio-$1.scope" ;;
    esac
  }

  # QoS-level cgroups (not read by the collector, present on every node).
  cg "$root" "$v" "$kp" 900000000000 $((4000 * MiB)) $((600 * MiB)) -1 2048 max
  cg "$root" "$v" "$bu" 400000000000 $((2000 * MiB)) $((300 * MiB)) -1 1024 max
  cg "$root" "$v" "$be" 100000000000 $((500 * MiB)) $((100 * MiB)) -1 2 max

  # Guaranteed pod, 1 CPU / 1 GiB: working set 600 − 100 = 500 MiB.
  cg "$root" "$v" "$pg" 100000000000 $((600 * MiB)) $((100 * MiB)) 100000 1024 $((1024 * MiB))
  cg "$root" "$v" "$pg/$(ctr "$(id g-sandbox)")" 1000000000 $((1 * MiB)) 0 -1 2 max
  cg "$root" "$v" "$pg/$(ctr "$(id g-app)")" 99000000000 $((599 * MiB)) $((100 * MiB)) 100000 1024 $((1024 * MiB))
  # Burstable pod: working set 1200 − 200 = 1000 MiB.
  cg "$root" "$v" "$pb" 200000000000 $((1200 * MiB)) $((200 * MiB)) 200000 512 max
  cg "$root" "$v" "$pb/$(ctr "$(id b-sandbox)")" 1000000000 $((1 * MiB)) 0 -1 2 max
  cg "$root" "$v" "$pb/$(ctr "$(id b-web)")" 150000000000 $((899 * MiB)) $((150 * MiB)) 150000 512 max
  cg "$root" "$v" "$pb/$(ctr "$(id b-sidecar)")" 49000000000 $((300 * MiB)) $((50 * MiB)) 50000 512 max
  if [[ $rt == crio ]]; then
    # CRI-O's per-container monitor: counted in the pod, not a container.
    cg "$root" "$v" "$pb/crio-conmon-$(id b-web).scope" 0 $((1 * MiB)) 0 -1 2 max
  fi
  # BestEffort pod: working set 300 − 50 = 250 MiB.
  cg "$root" "$v" "$pe" 50000000000 $((300 * MiB)) $((50 * MiB)) -1 2 max
  cg "$root" "$v" "$pe/$(ctr "$(id e-sandbox)")" 1000000000 $((1 * MiB)) 0 -1 2 max
  cg "$root" "$v" "$pe/$(ctr "$(id e-job)")" 49000000000 $((299 * MiB)) $((50 * MiB)) -1 2 max
}

tree v1-cgroupfs v1 cgroupfs containerd
tree v1-systemd v1 systemd containerd
tree v2-cgroupfs v2 cgroupfs containerd
tree v2-systemd v2 systemd crio
