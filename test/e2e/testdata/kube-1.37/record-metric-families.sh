#!/usr/bin/env bash
# Records the metric families kube-apiserver exports (name, type, label names) from its
# /metrics, for TestMetricFamiliesMatchKube. Run kube-apiserver 1.37.2 with
# ../shared/tools/kube-reference, exercise it (the test's comments say with what), then
# (a second run's families, with an encryption configuration, were merged into the first's):
#   KUBECONFIG=<its admin kubeconfig> test/e2e/testdata/kube-1.37/record-metric-families.sh
set -euo pipefail
kubectl get --raw /metrics | python3 -c '
import re, sys
types, labels = {}, {}
for line in sys.stdin:
    line = line.rstrip("\n")
    m = re.match(r"# TYPE (\S+) (\S+)", line)
    if m:
        types[m.group(1)] = m.group(2)
        labels.setdefault(m.group(1), set())
        continue
    if not line or line.startswith("#"):
        continue
    m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s", line)
    name = m.group(1)
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and types.get(base) in ("histogram", "summary"):
            name = base
    names = re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)=\"", m.group(3) or "")
    labels.setdefault(name, set()).update(n for n in names if n not in ("le", "quantile"))
for name in sorted(types):
    print(name, types[name], ",".join(sorted(labels.get(name, ()))))
' > "$(dirname "$0")/metric-families.txt"
