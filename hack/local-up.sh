#!/usr/bin/env bash
# Runs a real Kubernetes control plane on loopback for trying Waterline:
# etcd, kube-apiserver, kube-controller-manager, kwok with fake nodes, the
# waterline.dev CRDs, and Waterline's components as they exist. Prints a
# kubeconfig; Ctrl-C (or SIGTERM) stops everything it started.
#
# Settings (environment):
#   NODES=20                      fake nodes to create
#   NODE_CPU=32 NODE_MEMORY=128Gi capacity of each fake node
#   LOCAL_UP_DIR=_output/local-up state, certificates, logs, kubeconfig
#   ETCD_PORT=2379 APISERVER_PORT=6443  loopback ports
#   WATERLINE_COMPONENTS="scheduler"    Waterline components to run
#                                       ("" for a bare cluster)
#   PREEMPTION=enabled                  "disabled" runs the scheduler without
#                                       preemption (audit before enabling it)
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
WATERLINE_COMPONENTS=${WATERLINE_COMPONENTS-scheduler}
PREEMPTION=${PREEMPTION:-enabled}
case "$PREEMPTION" in
  enabled) scheduler_config="$root/config/scheduler/local-up.yaml" ;;
  disabled) scheduler_config="$root/config/scheduler/local-up-preemption-disabled.yaml" ;;
  *) echo "PREEMPTION=$PREEMPTION: want enabled or disabled" >&2; exit 2 ;;
esac

if ! [[ "$NODES" =~ ^[0-9]+$ ]]; then
  echo "NODES=$NODES: want a whole number" >&2
  exit 2
fi
for tool in etcd kube-apiserver kube-controller-manager kubectl kwok kwok-stages.yaml; do
  if [[ ! -e "$bin/$tool" ]]; then
    echo "$bin/$tool is missing: run 'make tools' first" >&2
    exit 1
  fi
done
command -v openssl >/dev/null || { echo "openssl is needed to make the cluster's certificates" >&2; exit 1; }

dir="$LOCAL_UP_DIR"
rm -rf "$dir"
mkdir -p "$dir/pki" "$dir/logs" "$dir/etcd"
pki="$dir/pki"
kubeconfig="$dir/kubeconfig"
pids=()

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*"; }

# stop_all stops what this script started, newest first (clients before the
# API server, the API server before etcd), each with SIGTERM and, after 10 s,
# SIGKILL.
stop_all() {
  trap - INT TERM EXIT
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
trap stop_all EXIT

start() { # name binary args...
  local name=$1; shift
  "$@" >"$dir/logs/$name.log" 2>&1 &
  pids+=("$!")
  echo "$! $name" >>"$dir/pids"
}

wait_for() { # what seconds command...
  local what=$1 secs=$2; shift 2
  for _ in $(seq 1 $((secs * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "$what did not come up within ${secs}s; see $dir/logs" >&2
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
  wait_for etcd 30 curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
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
  wait_for kube-apiserver 60 kubectl get --raw /readyz
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
  wait_for "default service account" 60 kubectl get serviceaccount default -n default
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
    "[[ \$('$bin/kubectl' --kubeconfig '$kubeconfig' get nodes -l type=kwok --no-headers 2>/dev/null | grep -cw Ready) -ge $NODES ]]"
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
  start waterline-scheduler "$bin/waterline-scheduler" --config "$dir/scheduler-config.yaml" \
    --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --cert-dir "$dir/scheduler-certs" \
    --authentication-kubeconfig "$kubeconfig" --authorization-kubeconfig "$kubeconfig" --v 2
  wait_for waterline-scheduler 60 curl -fsSk "https://127.0.0.1:$SCHEDULER_PORT/healthz"
}

make_pki
: >"$dir/pids"
start_etcd
start_apiserver
start_controller_manager
install_crds
start_kwok
create_nodes
for component in $WATERLINE_COMPONENTS; do
  case "$component" in
    scheduler) start_scheduler ;;
    *) echo "unknown component $component in WATERLINE_COMPONENTS" >&2; exit 2 ;;
  esac
done

cat <<MSG

Waterline local cluster is up: $NODES fake nodes, logs in $dir/logs.

  export KUBECONFIG=$kubeconfig
  $bin/kubectl get nodes

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
