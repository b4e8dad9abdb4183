#!/usr/bin/env bash
# Deploys apichain as a Docker swarm stack on the swarm this engine is a manager of (run
# `docker swarm init` first), from the images `make images` built: makes the PKI into named
# volumes once (compose's pki step, run with docker run), deploys stack.yaml, waits for the
# gateways to be healthy and writes admin.kubeconfig for the published port.
# APICHAIN_STACK names the stack (apichain); APICHAIN_SWARM_PORT is the balancer's port (6543).
set -euo pipefail
cd "$(dirname "$0")"
stack=${APICHAIN_STACK:-apichain}
port=${APICHAIN_SWARM_PORT:-6543}
if [ "$(docker info -f '{{.Swarm.ControlAvailable}}')" != true ]; then
  echo "this Docker engine is not a swarm manager: run 'docker swarm init' (or join a swarm as a manager) first" >&2
  exit 1
fi

mounts=(-v apichain-swarm-data:/data)
for b in aggregator core extensions etcd nats balancer; do
  mounts+=(-v "apichain-swarm-$b-pki:/bundles/$b")
done
docker run --rm "${mounts[@]}" apichain/gateway:dev init-pki --data-dir /data --external-hostname gateway,localhost \
  --bundles-dir /bundles --etcd-member etcd --nats-host nats,nats1,nats2

APICHAIN_SWARM_PORT=$port docker stack deploy --prune -c stack.yaml "$stack"

gateways() {
  docker ps -q --filter "label=com.docker.stack.namespace=$stack" --filter "label=com.docker.swarm.service.name=${stack}_gateway"
}
healthy=
for _ in $(seq 300); do
  ids=$(gateways)
  if [ -n "$ids" ] && [ -z "$(docker inspect -f '{{.State.Health.Status}}' $ids | grep -v '^healthy$')" ]; then
    healthy=1
    break
  fi
  sleep 1
done
if [ -z "$healthy" ]; then
  echo "the gateways of stack $stack were not healthy within 5 minutes:" >&2
  docker stack ps --no-trunc "$stack" >&2
  exit 1
fi
docker cp "$(echo $ids | cut -d' ' -f1):/data/admin.kubeconfig" admin.kubeconfig
sed -i "s#server: https://[^ ]*#server: https://localhost:$port#" admin.kubeconfig
echo "apichain is up as stack $stack: kubectl --kubeconfig $PWD/admin.kubeconfig get --raw '/readyz?verbose'"
