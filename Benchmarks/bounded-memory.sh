#!/usr/bin/env bash
# Memory that a scenario number or a failing service used to grow without bound (issue 35), as max
# RSS (GNU time) with the command printed:
#  1. the built-in mock's per-address limit: a wall run of 15,000 SmartAppPush events/s for 2 s
#     (30,000 requests, 4 NAT addresses, the mock answering in about 2 ms) with `mock.rateLimitPerSecond` at 10, 1,000 (the
#     reference: a small exact window), 100,000 and 10,000,000. The sliding-window log once kept a
#     ring of `limit` timestamps per address (5 GB at 10,000,000); now the largest limit's RSS is
#     printed as a ratio to the reference's (target: under 100 MB, ratio near 1);
#  2. a failing service with `whenExhausted: keepForNextLaunch` (every request 503, kept for the
#     next launch): 16,000 devices for 12 simulated hours (queues once reached 400 KB a device),
#     under `ulimit -v` at the figure `pushswarm validate` gives, RSS against the estimate.
# Traffic: loopback only (the built-in mock), each run bounded by its duration.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release 2>&1 | tail -n 1
bin=.build/release/pushswarm
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

rss() { # prints max RSS in KiB of the command after it
    /usr/bin/time -f "%M" -o "$work/time" "$@" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; return 1; }
    tail -n 1 "$work/time"
}

echo "== 1. per-address limit of the built-in mock: 15,000 events/s for 2 s (wall clock, 4 addresses)"
for limit in 1000 10 100000 10000000; do
    cat >"$work/limit-$limit.json" <<JSON
{"name": "limit-$limit", "seed": 7, "duration": "2s", "devices": 2000, "clock": "wall",
 "network": {"devicesPerSourceIP": 500}, "warmUp": {"enabled": false},
 "groups": [{"name": "load", "platform": "smartapppush", "os": "android", "workload": {"model": "open", "rate": "15000/s"}}],
 "behaviour": {"newInstallShare": 0, "tokenRotationsPerDay": 0},
 "platforms": {"smartapppush": {"retry": {"rateLimited": {"maxRetries": 0}}, "mock": {"rateLimitPerSecond": $limit, "latency": {"lognormal": {"median": "2ms", "sigma": 0.3}}}}}}
JSON
    echo "command: $bin run $work/limit-$limit.json --out DIR"
    kib=$(rss "$bin" run "$work/limit-$limit.json" --out "$work/out-$limit")
    python3 - "$work/out-$limit/summary.json" "$limit" "$kib" "${reference:-$kib}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
limit, kib, ref = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
codes = s["requests"].get("byStatus", {})
print(f"  limit {limit:>10,}/s  {s['requests']['sent']:>6,} requests  429s {codes.get('429', 0):>6,}  "
      f"max RSS {kib / 1024:6.1f} MiB  {kib / ref:.2f}x the 1,000/s reference")
PY
    reference=${reference:-$kib}
done

echo "== 2. a failing service, kept for the next launch: 16,000 devices x 12 simulated h, every request 503"
cat >"$work/keep.json" <<'JSON'
{"name": "503-keep", "seed": 4, "duration": "12h", "devices": 16000, "network": {"devicesPerSourceIP": 20},
 "groups": [{"name": "g", "platform": "smartapppush", "os": "android"}],
 "platforms": {"smartapppush": {"retry": {"serverError": {"whenExhausted": "keepForNextLaunch"}}, "mock": {"http503Rate": 1}}}}
JSON
validated=$("$bin" validate "$work/keep.json")
estimate=$(echo "$validated" | grep -o 'ulimit -v [0-9]*' | awk '{print $3}')
echo "command: ulimit -v $estimate && $bin run $work/keep.json --out DIR  (progress on)"
kib=$(rss sh -c "ulimit -v $estimate && exec $bin run $work/keep.json --out $work/keep")
python3 - "$work/keep/summary.json" "$kib" "$(echo "$validated" | sed -n 's/.*memory: about \([^ ]* [A-Za-z]*\) as one.*/\1/p')" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
kib = int(sys.argv[2])
dropped = s["dropped"]["byReason"]
print(f"  {s['requests']['sent']:,} requests, {s['queue']['pendingAtEnd']:,} waiting at the end, "
      f"{dropped.get('waitingCeiling', 0):,} dropped at the ceiling; max RSS {kib / 1024:.0f} MiB against the estimate of {sys.argv[3]}")
PY
