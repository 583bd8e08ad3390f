#!/usr/bin/env bash
# Runs a real Kubernetes control plane on loopback for trying Waterline:
# etcd, kube-apiserver, kube-controller-manager, kwok with fake nodes, the
# waterline.dev CRDs, and Waterline's components as they exist. Prints a
# kubeconfig; Ctrl-C (or SIGTERM) stops everything it started.
#
# Settings (environment):
#   NODES=20                      fake nodes to create
#   NODE_CPU=32 NODE_MEMORY=128Gi capacity of each fake node
#   LOCAL_UP_DIR=_output/local-up state, certificates, logs, kubeconfig;
#                                 one cluster per directory ($LOCAL_UP_DIR.lock),
#                                 and what a killed run left in it (processes,
#                                 mounts, cgroups) is swept at the next start
#   ETCD_PORT=2379 APISERVER_PORT=6443  loopback ports
#   WATERLINE_COMPONENTS="scheduler manager agent kwok-agent"
#                                       Waterline components to run ("" for
#                                       a bare cluster with the chart's
#                                       PriorityClasses, NodeQOS and policy)
#   KWOK_CPU_FACTOR=0.6 KWOK_MEMORY_FACTOR=0.8  kwok-agent's usage model:
#                                       a kwok pod uses its requests × these,
#   KWOK_PROD_CPU_FACTOR=0.3 KWOK_PROD_MEMORY_FACTOR=0.5  a Prod pod × these
#                                       (sized for its peak), swinging over
#                                       a 10-minute day; the agent's
#                                       predictor finds the Prod peak and
#                                       the manager sells Mid from it
#   PREEMPTION=enabled                  "disabled" runs the scheduler without
#                                       preemption (audit before enabling it)
#   REAL_NODE=auto                      "auto": one real node (containerd +
#                                       kubelet on this machine) when root
#                                       and containerd/runc/busybox-static
#                                       are there; "no": kwok nodes only
# Waterline is installed with helm from charts/waterline (localCluster
# values): with a real node the manager and the agent run as its pods (the
# agent as the DaemonSet, on the real node only); without one the manager
# runs as a process with the chart's flags and webhook configurations.
# waterline-scheduler runs as a process (it also serves the default
# profile: no kube-scheduler here), kwok-agent as a process reporting a
# simulated NodeMetric for every kwok node.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin="$root/bin"
NODES=${NODES:-20}
NODE_CPU=${NODE_CPU:-32}
NODE_MEMORY=${NODE_MEMORY:-128Gi}
LOCAL_UP_DIR=${LOCAL_UP_DIR:-$root/_output/local-up}
ETCD_PORT=${ETCD_PORT:-2379}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-$((ETCD_PORT + 1))}
APISERVER_PORT=${APISERVER_PORT:-6443}
KCM_PORT=${KCM_PORT:-$((APISERVER_PORT + 3811))}
SCHEDULER_PORT=${SCHEDULER_PORT:-$((APISERVER_PORT + 3813))}
REAL_NODE=${REAL_NODE:-auto}
WEBHOOK_PORT=${WEBHOOK_PORT:-$((APISERVER_PORT + 3000))}
MANAGER_PROBE_PORT=${MANAGER_PROBE_PORT:-$((APISERVER_PORT + 3001))}
MANAGER_METRICS_PORT=${MANAGER_METRICS_PORT:-$((APISERVER_PORT + 3004))}
KUBELET_PORT=${KUBELET_PORT:-$((APISERVER_PORT + 3002))}
KUBELET_HEALTHZ_PORT=${KUBELET_HEALTHZ_PORT:-$((APISERVER_PORT + 3003))}
AGENT_HEALTH_PORT=${AGENT_HEALTH_PORT:-9320}
AGENT_METRICS_PORT=${AGENT_METRICS_PORT:-9321}
PREEMPTION=${PREEMPTION:-enabled}
KWOK_CPU_FACTOR=${KWOK_CPU_FACTOR:-0.6}
KWOK_MEMORY_FACTOR=${KWOK_MEMORY_FACTOR:-0.8}
KWOK_PROD_CPU_FACTOR=${KWOK_PROD_CPU_FACTOR:-0.3}
KWOK_PROD_MEMORY_FACTOR=${KWOK_PROD_MEMORY_FACTOR:-0.5}

