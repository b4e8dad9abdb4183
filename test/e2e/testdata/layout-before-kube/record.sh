#!/usr/bin/env bash
# Records a data directory of apichain as of commit 92a2862 (the layout before kube's: keys under
# /registry/<group|core>/<resource>/, JSON), as the migration test restores it:
#   APICHAIN=path/to/apichain-built-at-92a2862 ./record.sh
# It writes etcd.snapshot.gz (an etcd snapshot of the embedded etcd), encryption-config.yaml
# (the generated key that encrypts its Secrets) and expected.json (every object the test
# compares, as that release served them).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
APICHAIN=${APICHAIN:?the apichain binary of the release to record}
WORK=$(mktemp -d)
trap 'kill $PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
"$APICHAIN" --data-dir "$WORK/data" --secure-port 16999 > "$WORK/log" 2>&1 &
PID=$!
K="kubectl --kubeconfig $WORK/data/admin.kubeconfig"
for _ in $(seq 1 300); do [[ -f $WORK/data/admin.kubeconfig ]] && $K get --raw /readyz >/dev/null 2>&1 && break; sleep 0.2; done
$K apply -f "$HERE/objects.yaml" >/dev/null
$K wait --for condition=Established crd/widgets.example.com --timeout 60s >/dev/null
for v in v1 v2; do
  printf 'apiVersion: example.com/%s\nkind: Widget\nmetadata: {name: made-as-%s, namespace: legacy}\nspec: {size: 3}\n' $v $v | $K apply -f - >/dev/null
done
# Enough ConfigMaps for the migration to page (500 keys a page) and to be interrupted half way.
for i in $(seq 1 700); do printf -- '---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: bulk-%04d, namespace: legacy}\ndata: {i: "%d"}\n' $i $i; done | $K apply -f - >/dev/null
$K get namespaces,secrets,configmaps,services,deployments,horizontalpodautoscalers.v1.autoscaling,events.v1.events.k8s.io,roles,rolebindings,widgets.v1.example.com -n legacy -o json --show-managed-fields > "$WORK/ns.json"
$K get clusterroles/legacy-viewer validatingwebhookconfigurations/legacy-policy crd/widgets.example.com apiservices/v1alpha1.legacy.example.com namespaces/legacy -o json --show-managed-fields > "$WORK/cluster.json"
python3 -c 'import json,sys; a=[o for o in json.load(open(sys.argv[1]))["items"]+json.load(open(sys.argv[2]))["items"] if not o["metadata"]["name"].startswith("bulk-")]; json.dump(a, open(sys.argv[3],"w"), indent=1, sort_keys=True)' "$WORK/ns.json" "$WORK/cluster.json" "$HERE/expected.json"
kill $PID; wait $PID || true
"$APICHAIN" etcd snapshot save --data-dir "$WORK/data" "$WORK/etcd.snapshot"
gzip -9 -c "$WORK/etcd.snapshot" > "$HERE/etcd.snapshot.gz"
cp "$WORK/data/pki/encryption-config.yaml" "$HERE/encryption-config.yaml"
ls -la "$HERE"
