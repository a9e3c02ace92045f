#!/usr/bin/env bash
# The README's nightly recipe in full (issue 39): Scenarios/nightly.json for its 5 minutes in wall
# time, in the default mode (progress line on), against the built-in mock served on a loopback port
# as the staging service, twice, then `compare`; and a third night against the same service made
# 30 % slower (every mock's median latency 40 ms -> 52 ms), which `compare` must call worse (exit 1).
#
# Prints each command, and per night: requests sent and the rate (against the same scenario's
# simulated run, the reference: the load the scenario asks for, computed in this run), the fewest
# samples any operation's percentiles rest on, the generator's lag p99 and CPU; then each
# compare's outcome and exit code.
#
# Usage: Benchmarks/nightly.sh [DURATION]   (default 5m: the recipe's; SLOWER=0 skips the third night)
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-5m}
work=$(mktemp -d /tmp/pushswarm-nightly.XXXXXX)
peer=
trap '[ -n "$peer" ] && kill "$peer" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

swift build -c release --product pushswarm 2>&1 | tail -n 1
binary=.build/release/pushswarm
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed 's/"median": "40ms"/"median": "52ms"/g' Scenarios/nightly.json > "$work/slower.json"

figures() { # DIR: the night's figures from its summary.json
    python3 - "$1/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
sent = s["requests"]["sent"]
fewest = min((o["count"], name) for name, o in s["operations"].items())
generator = s.get("generator") or {}
line = f"{sent:,} requests in {s['simulatedSeconds']:.0f} s: {sent / s['simulatedSeconds']:,.0f} req/s; fewest samples: {fewest[0]:,} ({fewest[1]})"
if generator:
    line += f"; lag p99 {generator['lagP99Ms']} ms, CPU {generator['cpuBusy'] * 100:.0f} % of the cores"
print(line)
PY
}

echo "== the reference: the load the scenario asks for (simulated time, same seed)"
echo "$binary run Scenarios/nightly.json --duration $duration --out $work/reference --quiet"
"$binary" run Scenarios/nightly.json --duration "$duration" --out "$work/reference" --quiet >/dev/null
reference=$(figures "$work/reference")
echo "reference: $reference"
asked=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["requests"]["sent"] / s["simulatedSeconds"])' "$work/reference/summary.json")

night() { # NAME SERVICE-SCENARIO
    "$binary" mock "$2" --listen "127.0.0.1:$port" >"$work/$1-mock.log" 2>&1 &
    peer=$!
    for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    echo "$binary run Scenarios/nightly.json --clock wall --duration $duration --target http://127.0.0.1:$port --out $work/$1"
    local status=0
    /usr/bin/time -f "%e s wall, %U s user, %S s system, %M KiB max RSS" -o "$work/$1.time" \
        "$binary" run Scenarios/nightly.json --clock wall --duration "$duration" --target "http://127.0.0.1:$port" --out "$work/$1" \
        >"$work/$1.out" 2>&1 || status=$?
    kill "$peer"; wait "$peer" 2>/dev/null || true; peer=
    [ $status -eq 0 ] || { echo "$1: run exited $status"; tail -n 20 "$work/$1.out"; exit 1; }
    local got
    got=$(figures "$work/$1")
    echo "$1: $got"
    python3 - "$work/$1/summary.json" "$1" "$asked" "$work/$1.time" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ratio = s["requests"]["sent"] / s["simulatedSeconds"] / float(sys.argv[3])
print(f"{sys.argv[2]}: {ratio:.3f} of the reference rate; process: {open(sys.argv[4]).read().strip()}")
PY
}

compare() { # BASELINE CURRENT
    echo "$binary compare $work/$1 $work/$2"
    local status=0
    "$binary" compare "$work/$1" "$work/$2" --json "$work/$1-$2.json" >"$work/$1-$2.out" 2>&1 || status=$?
    python3 - "$work/$1-$2.json" "$status" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
rows = c["rows"]
few = [r["metric"] for r in rows if r["verdict"] == "few"]
worse = [r["metric"] for r in rows if r["verdict"] == "worse"]
noise = [r["metric"] for r in rows if r["verdict"] == "noise"]
print(f"  outcome {c['outcome']} (exit {sys.argv[2]}): {len(rows)} rows, {len(few)} on too few samples, {len(worse)} worse, {len(noise)} within noise")
for name in worse[:8]: print(f"  worse: {name}")
PY
    tail -n 1 "$work/$1-$2.out"
}

echo "== night 1 and night 2: one build of the service"
night baseline Scenarios/nightly.json
night tonight Scenarios/nightly.json
compare baseline tonight
if [ "${SLOWER:-1}" != 0 ]; then
    echo "== night 3: the service 30 % slower"
    night slower "$work/slower.json"
    compare baseline slower
fi