# real_node_unsupported prints why this machine cannot run the real node.
real_node_unsupported() {
  [[ $(id -u) -eq 0 ]] || { echo "not root (kubelet and containerd manage cgroups and mounts)"; return; }
  local b
  for b in containerd ctr runc containerd-shim-runc-v2; do
    command -v "$b" >/dev/null 2>&1 || { echo "$b is not installed (make test-deps installs containerd and runc where root may)"; return; }
  done
  [[ -x /bin/busybox ]] || { echo "/bin/busybox is missing (apt-get install busybox-static)"; return; }
  [[ -e "$bin/kubelet" ]] || { echo "$bin/kubelet is missing (make tools)"; return; }
}
real_node=""
case "$REAL_NODE" in
  auto) why_no_real_node=$(real_node_unsupported)
        if [[ -z "$why_no_real_node" ]]; then real_node=yes; fi ;;
  no) why_no_real_node="REAL_NODE=no" ;;
  *) echo "REAL_NODE=$REAL_NODE: want auto or no" >&2; exit 2 ;;
esac
if [[ -n "$real_node" ]]; then
  WATERLINE_COMPONENTS=${WATERLINE_COMPONENTS-scheduler manager agent kwok-agent}
else
  WATERLINE_COMPONENTS=${WATERLINE_COMPONENTS-scheduler manager kwok-agent}
fi
case "$PREEMPTION" in
  enabled) scheduler_config="$root/config/scheduler/local-up.yaml" ;;
  disabled) scheduler_config="$root/config/scheduler/local-up-preemption-disabled.yaml" ;;
  *) echo "PREEMPTION=$PREEMPTION: want enabled or disabled" >&2; exit 2 ;;
esac

if ! [[ "$NODES" =~ ^[0-9]+$ ]]; then
  echo "NODES=$NODES: want a whole number" >&2
  exit 2
fi
for tool in etcd kube-apiserver kube-controller-manager kubectl kwok kwok-stages.yaml helm; do
  if [[ ! -e "$bin/$tool" ]]; then
    echo "$bin/$tool is missing: run 'make tools' first" >&2
    exit 1
  fi
done
command -v openssl >/dev/null || { echo "openssl is needed to make the cluster's certificates" >&2; exit 1; }

dir=$(mkdir -p "$LOCAL_UP_DIR" && cd "$LOCAL_UP_DIR" && pwd)
pki="$dir/pki"
kubeconfig="$dir/kubeconfig"
pids=()

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*"; }

# The real node: containerd with its own config, root, state and socket
# under $dir/node, and kubelet registered as "real-node" with its pods'
# cgroups under a cgroup root of its own, named after $dir so that two
# local clusters never share one.
node_dir="$dir/node"
node_sock="$node_dir/containerd.sock"
node_cgroup_root=/waterline-local-up-$(printf '%s' "$dir" | cksum | cut -d' ' -f1)

# One local cluster per directory: the lock is held as long as this script
# (and nothing it starts: start() closes it for its children) runs. A
# previous run killed with SIGKILL leaves its processes, mounts and cgroups
# behind but not its lock: sweep_previous_run cleans them up.
exec 9>"$dir.lock"
if ! flock -n 9; then
  echo "another local-up runs with LOCAL_UP_DIR=$dir (it holds $dir.lock)" >&2
  exit 1
fi

# mounts_under lists the mount points at or under $1, deepest first, from
# mountinfo (whose octal escapes of spaces and backslashes it undoes). The
# path travels in the environment: a process naming $1 on its command line
# would count as one of the cluster's.
mounts_under() {
  case "$1" in /?*/?*) ;; *) echo "mounts_under: refusing the path '$1'" >&2; return 1 ;; esac
  D="$1" awk '{
    m = $5; gsub(/\\040/, " ", m); gsub(/\\134/, "\\", m)
    d = ENVIRON["D"]
    if (d != "" && (m == d || index(m, d "/") == 1)) { n = gsub(/\//, "/", m); print n "\t" m }
  }' /proc/self/mountinfo | sort -rn -k1,1 | cut -f2-
}

