#!/usr/bin/env bash
# Starts and stops kube-apiserver and etcd from ../shared/tools/kube-reference for
# `apichain-bench scale` (docs/performance.md), keeping etcd's data and the certificates
# between restarts, so that a restart is the servers' own start and nothing else.
# Usage: kube.sh start|stop DIR [PORT]
#   The first start runs the reference's run.sh (fresh certificates, empty etcd); later ones
#   start etcd and kube-apiserver again on DIR's data with run.sh's flags.
#   DIR/kubeconfig is the admin kubeconfig, DIR/pids the PIDs (etcd, kube-apiserver).
set -euo pipefail
KREF=${KREF:-$(cd "$(dirname "$0")/../../../.." && pwd)/shared/tools/kube-reference}
cmd=$1 dir=$2 port=${3:-16443}
case $cmd in
start)
  if [[ ! -d $dir/etcd-data ]]; then
    RUN_DIR=$dir KUBE_PORT=$port WAIT=0 "$KREF/run.sh" >/dev/null
    exit 0
  fi
  read -r ports <"$dir/startup.txt"
  eval "$ports" # etcd_port, etcd_peer_port, kube_port
  C=$dir/certs
  "$KREF/bin/etcd" --name default --data-dir "$dir/etcd-data" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "default=http://127.0.0.1:$etcd_peer_port" >>"$dir/etcd.log" 2>&1 &
  echo $! >"$dir/pids"
  "$KREF/bin/kube-apiserver" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$kube_port" \
    --etcd-servers="http://127.0.0.1:$etcd_port" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$C/sa.pub" --service-account-signing-key-file="$C/sa.key" \
    --authorization-mode=Node,RBAC --endpoint-reconciler-type=none \
    --client-ca-file="$C/ca.crt" --tls-cert-file="$C/apiserver.crt" --tls-private-key-file="$C/apiserver.key" \
    >>"$dir/kube-apiserver.log" 2>&1 &
  echo $! >>"$dir/pids"
  ;;
stop)
  RUN_DIR=$dir "$KREF/stop.sh" >/dev/null
  # stop.sh is done when the processes are; their ports may be freed a little later.
  read -r ports <"$dir/startup.txt"
  eval "$ports"
  while ss -ltnH "( sport = :$kube_port or sport = :$etcd_port )" | grep -q .; do sleep 0.05; done
  ;;
*) echo "usage: $0 start|stop DIR [PORT]" >&2; exit 2 ;;
esac
