#!/usr/bin/env bash
# PushSwarm's HTTP client against wrk, on the same nginx, in the same run.
#
# Starts nginx (Debian's nginx-light) on a loopback port answering every POST with a fixed JSON
# body, then runs wrk and `pushswarm bench` in turn against it: 64 connections, POST bodies shaped
# like SmartAppPush events (wrk: one body repeated; PushSwarm: each device's own event, from the
# quickstart fleet). The two tools alternate for ROUNDS rounds, since the machine's two cores are
# shared by nginx and the client and single rates vary by 10-20 %; prints every rate, the medians
# and their ratio. Target: PushSwarm >= 0.8 x wrk.
#
# Usage: Benchmarks/http-throughput.sh [SECONDS [ROUNDS]]   (default 10 s per run, 3 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/nginx-peer.sh
seconds=${1:-10}
rounds=${2:-3}
connections=64

need_tools nginx wrk

swift build -c release 2>&1 | tail -n 1
work=$(mktemp -d)
start_nginx "$work"
trap 'kill "$nginx_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
write_wrk_post "$work"

echo "server: nginx $("$(command -v nginx || echo /usr/sbin/nginx)" -v 2>&1 | sed 's/.*\///'), 1 worker, http://127.0.0.1:$port, $(nproc) cores shared by server and client"
echo "command: wrk -t2 -c$connections -d${seconds}s -s post.lua http://127.0.0.1:$port/events"
echo "command: .build/release/pushswarm bench http://127.0.0.1:$port --connections $connections --duration ${seconds}s --json"
wrk_rates=()
ps_rates=()
for round in $(seq "$rounds"); do
    wrk_out=$(cd "$work" && wrk -t2 -c$connections -d"${seconds}s" -s post.lua "http://127.0.0.1:$port/events")
    wrk_rate=$(echo "$wrk_out" | awk '/Requests\/sec/ {print $2}')
    wrk_errors=$(echo "$wrk_out" | awk '/Non-2xx|Socket errors/' | tr '\n' ' ')
    echo "round $round wrk:       $wrk_rate requests/s ${wrk_errors}"
    ps_out=$(.build/release/pushswarm bench "http://127.0.0.1:$port" --connections $connections --duration "${seconds}s" --json)
    ps_rate=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["requestsPerSecond"])' "$ps_out")
    echo "round $round pushswarm: $ps_rate requests/s  $ps_out"
    wrk_rates+=("$wrk_rate")
    ps_rates+=("$ps_rate")
done

python3 - "${wrk_rates[*]}" "${ps_rates[*]}" <<'PY'
import statistics, sys
wrk = statistics.median(float(x) for x in sys.argv[1].split())
ps = statistics.median(float(x) for x in sys.argv[2].split())
ratio = ps / wrk if wrk else 0
print(f"wrk: {wrk:,.0f} requests/s (median)")
print(f"pushswarm: {ps:,.0f} requests/s (median)")
print(f"ratio: {ratio:.2f} x wrk (target >= 0.80) -> {'ok' if ratio >= 0.8 else 'BELOW TARGET'}")
PY
