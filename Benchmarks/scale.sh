#!/usr/bin/env bash
# How PushSwarm scales with cores (issue 34), on whatever machine it runs; every command and
# figure is printed:
#
#   1. The simulated lifecycle day (each simulated run in the default mode: progress on, its
#      output to a file): Benchmarks/engine-quickstart.json, 200,000 devices x 24 h, at
#      P = 1, 2, 4, ... up to the core count: wall time, CPU, speedup over P = 1, and whether every
#      P sent the same requests.
#   2. The simulated open workload: Benchmarks/open-workload.json (80,000 devices, 100,000/s for
#      60 s), at P = 1, 2, 4, ... up to the core count and at least 16: wall, CPU, speedup, and CPU
#      against P = 1's (a partition does only its own share of the arrival work).
#   3. Rate accuracy: arrivals counted in simulated runs at rates whose intervals are not whole
#      microseconds, against rate x duration.
#   4. Wall clock, through devices: nginx with cores/2 workers (`return 200` JSON) on loopback,
#      wrk -t(cores/2) -c(64 x cores/2) with a SmartAppPush-shaped POST, then PushSwarm's device
#      path (Benchmarks/device-path.json) at P = cores/2 in the default mode (live progress on,
#      its output to a file, as a user or a CI job runs it) and with --quiet: the highest offered
#      rate that held (no lag p99 over 100 ms, no missed start, nothing shed or pending), in
#      steps of a tenth of wrk's rate and one halfway past the last that held, as a ratio to wrk's.
#
# Tests never time anything; this script does. Machines of this kind differ about 3x in speed,
# so compare the ratios, not the absolute figures.
#
# It needs no Swift toolchain once the release binary is built: Benchmarks/scale-bundle.sh packs
# the binary, nginx, wrk, their shared libraries and the loader into one archive; on the other
# machine, unpack it and run `bash run-scale.sh` there (see Benchmarks/README.md).
#
# Usage: Benchmarks/scale.sh        PUSHSWARM, NGINX_BIN, WRK: the binaries (each may be a command
#                                   with a loader in front); SECONDS_PER_RUN=6 for the wall runs;
#                                   SKIP=1,2 leaves out sections; MAX_P caps the partitions.
set -euo pipefail
cd "$(dirname "$0")/.."
. Benchmarks/nginx-peer.sh
seconds=${SECONDS_PER_RUN:-6}
skip=",${SKIP:-},"
cores=$(nproc)
max_p=${MAX_P:-$cores}
half=$(( cores / 2 > 0 ? cores / 2 : 1 ))

if [ -z "${PUSHSWARM:-}" ]; then
    if [ ! -x .build/release/pushswarm ] || command -v swift >/dev/null; then swift build -c release 2>&1 | tail -n 1; fi
    PUSHSWARM=.build/release/pushswarm
