#!/usr/bin/env bash
# Speed of a simulated-time run: the quickstart (10,000 devices, 24 simulated hours) several times,
# printing the command and each run's figures. Target (issue 2): under 10 s of wall time.
# No wrk ratio here: simulated time opens no socket, so there is no reference tool to run beside
# it; the HTTP throughput benchmark against wrk comes with the socket layer.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
swift build -c release 2>&1 | tail -n 1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "command: .build/release/pushswarm run Scenarios/quickstart.json --out DIR --quiet   (x$runs, $(nproc) cores)"
for run in $(seq 1 "$runs"); do
    .build/release/pushswarm run Scenarios/quickstart.json --out "$out/$run" --quiet >/dev/null
    python3 - "$out/$run/summary.json" "$run" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
sent, wall = s["requests"]["sent"], s["wallSeconds"]
print(f"run {sys.argv[2]}: {s['devices']} devices, {s['simulatedSeconds']:.0f} simulated s, {sent} requests, "
      f"{wall:.3f} s wall, {sent / wall:,.0f} simulated requests per wall second, "
      f"{s['simulatedSeconds'] / wall:,.0f}x real time")
PY
done