# unmount_under unmounts everything at or under $1, deepest first: each
# mount normally and, only when busy, lazily. Rounds repeat while mounts
# are left (kubelet binds its root directory onto itself, so paths stack).
unmount_under() {
  local m round ms
  for round in 1 2 3 4 5 6 7 8 9 10; do
    mapfile -t ms < <(mounts_under "$1")
    [[ ${#ms[@]} -gt 0 ]] || return 0
    for m in "${ms[@]}"; do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
  done
  [[ -z "$(mounts_under "$1")" ]]
}

# cluster_pids lists the processes of the local cluster whose command line
# names a path under $1 (default $dir: etcd, the API server, kubelet,
# containerd and its shims, which name its socket, ...) and those in the
# real node's cgroups (the pods'). The path reaches awk through its
# environment, so the listing never lists itself. It refuses a path that is
# not absolute and at least two levels deep: with an empty or short one
# every process of the machine would match.
cluster_pids() {
  local prefix="${1:-$dir}"
  case "$prefix" in
    /?*/?*) ;;
    *) echo "cluster_pids: refusing to match processes by the path '$prefix'" >&2; return 1 ;;
  esac
  local cgs=()
  if [[ "$node_cgroup_root" == /waterline-local-up-?* ]]; then
    cgs=(/sys/fs/cgroup/*/"${node_cgroup_root#/}")
  fi
  {
    # This script's own subshells share its command line: never them.
    ps -ww -eo pid=,args= | D="${prefix%/}/" SELF="$(tr '\0' ' ' </proc/$$/cmdline)" awk '
      { args = $0; sub(/^ *[0-9]+ /, "", args) }
      length(ENVIRON["D"]) > 2 && index(args, ENVIRON["D"]) > 0 && args " " != ENVIRON["SELF"] { print $1 }'
    if [[ ${#cgs[@]} -gt 0 && -d "${cgs[0]}" ]]; then
      find "${cgs[@]}" -name cgroup.procs -exec cat {} + 2>/dev/null
    fi
  } | sort -un | awk -v self="$$" '$1 > 1 && $1 != self { print $1 }'
}

# kill_cluster_processes SIGKILLs cluster_pids $1 until none is left (a
# shell in a pod may fork between two rounds).
kill_cluster_processes() {
  local round p ps_
  for round in $(seq 1 50); do
    mapfile -t ps_ < <(cluster_pids "$@")
    [[ ${#ps_[@]} -gt 0 ]] || return 0
    # A local cluster is a few dozen processes: a list of hundreds is a
    # bug in the matching, not a cluster to kill.
    if [[ ${#ps_[@]} -gt 150 ]]; then
      echo "refusing to kill ${#ps_[@]} processes as the local cluster's (in ${1:-$dir}): that is most of the machine" >&2
      return 1
    fi
    for p in "${ps_[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    sleep 0.1
  done
  echo "processes of the local cluster in ${1:-$dir} survive SIGKILL: $(cluster_pids "$@" | tr '\n' ' ')" >&2
  return 1
}

# remove_node_cgroups removes the real node's cgroups, children first.
remove_node_cgroups() {
  find /sys/fs/cgroup/*/"${node_cgroup_root#/}" -depth -type d -exec rmdir {} + 2>/dev/null || true
  ! compgen -G "/sys/fs/cgroup/*/${node_cgroup_root#/}" >/dev/null
}

# sweep_previous_run cleans up what an earlier local-up in $dir left when
# it was killed without its Ctrl-C cleanup: its processes, the real node's
# mounts and cgroups, and then the directory.
sweep_previous_run() {
  [[ -n "$(ls -A "$dir" 2>/dev/null)" ]] || return 0
  local n
  n=$(cluster_pids | wc -l)
  if [[ "$n" -gt 0 || -n "$(mounts_under "$dir")" ]]; then
    log "Sweeping what an earlier local-up in $dir left: $n processes, $(mounts_under "$dir" | wc -l) mounts"
  fi
  kill_cluster_processes || exit 1
  unmount_under "$dir" || { echo "cannot unmount what is mounted under $dir: $(mounts_under "$dir" | tr '\n' ' ')" >&2; exit 1; }
  remove_node_cgroups || echo "warning: cgroups under $node_cgroup_root are left" >&2
  # Nothing is mounted under $dir any more: removing it cannot reach into
  # another filesystem.
  find "$dir" -mindepth 1 -delete
}
sweep_previous_run
mkdir -p "$dir/pki" "$dir/logs" "$dir/etcd"

# stop_all stops what this script started, newest first (clients before the
# API server, the API server before etcd), each with SIGTERM and, after 10 s,
# SIGKILL. A failing step must not end the cleanup.
stop_all() {
  trap - INT TERM EXIT
  set +e +o pipefail
  [[ -z "$real_node" ]] || stop_real_node
  local i p
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[$i]}
    kill -TERM "$p" 2>/dev/null || continue
    for _ in $(seq 1 50); do
      kill -0 "$p" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -f "$dir/pids" "$dir/ready"
  [[ ${#pids[@]} -eq 0 ]] || log "Stopped"
}
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM
trap 'stop_all; exit 129' HUP
trap stop_all EXIT

# start runs a process of the cluster in its own session: Ctrl-C reaches
# this script alone, whose trap stops them newest first (in the terminal's
# process group each would take the SIGINT at once, in no order).
start() { # name binary args...
  local name=$1; shift
  setsid "$@" 9>&- >"$dir/logs/$name.log" 2>&1 &
  pids+=("$!")
  echo "$! $name" >>"$dir/pids"
}

# wait_for polls command until it succeeds. When what names a process
# that start ran, the wait ends as soon as that process exits; either way a
# failure prints the tail of its log, so a run that keeps no directory (a
# test's) still says why.
wait_for() { # what seconds command...
  local what=$1 secs=$2; shift 2
  local pid log="$dir/logs/$what.log" started=$SECONDS
  pid=$(awk -v n="$what" '$2 == n {p = $1} END {print p}' "$dir/pids" 2>/dev/null)
  while ((SECONDS - started < secs)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    if [[ -n "$pid" ]] && ! kill -0 "$pid" 2>/dev/null; then
      echo "$what exited after $((SECONDS - started))s before it came up; the end of $log:" >&2
      tail -n 30 "$log" >&2
      exit 1
    fi
    sleep 0.2
  done
  echo "$what did not come up within ${secs}s; see $dir/logs" >&2
  if [[ -f "$log" ]]; then
    echo "the end of $log:" >&2
    tail -n 30 "$log" >&2
  fi
  exit 1
}

make_pki() {
  log "Making certificates in $pki"
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=waterline-local-ca" \
      -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" -keyout apiserver.key -out apiserver.csr 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n' >apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
      -extfile apiserver.ext -out apiserver.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=waterline-admin" -keyout admin.key -out admin.csr 2>/dev/null
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -out admin.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
  "$bin/kubectl" config --kubeconfig "$kubeconfig" set-cluster local \
    --server "https://127.0.0.1:$APISERVER_PORT" --certificate-authority "$pki/ca.crt" --embed-certs >/dev/null
  "$bin/kubectl" config --kubeconfig "$kubeconfig" set-credentials admin \
    --client-certificate "$pki/admin.crt" --client-key "$pki/admin.key" --embed-certs >/dev/null
  "$bin/kubectl" config --kubeconfig "$kubeconfig" set-context local --cluster local --user admin >/dev/null
  "$bin/kubectl" config --kubeconfig "$kubeconfig" use-context local >/dev/null
}

kubectl() { "$bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }

start_etcd() {
  log "Starting etcd on 127.0.0.1:$ETCD_PORT"
  start etcd "$bin/etcd" --data-dir "$dir/etcd" --name local \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster "local=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync
  wait_for etcd 30 curl -fsS -m 5 "http://127.0.0.1:$ETCD_PORT/health"
}

start_apiserver() {
  log "Starting kube-apiserver on https://127.0.0.1:$APISERVER_PORT"
  start kube-apiserver "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc \
    --service-cluster-ip-range 10.0.0.0/24 \
    --authorization-mode Node,RBAC --allow-privileged \
    --enable-priority-and-fairness=false
  wait_for kube-apiserver 60 kubectl --request-timeout 5s get --raw /readyz
}

start_controller_manager() {
  log "Starting kube-controller-manager"
  start kube-controller-manager "$bin/kube-controller-manager" \
    --kubeconfig "$kubeconfig" --authentication-kubeconfig "$kubeconfig" --authorization-kubeconfig "$kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port "$KCM_PORT" \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --use-service-account-credentials=false \
    --controllers '*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-node-route-controller'
  wait_for "default service account" 60 kubectl --request-timeout 5s get serviceaccount default -n default
}

start_kwok() {
  log "Starting kwok"
  start kwok "$bin/kwok" --kubeconfig "$kubeconfig" --config "$bin/kwok-stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --node-lease-duration-seconds 40 --cidr 10.128.0.0/12
}

create_nodes() {
  [[ "$NODES" -gt 0 ]] || return 0
  log "Creating $NODES fake nodes ($NODE_CPU CPU, $NODE_MEMORY memory each)"
  local f="$dir/nodes.yaml"
  : >"$f"
  for i in $(seq 0 $((NODES - 1))); do
    cat >>"$f" <<NODE
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    type: kwok
status:
  allocatable: {cpu: "$NODE_CPU", memory: "$NODE_MEMORY", pods: "110"}
  capacity: {cpu: "$NODE_CPU", memory: "$NODE_MEMORY", pods: "110"}
NODE
  done
  kubectl apply -f "$f" >/dev/null
  wait_for "$NODES Ready nodes" 120 bash -c \
    "[[ \$('$bin/kubectl' --kubeconfig '$kubeconfig' --request-timeout 5s get nodes -l type=kwok --no-headers 2>/dev/null | grep -cw Ready) -ge $NODES ]]"
}

install_crds() {
  log "Installing the waterline.dev CRDs"
  kubectl apply --server-side -f "$root/config/crd/bases" >/dev/null
  kubectl wait --for condition=Established --timeout 60s -f "$root/config/crd/bases" >/dev/null
}

start_scheduler() {
  [[ -x "$bin/waterline-scheduler" ]] || { echo "$bin/waterline-scheduler is missing: run 'make build'" >&2; exit 1; }
  log "Starting waterline-scheduler (preemption $PREEMPTION)"
  sed -e "s#__KUBECONFIG__#$kubeconfig#" "$scheduler_config" >"$dir/scheduler-config.yaml"
  # No kube-scheduler runs here: waterline-scheduler also serves the
  # default profile, for DaemonSet pods and anything else.
  printf -- '- schedulerName: default-scheduler\n' >>"$dir/scheduler-config.yaml"
  start waterline-scheduler "$bin/waterline-scheduler" --config "$dir/scheduler-config.yaml" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --cert-dir "$dir/scheduler-certs" \
    --authentication-kubeconfig "$kubeconfig" --authorization-kubeconfig "$kubeconfig" --v 2
  wait_for waterline-scheduler 60 curl -fsSk -m 5 "https://127.0.0.1:$SCHEDULER_PORT/healthz"
}

ctr_() { ctr --address "$node_sock" -n k8s.io "$@"; }

start_real_node() {
  log "Starting the real node: containerd and kubelet (state in $node_dir)"
  mkdir -p "$node_dir/root" "$node_dir/state" "$node_dir/cni" "$node_dir/kubelet" "$node_dir/kubelet-certs"
  # A loopback-only CNI config: containerd reports the network ready, and
  # pods run with hostNetwork (there is no pod network here).
  echo '{"cniVersion": "0.4.0", "name": "waterline-no-pod-network", "plugins": [{"type": "loopback"}]}' \
    >"$node_dir/cni/10-loopback.conflist"
  cat >"$node_dir/containerd.toml" <<TOML
version = 2
root = "$node_dir/root"
state = "$node_dir/state"
[grpc]
  address = "$node_sock"
[ttrpc]
  address = "$node_sock.ttrpc"
[debug]
  address = "$node_dir/debug.sock"
[plugins."io.containerd.grpc.v1.cri"]
  # Some VMs do not let a process lower its oom_score_adj: without this
  # every sandbox fails in runc.
  restrict_oom_score_adj = true
  sandbox_image = "local/pause:test"
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$node_dir/cni"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
TOML
  start containerd containerd --config "$node_dir/containerd.toml"
  wait_for containerd 30 ctr_ version
  log "Building and importing the waterline, agent, manager, busybox and pause images"
  (cd "$root" && go run ./hack/image --out "$dir/images" --binaries waterline,waterline-agent,waterline-manager --import "$node_sock") \
    >"$dir/logs/images.log" 2>&1 || { echo "building the images failed; see $dir/logs/images.log" >&2; exit 1; }
  local h d
  for h in /sys/fs/cgroup/*/; do
    [[ -e "$h/cgroup.procs" ]] || continue
    d="$h${node_cgroup_root#/}"
    mkdir -p "$d"
    if [[ -e "$h/cpuset.cpus" ]]; then
      cat "$h/cpuset.cpus" >"$d/cpuset.cpus"
      cat "$h/cpuset.mems" >"$d/cpuset.mems"
    fi
  done
  cat >"$node_dir/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: $node_cgroup_root
containerRuntimeEndpoint: unix://$node_sock
# Local cluster only: nothing but this machine reaches the kubelet.
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
failSwapOn: false
resolvConf: ""
nodeStatusUpdateFrequency: 5s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
YAML
  start kubelet "$bin/kubelet" --kubeconfig "$kubeconfig" --config "$node_dir/kubelet.yaml" \
    --root-dir "$node_dir/kubelet" --cert-dir "$node_dir/kubelet-certs" --hostname-override real-node \
    --node-labels waterline.dev/real-node=true
  wait_for "the real node" 120 bash -c \
    "'$bin/kubectl' --kubeconfig '$kubeconfig' --request-timeout 5s get node real-node --no-headers 2>/dev/null | grep -qw Ready"
}

# stop_real_node stops the node's containers before kubelet and containerd
# go (their shims outlive containerd), then kills whatever of the node is
# left, unmounts and removes what kubelet and containerd left. Ctrl-C
# reaches kubelet and containerd at the same time as this script, so
# containerd may be gone before its containers could be stopped through
# it: their shims and the pods' processes are then killed by name and
# cgroup. Mounts are unmounted only once nothing of the node runs, and
# checked, not assumed, gone.
stop_real_node() {
  local p id
  p=$(awk '$2=="kubelet" {print $1}' "$dir/pids" 2>/dev/null)
  if [[ -n "$p" ]]; then
    kill -TERM "$p" 2>/dev/null
    for _ in $(seq 1 25); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$p" 2>/dev/null
  fi
  if ctr_ version >/dev/null 2>&1; then
    for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 || true; done
    sleep 1
    for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$id" >/dev/null 2>&1 || true; done
    for id in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers delete "$id" >/dev/null 2>&1 || true; done
  fi
  p=$(awk '$2=="containerd" {print $1}' "$dir/pids" 2>/dev/null)
  if [[ -n "$p" ]]; then
    kill -TERM "$p" 2>/dev/null
    for _ in $(seq 1 25); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
  fi
  # The shims serving this containerd (its socket is on their command
  # line) and the pods' processes, by cgroup.
  kill_cluster_processes "$node_dir"
  unmount_under "$node_dir" || echo "warning: still mounted under $node_dir: $(mounts_under "$node_dir" | tr '\n' ' ')" >&2
  remove_node_cgroups || echo "warning: cgroups under $node_cgroup_root are left" >&2
}

# The chart's values for this cluster: localCluster (webhooks and probes on
# 127.0.0.1, the API server on loopback: no kube-proxy here), the images
# imported into the real node, the manager, the agent and helm test's Pod
# on the real node only (kwok would fake-run them), and a default NodeQOS and
# ColocationPolicy that act (not the chart's dry run).
chart_values() { # manager-enabled agent-enabled
  cat <<YAML
localCluster: {enabled: true, apiServer: {host: 127.0.0.1, port: $APISERVER_PORT}}
image: {registry: "", tag: latest, pullPolicy: Never}
manager:
  enabled: $1
  replicas: 1
  leaderElection: {enabled: false}
  ports: {webhook: $WEBHOOK_PORT, metrics: $MANAGER_METRICS_PORT, health: $MANAGER_PROBE_PORT}
  nodeSelector: {waterline.dev/real-node: "true"}
  uninstallHook: {nodeSelector: {waterline.dev/real-node: "true"}}
scheduler: {enabled: false}
agent:
  enabled: $2
  ports: {health: $AGENT_HEALTH_PORT, metrics: $AGENT_METRICS_PORT}
  stateDir: $node_dir/agent-state
  kubeletCgroupRoot: $node_cgroup_root
  nodeSelector: {waterline.dev/real-node: "true"}
  uninstallHook: {nodeSelector: {waterline.dev/real-node: "true"}}
tests: {nodeSelector: {waterline.dev/real-node: "true"}}
nodeQOS:
  spec:
    dryRun: false
    cpu: {forbidSchedulingPercent: 70, throttlePercent: 80, restorePercent: 70, evictPercent: 90}
    memory: {forbidSchedulingPercent: 85, evictPercent: 90}
colocationPolicy:
  spec:
    tiers: {enabled: true}
    collectPolicy: {aggregateDurationSeconds: 30, reportIntervalSeconds: 10}
    # The kwok nodes live a day in 10 minutes: a minute of history stands
    # in for an hour, and the predictor forgets at that pace too (the
    # schema's shortest half-life), so Mid appears on a node a few minutes
    # after its Prod pods start, not hours.
    predictPolicy: {coldStartSeconds: 60, halfLifeSeconds: 60}
    profiles:
    - name: batch-jobs
      namespaceSelector: {matchLabels: {waterline.dev/colocation: batch}}
      band: batch
      priorityClassName: waterline-batch
      schedulerName: waterline-scheduler
YAML
}

helm_() { "$bin/helm" --kubeconfig "$kubeconfig" "$@"; }

# install_waterline installs charts/waterline: PriorityClasses, RBAC, the
# default NodeQOS and ColocationPolicy, and with a real node the manager
# and the agent as its pods. The CRDs are in already (install_crds).
install_waterline() {
  local manager=false agent=false
  if [[ -n "$real_node" ]]; then
    [[ " $WATERLINE_COMPONENTS " == *" manager "* ]] && manager=true
    [[ " $WATERLINE_COMPONENTS " == *" agent "* ]] && agent=true
  fi
  chart_values "$manager" "$agent" >"$dir/values.yaml"
  log "helm install waterline charts/waterline -n waterline-system -f $dir/values.yaml (manager pod: $manager, agent DaemonSet: $agent)"
  helm_ install waterline "$root/charts/waterline" -n waterline-system --create-namespace --skip-crds \
    -f "$dir/values.yaml" >"$dir/logs/helm-install.log" 2>&1 \
    || { cat "$dir/logs/helm-install.log" >&2; exit 1; }
  if [[ "$manager" == true ]]; then
    wait_for "the manager pod" 180 curl -fsS -m 5 "http://127.0.0.1:$MANAGER_PROBE_PORT/readyz"
  fi
  if [[ "$agent" == true ]]; then
    wait_for "the agent's NodeMetric" 180 bash -c \
      "'$bin/kubectl' --kubeconfig '$kubeconfig' --request-timeout 5s get nodemetric real-node -o jsonpath='{.status.updateTime}' 2>/dev/null | grep -q ."
    # Up means what waterline check calls ready: the DaemonSet's status
    # counts the agent ready (the controller's update lags the pod's).
    wait_for "the agent DaemonSet" 120 kubectl -n waterline-system rollout status daemonset/waterline-agent --timeout 5s
  fi
}

# start_manager_process runs waterline-manager as a process (no real node
# to run its pod), with the flags of the chart's Deployment and the chart's
# webhook configurations.
start_manager_process() {
  [[ -x "$bin/waterline-manager" ]] || { echo "$bin/waterline-manager is missing: run 'make build'" >&2; exit 1; }
  log "Starting waterline-manager as a process with the chart's flags, its webhooks on https://127.0.0.1:$WEBHOOK_PORT"
  chart_values true false >"$dir/manager-values.yaml"
  local rendered="$dir/manager-chart.yaml" args=()
  helm_ template waterline "$root/charts/waterline" -n waterline-system -f "$dir/manager-values.yaml" \
    --show-only templates/manager.yaml >"$rendered"
  mapfile -t args < <(awk '/^kind: Deployment/ {d=1} d && /^        args:/ {a=1; next} a && /^        - / {sub(/^        - /, ""); gsub(/^"|"$/, ""); print; next} a {exit}' "$rendered")
  [[ ${#args[@]} -gt 0 ]] || { echo "no manager args in the chart's rendering ($rendered)" >&2; exit 1; }
  # Every webhook configuration the manager keeps (--ca-bundle-configurations).
  helm_ template waterline "$root/charts/waterline" -n waterline-system -f "$dir/manager-values.yaml" \
    --show-only templates/webhooks.yaml --show-only templates/daemonset-priority-webhook.yaml \
    --show-only templates/webhook-probe.yaml | kubectl apply -f - >/dev/null
  start waterline-manager "$bin/waterline-manager" --kubeconfig "$kubeconfig" "${args[@]}" \
    --webhook-cert-dir "$dir/webhook-certs"
  wait_for waterline-manager 60 curl -fsS -m 5 "http://127.0.0.1:$MANAGER_PROBE_PORT/readyz"
}

# start_kwok_agent simulates an agent on every kwok node: their NodeMetrics
# come from the agent's reporter and predictor, fed by their pods' requests
# times a factor (a smaller one for Prod pods) swinging over a compressed
# day, so LoadAware, Batch and Mid work on them too.
start_kwok_agent() {
  [[ "$NODES" -gt 0 ]] || return 0
  log "Starting kwok-agent: a simulated agent on each kwok node (usage = requests × $KWOK_CPU_FACTOR CPU, × $KWOK_MEMORY_FACTOR memory; Prod pods × $KWOK_PROD_CPU_FACTOR, × $KWOK_PROD_MEMORY_FACTOR)"
  (cd "$root" && go build -o "$dir/kwok-agent" ./hack/kwok-agent) || { echo "building hack/kwok-agent failed" >&2; exit 1; }
  start kwok-agent "$dir/kwok-agent" --kubeconfig "$kubeconfig" --nodes type=kwok \
    --cpu-factor "$KWOK_CPU_FACTOR" --memory-factor "$KWOK_MEMORY_FACTOR" \
    --prod-cpu-factor "$KWOK_PROD_CPU_FACTOR" --prod-memory-factor "$KWOK_PROD_MEMORY_FACTOR" --v 2
  wait_for "the kwok nodes' NodeMetrics" 120 bash -c \
    "'$bin/kubectl' --kubeconfig '$kubeconfig' --request-timeout 5s get nodemetric kwok-node-0 -o jsonpath='{.status.updateTime}' 2>/dev/null | grep -q ."
}

make_pki
: >"$dir/pids"
start_etcd
start_apiserver
start_controller_manager
install_crds
start_kwok
create_nodes
if [[ -n "$real_node" ]]; then
  start_real_node
else
  log "No real node: $why_no_real_node. Running kwok nodes only."
fi
for component in $WATERLINE_COMPONENTS; do
  case "$component" in
    scheduler|manager|agent|kwok-agent) ;;
    *) echo "unknown component $component in WATERLINE_COMPONENTS" >&2; exit 2 ;;
  esac
done
# The scheduler first: it also serves the default profile, which places the
# chart's pods.
if [[ " $WATERLINE_COMPONENTS " == *" scheduler "* ]]; then start_scheduler; fi
install_waterline
if [[ -z "$real_node" && " $WATERLINE_COMPONENTS " == *" manager "* ]]; then start_manager_process; fi
if [[ " $WATERLINE_COMPONENTS " == *" kwok-agent "* ]]; then start_kwok_agent; fi

cat <<MSG

Waterline local cluster is up: $NODES fake nodes${real_node:+ and the real node real-node}, logs in $dir/logs.
$(if [[ -z "$real_node" ]]; then echo "(no real node: $why_no_real_node)"; fi)

  export KUBECONFIG=$kubeconfig
  $bin/kubectl get nodes
  $bin/kubectl get nodemetrics
  See "Watch colocation" in README.md.

Press Ctrl-C to stop everything.
MSG
touch "$dir/ready"
while true; do
  for p in "${pids[@]}"; do
    if ! kill -0 "$p" 2>/dev/null; then
      name=$(awk -v p="$p" '$1==p {print $2}' "$dir/pids")
      echo "$name (pid $p) exited; see $dir/logs/$name.log" >&2
      exit 1
    fi
  done
  sleep 1
done