fi
WRK=${WRK:-wrk}
work=$(mktemp -d /tmp/pushswarm-scale.XXXXXX)
nginx_pid=""
cleanup() {
    [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

echo "machine: $cores cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); binary: $PUSHSWARM"
partition_counts() {
    local top=$1 p=1 list=""
    while [ "$p" -lt "$top" ]; do list="$list $p"; p=$(( p * 2 )); done
    echo "$list $top"
}

# One simulated scenario at each P: wall, CPU, speedup, CPU against P = 1, same requests.
scaling() {
    local name=$1 top=$2
    shift 2
    local base_wall="" base_cpu="" base_requests=""
    for p in $(partition_counts "$top"); do
        [ "$p" = 1 ] && echo "command: $PUSHSWARM run $* --partitions P --out DIR  (progress on, its output to a file)"
        read -r cpu rss wall < <(measure "$PUSHSWARM" run "$@" --partitions "$p" --out "$work/$name-$p" 2>"$work/$name-$p.stderr")
        requests=$(summary "$work/$name-$p/summary.json" 'json.dumps(s["requests"], sort_keys=True)')
        sent=$(summary "$work/$name-$p/summary.json" 's["requests"]["sent"]')
        if [ -z "$base_wall" ]; then base_wall=$wall; base_cpu=$cpu; base_requests=$requests; fi
        same=$([ "$requests" = "$base_requests" ] && echo "same requests as P=1" || echo "REQUESTS DIFFER from P=1")
        python3 -c "print(f'  P={$p:<3} {$sent:>10,} requests  wall {$wall:7.2f} s  CPU {$cpu:7.2f} s  max RSS {$rss // 1024:,} MiB  speedup {$base_wall / $wall:5.2f}x  CPU {$cpu / $base_cpu:4.2f}x of P=1  ($same)')"
    done
}

if [[ $skip != *,1,* ]]; then
    echo
    echo "== 1. simulated lifecycle day: 200,000 devices x 24 h"
    scaling day "$max_p" Benchmarks/engine-quickstart.json --devices 200000 --duration 24h
fi

if [[ $skip != *,2,* ]]; then
    echo
    echo "== 2. simulated open workload: 80,000 devices, 100,000/s for 60 s"
    open_top=$(( max_p > 16 ? max_p : 16 ))
    scaling open "$open_top" Benchmarks/open-workload.json
fi

if [[ $skip != *,3,* ]]; then
    echo
    echo "== 3. rate accuracy: arrivals counted in simulated runs against rate x duration (target: within 0.1 %)"
    echo "command: $PUSHSWARM run open-workload.json (rate and steps set) --devices 5000 --duration D --out DIR --quiet"
    while read -r label workload duration expected; do
        python3 - "$work/rate.json" "$workload" <<'PY'
import json, sys
s = json.load(open("Benchmarks/open-workload.json"))
s.pop("$schema", None)
s["groups"][0]["workload"] = json.loads(sys.argv[2])
json.dump(s, open(sys.argv[1], "w"))
PY
        $PUSHSWARM run "$work/rate.json" --devices 5000 --duration "$duration" --out "$work/rate" --quiet >/dev/null
        python3 - "$work/rate/summary.json" "$label" "$duration" "$expected" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
w = s.get("workload", {})
offered = w.get("arrivals", 0)
expected = float(sys.argv[4])
print(f"  {sys.argv[2]:<34} for {sys.argv[3]:>5}: expected {expected:>12,.1f}, offered {offered:>10,} ({(offered - expected) / expected * 100:+.3f} %)")
PY
    done <<'RATES'
1,234/s {"model":"open","rate":"1234/s"} 20s 24680
123,457/s {"model":"open","rate":"123457/s"} 2s 246914
777,777/s {"model":"open","rate":"777777/s"} 500ms 388888.5
3,333,333/s {"model":"open","rate":"3333333/s"} 100ms 333333.3
ramp_0_to_777,777/s_over_500ms {"model":"open","rate":{"from":0,"to":"777777/s","over":"500ms"}} 500ms 194444.25
steps_123,457/s_1s_then_3,333,333/s {"model":"open","steps":[{"rate":"123457/s","for":"1s"},{"rate":"3333333/s","for":"100ms"}]} 1100ms 456790.3
RATES
fi

if [[ $skip != *,4,* ]]; then
    echo
    echo "== 4. wall clock through devices at P = $half against wrk -t$half, the same nginx ($half workers)"
    [ -z "${NGINX_BIN:-}" ] && need_tools nginx
    [ "$WRK" = wrk ] && need_tools wrk
    start_nginx "$work" "$half"
    write_wrk_post "$work"
    connections=$(( 64 * half ))
    per_address=$half  # device-path.json's 64 addresses hold as many connections as wrk
    wrk_run() { (cd "$work" && $WRK -t"$half" -c"$connections" -d"${seconds}s" -s post.lua "http://127.0.0.1:$port/events" | awk '/Requests\/sec/ {print $2}'); }
    echo "command: $WRK -t$half -c$connections -d${seconds}s -s post.lua http://127.0.0.1:$port/events"
    wrk_rate=$(wrk_run)
    echo "wrk: $wrk_rate requests/s"

    device_binary=$PUSHSWARM
    for mode in default quiet; do
        if [ "$mode" = default ]; then
            echo "command: $PUSHSWARM run device-path.json (rate set) --clock wall --target http://127.0.0.1:$port --duration ${seconds}s --partitions $half --out DIR  (progress on, output to a file)"
        else
            echo "command: the same with --quiet"
        fi
        highest_held "$half" "$mode" "$wrk_rate"
        eval "best_$mode=$best"
    done
    echo "command: $WRK -t$half -c$connections -d${seconds}s -s post.lua (again, after the device runs)"
    wrk_after=$(wrk_run)
    echo "wrk: $wrk_after requests/s after the device runs ($wrk_rate before)"
    python3 -c "
w = max($wrk_rate, $wrk_after)
print(f'P=$half, default mode (progress on): {$best_default:,}/s held = {$best_default / w:.2f} x wrk -t$half ({w:,.0f}/s)')
print(f'P=$half, --quiet: {$best_quiet:,}/s held = {$best_quiet / w:.2f} x wrk')
print(f'default mode against --quiet: {$best_default / max(1, $best_quiet):.2f}')
"
fi
