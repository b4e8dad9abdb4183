#!/usr/bin/env bash
# Runs controller-runtime's own envtest-based integration suites, unmodified, against apichain
# as envtest users would run it (issue 30): the upstream module at CR_VERSION, a fresh all-in-one
# in the envtest profile per package (USE_EXISTING_CLUSTER=true, KUBECONFIG its admin
# kubeconfig), and the Ginkgo spec counts per package and in all.
#
#   test/controller-runtime/run.sh                 # every package with an envtest suite
#   PKGS="pkg/cache pkg/client" test/controller-runtime/run.sh
#   TARGET=kube WORK=/tmp/cr-kube test/controller-runtime/run.sh      # the same on kube-apiserver
#   BASELINE=/tmp/cr-kube test/controller-runtime/run.sh               # and what fails only here
#
# The first run builds controller-runtime's tests (several minutes on two cores); logs stay in
# $WORK/logs, each package's failed specs in $WORK/logs/<package>.failed. PROFILE=default runs
# apichain with its controllers on instead. TARGET=kube runs the same packages against a fresh
# kube-apiserver 1.37.2 each (built by ../shared/tools/kube-reference, KUBE_REFERENCE) started
# with envtest's flags, so the two lists of failed specs can be compared.
set -euo pipefail

CR_VERSION=${CR_VERSION:-v0.25.3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${WORK:-$(mktemp -d /tmp/cr-suites.XXXXXX)}
mkdir -p "$WORK/logs" "$WORK/data"
# The envtest profile: apichaintest.EnvtestArgs.
FLAGS=(--disable-admission-plugins=ServiceAccount --allow-privileged --controllers=)
# The default profile: apichain's controllers and ServiceAccount admission on, with the one flag
# envtest always gives kube-apiserver (--allow-privileged; kube's default refuses privileged
# containers, and so does apichain's).
if [ "${PROFILE:-envtest}" = default ]; then FLAGS=(--allow-privileged); fi

TARGET=${TARGET:-apichain}
KUBE_REFERENCE=${KUBE_REFERENCE:-$ROOT/../shared/tools/kube-reference}
if [ "$TARGET" = apichain ]; then (cd "$ROOT" && go build -o "$WORK/apichain" ./cmd/apichain); fi
if [ ! -d "$WORK/cr" ]; then
	src=$(go mod download -json "sigs.k8s.io/controller-runtime@$CR_VERSION" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
	cp -r "$src" "$WORK/cr"
	chmod -R u+w "$WORK/cr"
fi
cd "$WORK/cr"
PKGS=${PKGS:-$(grep -rl --include='*_test.go' 'envtest.Environment' pkg | xargs -n1 dirname | sort -u)}

total_ran=0 total_passed=0 total_failed=0 total_skipped=0
for pkg in $PKGS; do
	name=$(echo "$pkg" | tr / _)
	dir="$WORK/data/$name"
	rm -rf "$dir"
	if [ "$TARGET" = kube ]; then
		# envtest's kube-apiserver flags that differ from the reference's defaults.
		RUN_DIR="$dir" KUBE_PORT=${KUBE_PORT:-16443} KUBE_EXTRA_FLAGS="--disable-admission-plugins=ServiceAccount --allow-privileged=true" \
			"$KUBE_REFERENCE/run.sh" >"$WORK/logs/$name.kube.log" 2>&1
		kubeconfig="$dir/kubeconfig"
	else
		"$WORK/apichain" --data-dir "$dir" --secure-port 0 "${FLAGS[@]}" >"$WORK/logs/$name.apichain.log" 2>&1 &
		pid=$!
		for _ in $(seq 1 300); do
			if [ -f "$dir/admin.kubeconfig" ] && kubectl --kubeconfig "$dir/admin.kubeconfig" get --raw /readyz >/dev/null 2>&1; then break; fi
			sleep 0.2
		done
		kubeconfig="$dir/admin.kubeconfig"
	fi
	USE_EXISTING_CLUSTER=true KUBECONFIG="$kubeconfig" \
		go test -v "./$pkg" -count=1 -timeout 30m -args -ginkgo.no-color >"$WORK/logs/$name.log" 2>&1 || true
	if [ "$TARGET" = kube ]; then
		RUN_DIR="$dir" "$KUBE_REFERENCE/stop.sh" >/dev/null 2>&1 || true
	else
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	{ grep -E '^\s*\[FAIL\]' "$WORK/logs/$name.log" || true; grep -E '^\s*--- FAIL: ' "$WORK/logs/$name.log" || true; } | sed -e 's/^\s*//' -e 's/ ([0-9.]*s)$//' | sort -u >"$WORK/logs/$name.failed"
	summary=$(grep -E '^Ran [0-9]+ of [0-9]+ Specs' "$WORK/logs/$name.log" | tail -1 || true)
	counts=$(grep -E '[0-9]+ Passed \| [0-9]+ Failed' "$WORK/logs/$name.log" | tail -1 || true)
	ran=$(echo "$summary" | sed -n 's/^Ran \([0-9]*\) of.*/\1/p')
	passed=$(echo "$counts" | sed -n 's/.* \([0-9]*\) Passed.*/\1/p')
	failed=$(echo "$counts" | sed -n 's/.*Passed | \([0-9]*\) Failed.*/\1/p')
	skipped=$(echo "$counts" | sed -n 's/.* \([0-9]*\) Skipped.*/\1/p')
	printf '%-40s ran %4s  passed %4s  failed %4s  skipped %4s\n' "$pkg" "${ran:-?}" "${passed:-?}" "${failed:-?}" "${skipped:-?}"
	total_ran=$((total_ran + ${ran:-0})) total_passed=$((total_passed + ${passed:-0}))
	total_failed=$((total_failed + ${failed:-0})) total_skipped=$((total_skipped + ${skipped:-0}))
done
printf '%-40s ran %4s  passed %4s  failed %4s  skipped %4s\n' "in all" "$total_ran" "$total_passed" "$total_failed" "$total_skipped"
echo "logs: $WORK/logs"
# BASELINE: the WORK of a run on the other target; what fails here and passed there.
if [ -n "${BASELINE:-}" ]; then
	echo "failed here, not on $BASELINE:"
	for f in "$WORK"/logs/*.failed; do
		other="$BASELINE/logs/$(basename "$f")"
		[ -f "$other" ] || other=/dev/null
		comm -23 "$f" "$other" | sed "s|^|  $(basename "$f" .failed): |"
	done
fi
