#!/usr/bin/env bash
# What one request costs the device path against what it costs wrk, and how close the device path's
# latency comes to the service's (issue 52), on the same nginx (Debian's nginx-light, 1 worker,
# `return 200` JSON) with the same connections (64 unless CONNECTIONS says otherwise):
#
#   1. wrk -tP -cCONNECTIONS for SECONDS s: its rate, and per request its wake-ups (epoll_wait calls,
#      counted by `perf stat` where the kernel lets it), context switches, and user and kernel CPU
#      (its rusage).
#   2. The device path (Benchmarks/device-path.json: 20,000 SmartAppPush installs behind 64 NAT
#      addresses, each address's pool CONNECTIONS/64 connections) in the default mode (live progress
#      on, its output to a file) at a tenth of wrk's rate: latency p50 against service time p50
#      (target: within 0.3 ms), and each second's latency p99 from the first second (target: every
#      one under 5 ms).
#   3. The device path at 0.8 x wrk's rate: whether it held (no saturation, lag p99 under 100 ms,
#      nothing shed or pending), and the same figures per request as wrk's, with the loops' own count
#      of events a wake-up.
#
#   4. With BASELINE=<commit>: CPU a request on the device path, that commit (built in a temporary
#      directory) against this tree, at 0.4 x wrk's rate (below both builds' limits, so both send
#      the same requests), ROUNDS=3 alternating runs of each; the least of each build counts.
#
# Usage: Benchmarks/device-path-latency.sh [SECONDS [PARTITIONS]]   (CONNECTIONS=4096 for the
# many-connection case: 64 addresses x 64 connections, and wrk -c4096; BASELINE=<commit> for 4)
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/nginx-peer.sh
seconds=${1:-6}
partitions=${2:-2}
connections=${CONNECTIONS:-64}
per_address=$(( (connections + 63) / 64 ))
need_tools nginx wrk
work=$(mktemp -d /tmp/pushswarm-latency.XXXXXX)
nginx_pid=""
cleanup() {
    [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

swift build -c release 2>&1 | tail -n 1
device_binary="$(pwd)/.build/release/pushswarm"
echo "this tree: $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes'); $(nproc) cores shared by nginx and the client"
start_nginx "$work"
write_wrk_post "$work"

# costs NAME COMMAND...: runs COMMAND, its output to NAME.out, and writes NAME.costs: user and
# kernel CPU seconds, voluntary and involuntary context switches (rusage), and its epoll waits
# (perf's count of epoll_wait and epoll_pwait2 entries; -1 where perf cannot count them).
costs() {
    local name=$1
    shift
    python3 - "$work/$name" "$@" <<'PY'
import os, resource, shutil, subprocess, sys
name, command = sys.argv[1], sys.argv[2:]
events = "syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait2"
perf = shutil.which("perf")
counted = False
if perf and subprocess.run([perf, "stat", "-x,", "-e", events, "true"], capture_output=True).returncode == 0:
    command = [perf, "stat", "-x,", "-o", name + ".perf", "-e", events, "--"] + command
    counted = True
with open(name + ".out", "w") as out, open(name + ".stderr", "w") as err:
    done = subprocess.run(command, stdout=out, stderr=err)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
waits = -1
if counted:
    waits = 0
    for line in open(name + ".perf"):
        fields = line.split(",")
        if len(fields) > 2 and fields[2].startswith("syscalls:") and fields[0].strip().isdigit():
            waits += int(fields[0])
open(name + ".costs", "w").write(f"{usage.ru_utime} {usage.ru_stime} {usage.ru_nvcsw} {usage.ru_nivcsw} {waits}\n")
sys.exit(0 if done.returncode in (0, 99) else done.returncode)
PY
}

# per_request NAME REQUESTS: the costs of NAME a request.
per_request() {
    python3 - "$work/$1.costs" "$2" <<'PY'
import sys
user, system, voluntary, involuntary, waits = open(sys.argv[1]).read().split()
requests = max(1, int(sys.argv[2]))
wakes = f"{int(waits) / requests:.3f} wake-ups" if int(waits) >= 0 else "wake-ups not counted (perf cannot trace syscalls here)"
print(f"{wakes}, {(int(voluntary) + int(involuntary)) / requests:.3f} context switches, "
      f"user {float(user) * 1e6 / requests:.2f} us + kernel {float(system) * 1e6 / requests:.2f} us CPU a request")
PY
}

echo
echo "== 1. wrk"
echo "command: wrk -t$partitions -c$connections -d${seconds}s -s post.lua http://127.0.0.1:$port/events"
(cd "$work" && costs wrk wrk -t"$partitions" -c"$connections" -d"${seconds}s" -s post.lua "http://127.0.0.1:$port/events")
wrk_requests=$(awk '/requests in/ {print $1}' "$work/wrk.out")
wrk_rate=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out")
echo "wrk: $wrk_rate requests/s ($wrk_requests requests)"
echo "  $(per_request wrk "$wrk_requests")"

# device NAME RATE: the device path at RATE/s in the default mode, its costs counted.
device() {
    local name=$1 rate=$2
    sed "s/RATE/$rate/; s/CONNS/$per_address/" Benchmarks/device-path.json > "$work/$name.json"
    echo "command: $device_binary run $name.json (rate $rate/s, $per_address connection(s) an address) --clock wall --target http://127.0.0.1:$port --duration ${seconds}s --partitions $partitions  (progress on, its output to a file)"
    costs "$name" "$device_binary" run "$work/$name.json" --clock wall --target "http://127.0.0.1:$port" --duration "${seconds}s" \
        --partitions "$partitions" --out "$work/$name" || true
}

echo
echo "== 2. the device path at a tenth of wrk's rate"
tenth=$(python3 -c "print(int($wrk_rate / 10))")
device tenth "$tenth"
python3 - "$work/tenth" <<'PY'
import json, sys
base = sys.argv[1]
s = json.load(open(base + "/summary.json"))
o = s["operations"]["smartapppush.events"]
latency, service = o["latencyMs"]["p50"], o["serviceTimeMs"]["p50"]
gap = latency - service
print(f"  sent {s['requests']['sent']:,}; latency p50 {latency:.3f} ms, service time p50 {service:.3f} ms: {gap:.3f} ms of PushSwarm's own "
      f"(target <= 0.3 ms) -> {'ok' if gap <= 0.3 else 'OVER'}")
p99s = [json.loads(line)["latencyMs"]["p99"] for line in open(base + "/timeseries.ndjson")]
worst = max(p99s) if p99s else 0
print(f"  each second's latency p99 (ms): {', '.join(f'{p:.2f}' for p in p99s)}; the highest {worst:.2f} "
      f"(target < 5 ms from the first second) -> {'ok' if worst < 5 else 'OVER'}")
g = s["generator"]
print(f"  generator: lag p99 {g['lagP99Ms']} ms, CPU busy {g.get('cpuBusy', '?')}, {g.get('wakeUps', 0):,} wake-ups, {g.get('eventsPerWakeUp', 0)} events each")
PY
echo "  $(per_request tenth "$(summary "$work/tenth/summary.json" "s['requests']['sent']")")"

echo
echo "== 3. the device path at 0.8 x wrk's rate"
rate=$(python3 -c "print(int($wrk_rate * 0.8))")
device eight "$rate"
python3 - "$work/eight/summary.json" "$rate" "$seconds" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
rate, length = int(sys.argv[2]), float(sys.argv[3])
g, r, w = s["generator"], s["requests"], s.get("workload", {})
pending = s.get("queue", {}).get("pendingAtEnd", 0) + r.get("inFlightAtEnd", 0)
held = not g["saturated"] and g["lagP99Ms"] < 100 and g["missedStarts"] == 0 and w.get("shed", 0) == 0 and pending == 0
o = s["operations"]["smartapppush.events"]
print(f"  offered {rate:,}/s: sent {r['sent']:,} ({r['sent'] / length:,.0f}/s), latency p50 {o['latencyMs']['p50']} ms p99 {o['latencyMs']['p99']} ms, "
      f"service p50 {o['serviceTimeMs']['p50']} ms, lag p99 {g['lagP99Ms']} ms, CPU busy {g.get('cpuBusy', '?')}, shed {w.get('shed', 0):,}, pending {pending:,} "
      f"-> {'held' if held else 'did not hold'} (target: held)")
print(f"  generator: {g.get('wakeUps', 0):,} wake-ups, {g.get('eventsPerWakeUp', 0)} events each")
PY
echo "  $(per_request eight "$(summary "$work/eight/summary.json" "s['requests']['sent']")")"
echo "  wrk, for comparison: $(per_request wrk "$wrk_requests")"

[ -n "${BASELINE:-}" ] || exit 0
echo
rounds=${ROUNDS:-3}
baseline_dir="${TMPDIR:-/tmp}/pushswarm-baseline-$BASELINE"
if [ ! -x "$baseline_dir/.build/release/pushswarm" ]; then
    rm -rf "$baseline_dir" && mkdir -p "$baseline_dir"
    git archive "$BASELINE" | tar -x -C "$baseline_dir"
    (cd "$baseline_dir" && swift build -c release 2>&1 | tail -n 1)
fi
this_binary=$device_binary
rate=$(python3 -c "print(int($wrk_rate * 0.4))")
echo "== 4. CPU a request at $rate/s (0.4 x wrk): $BASELINE against this tree, $rounds alternating runs of each (the least counts)"
best_base=999999
best_now=999999
for round in $(seq "$rounds"); do
    for build in base now; do
        if [ "$build" = base ]; then device_binary="$baseline_dir/.build/release/pushswarm"; else device_binary=$this_binary; fi
        device "ab-$build-$round" "$rate" > /dev/null
        sent=$(summary "$work/ab-$build-$round/summary.json" "s['requests']['sent']")
        read -r user system _ < "$work/ab-$build-$round.costs"
        per=$(python3 -c "print(f'{($user + $system) * 1e6 / $sent:.2f}')")
        echo "  $build run $round: $sent requests, user $(python3 -c "print(f'{$user * 1e6 / $sent:.2f}')") us + kernel $(python3 -c "print(f'{$system * 1e6 / $sent:.2f}')") us = $per us CPU a request"
        if [ "$build" = base ]; then best_base=$(python3 -c "print(min($per, $best_base))"); else best_now=$(python3 -c "print(min($per, $best_now))"); fi
    done
done
python3 -c "print(f'CPU a request: $BASELINE {$best_base} us, this tree {$best_now} us: {$best_now / $best_base:.3f} x')"

