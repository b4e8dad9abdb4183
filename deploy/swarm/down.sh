#!/usr/bin/env bash
# Removes the stack up.sh deployed, then its volumes (the PKI and the data) once its
# containers are gone.
set -euo pipefail
cd "$(dirname "$0")"
stack=${APICHAIN_STACK:-apichain}
docker stack rm "$stack" >/dev/null 2>&1 || true
for _ in $(seq 120); do
  [ -z "$(docker ps -aq --filter "label=com.docker.stack.namespace=$stack")" ] && break
  sleep 1
done
vols=$(docker volume ls -q --filter "label=com.docker.stack.namespace=$stack"; docker volume ls -q --filter name=apichain-swarm-)
[ -z "$vols" ] || docker volume rm $vols >/dev/null
for _ in $(seq 30); do
  [ -z "$(docker network ls -q --filter "label=com.docker.stack.namespace=$stack")" ] && break
  sleep 1
done
rm -f admin.kubeconfig
