#!/usr/bin/env bash
# PushSwarm's device path over HTTP/2 against h2load (nghttp2-client), on the same nginx, in the
# same run (issue 51).
#
# nginx (Debian's nginx-light, HTTP/2 with prior knowledge on a cleartext port, at most STREAMS
# concurrent streams a connection) answers every POST with a fixed JSON body. h2load holds 64
# connections with STREAMS streams each, posting one SmartAppPush event; PushSwarm runs
# Benchmarks/http2-device-path.json: 20,000 installs behind 64 addresses, each address's pool one
# HTTP/2 connection (64 in all) carrying its requests as streams up to nginx's STREAMS: the same
# connections and streams. h2load is a closed loop, so its rate is its ceiling; the device path's
# figure is the highest offered open-workload rate that held (no saturation, lag p99 under 100 ms,
# nothing shed or pending), in the default mode (progress on). h2load runs before and after the
# device runs and the faster counts; the ratio is printed. Target: >= 0.5 x h2load.
#
# Usage: Benchmarks/http2-device-path.sh [SECONDS [PARTITIONS]]   (default 8 s, 2 partitions;
# STREAMS=16, WORKERS=1 nginx workers, H2LOAD_THREADS=PARTITIONS)
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/nginx-peer.sh
seconds=${1:-8}
partitions=${2:-2}
streams=${STREAMS:-16}
threads=${H2LOAD_THREADS:-$partitions}
connections=64
per_address=1
device_json=Benchmarks/http2-device-path.json

need_tools nginx h2load

swift build -c release 2>&1 | tail -n 1
device_binary=.build/release/pushswarm
work=$(mktemp -d)
NGINX_HTTP2=1 start_nginx "$work" "${WORKERS:-1}" "" "" "http2_max_concurrent_streams $streams;"
trap 'kill "$nginx_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
write_wrk_post "$work"
python3 - "$work/post.lua" "$work/event.json" <<'PY'
import re, sys
open(sys.argv[2], "w").write(re.search(r"wrk.body = '(.*)'", open(sys.argv[1]).read()).group(1))
PY

h2load_command=(h2load -c"$connections" -m"$streams" -t"$threads" -D "$seconds" -d "$work/event.json" -H "content-type: application/json" "http://127.0.0.1:$port/events")
h2load_run() {
    local out rate
    out=$("${h2load_command[@]}" 2>&1)
    rate=$(echo "$out" | awk '/^finished in/ {gsub(",", "", $4); print $4}')
    echo "  h2load: ${rate:-?} requests/s ($(echo "$out" | awk '/^requests:/' | sed 's/^ *//'))" >&2
    echo "${rate:-0}"
}

echo "server: nginx $("$(command -v nginx || echo /usr/sbin/nginx)" -v 2>&1 | sed 's/.*\///'), ${WORKERS:-1} worker(s), h2c on http://127.0.0.1:$port, http2_max_concurrent_streams $streams, $(nproc) cores shared by server and client"
echo "command: ${h2load_command[*]}"
echo "command: $device_binary run $device_json (RATE, CONNS=$per_address) --clock wall --target http://127.0.0.1:$port --duration ${seconds}s --partitions $partitions"
before=$(h2load_run)
highest_held "$partitions" default "$before"
after=$(h2load_run)
python3 - "$before" "$after" "$best" "$work/p$partitions-default-20/summary.json" <<'PY'
import json, os, sys
h2load = max(float(sys.argv[1]), float(sys.argv[2]))
best = int(sys.argv[3])
print(f"h2load: {float(sys.argv[1]):,.0f} requests/s before the device runs, {float(sys.argv[2]):,.0f} after; the faster counts: {h2load:,.0f}")
print(f"pushswarm device path (HTTP/2): {best:,} requests/s offered and held")
if os.path.exists(sys.argv[4]):
    s = json.load(open(sys.argv[4]))
    c = s.get("counters", {})
    print(f"  (first run: {c.get('connections.opened', 0)} connections opened for {s['requests']['sent']:,} requests)")
ratio = best / h2load if h2load else 0
print(f"ratio: {ratio:.2f} x h2load (target >= 0.50) -> {'ok' if ratio >= 0.5 else 'BELOW TARGET'}")
PY
