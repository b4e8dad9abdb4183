#!/usr/bin/env bash
# Starts and stops an apichain all-in-one for `apichain-bench scale` (docs/performance.md).
# Usage: apichain.sh start|stop DIR [BINARY] [PORT]
#   start: runs BINARY (default: apichain on PATH) with --data-dir DIR/data on PORT (16444) in
#          the background; DIR/pids holds its PID, DIR/data/admin.kubeconfig its admin kubeconfig.
#   stop:  SIGINT, then waits for it to exit.
set -euo pipefail
cmd=$1 dir=$2 bin=${3:-apichain} port=${4:-16444}
case $cmd in
start)
  mkdir -p "$dir/data"
  "$bin" --data-dir "$dir/data" --secure-port "$port" --log-level error >>"$dir/apichain.log" 2>&1 &
  echo $! >"$dir/pids"
  ;;
stop)
  [[ -f $dir/pids ]] || exit 0
  pid=$(cat "$dir/pids")
  kill -INT "$pid" 2>/dev/null || exit 0
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  ;;
*) echo "usage: $0 start|stop DIR [BINARY] [PORT]" >&2; exit 2 ;;
esac
