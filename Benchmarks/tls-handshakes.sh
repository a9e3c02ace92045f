#!/usr/bin/env bash
# Issue 50: the device path with each install's own connections over TLS against nginx, every
# request a new connection and a full handshake (nginx closes each connection after its answer
# and keeps no session), against `openssl s_time -new` on the same nginx as the reference, process
# for process: as many s_time processes at once as the run has partitions. Prints the commands,
# the rate the run held, its new handshakes a second, and their ratio to s_time's.
#
#   bash Benchmarks/tls-handshakes.sh            # SECONDS_RUN=10 PARTITIONS=2 by default
#
# The device path steps from a fifth of the reference's rate by tenths until a step does not hold
# (its generator saturated, an error, a request left pending); the highest that held is its figure.
#
# Traffic stays on loopback; every run is bounded by its duration.
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/nginx-peer.sh
need_tools nginx openssl
seconds=${SECONDS_RUN:-10}
partitions=${PARTITIONS:-2}
work=$(mktemp -d)
nginx_pid=
trap '[ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null; rm -rf "$work"' EXIT

swift build -c release --product pushswarm >/dev/null
binary=.build/release/pushswarm

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" \
    -days 2 -subj /CN=localhost -addext subjectAltName=DNS:localhost 2>/dev/null
start_nginx "$work" 1 "$work/cert.pem" "$work/key.pem" "keepalive_timeout 0; ssl_session_tickets off; ssl_session_cache off;"
echo "nginx: 1 worker, TLS (P-256 certificate), keepalive_timeout 0, no session tickets or cache, on 127.0.0.1:$port"

# The reference: openssl s_time, a new full handshake per connection, one process per partition.
# s_time prints "N connections in Ts; R connections/user sec": N over T is its wall rate.
s_time() {
    local timers=()
    for index in $(seq "$partitions"); do
        openssl s_time -connect "localhost:$port" -new -time "$seconds" -CAfile "$work/cert.pem" > "$work/s_time.$index" 2>&1 &
        timers+=($!)
    done
    wait "${timers[@]}"
    cat "$work"/s_time.* | python3 -c '
import re, sys
total = 0.0
for line in sys.stdin:
    match = re.search(r"^([0-9]+) connections in ([0-9.]+)s", line)
    if match: total += int(match.group(1)) / float(match.group(2))
print(f"{total:.1f}")'
}
echo "reference: $partitions x openssl s_time -connect localhost:$port -new -time $seconds -CAfile cert.pem"
reference=$(s_time)
echo "reference: $reference new handshakes a second (connections over wall seconds, summed)"

# tls_run RATE: one run at RATE/s; prints its figures, exits 0 if it held (no generator
# saturation, no error, nothing pending).
tls_run() {
    local rate=$1
    sed "s/RATE/$rate/" Benchmarks/tls-handshakes.json > "$work/scenario-$rate.json"
    read -r cpu rss wall < <(measure "$binary" run "$work/scenario-$rate.json" --clock wall --target "https://localhost:$port" --ca-file "$work/cert.pem" \
        --duration "${seconds}s" --partitions "$partitions" --out "$work/run-$rate" 2>"$work/run-$rate.stderr")
    python3 - "$work/run-$rate/summary.json" "$rate" "$seconds" "$reference" "$cpu" "$rss" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
rate, length, reference, cpu, rss = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
c, r, g = s.get("counters", {}), s["requests"], s["generator"]
ok = r["byStatus"].get("200", 0)
full, resumed = c.get("connections.handshakes.full", 0), c.get("connections.handshakes.resumed", 0)
errors = r["transportErrors"] + r["timeouts"]
pending = s.get("queue", {}).get("pendingAtEnd", 0) + r.get("inFlightAtEnd", 0)
held = not g["saturated"] and errors == 0 and pending == 0
print(f"  offered {rate:,}/s: 200s {ok:,} ({ok / length:,.0f}/s), errors {errors}, handshakes {full:,} full + {resumed:,} resumed "
      f"({full / length:,.0f} new a second, {full / length / reference:.2f} of the reference), lag p99 {g['lagP99Ms']} ms, "
      f"CPU {cpu:.1f} s, max RSS {rss // 1024} MiB -> {'held' if held else 'did not hold'}")
sys.exit(0 if held else 1)
PY
}

# Steps of a tenth of the reference from a fifth, until one does not hold.
echo "device path: $binary run tls-handshakes.json --clock wall --target https://localhost:$port --ca-file cert.pem --duration ${seconds}s --partitions $partitions, at RATE/s:"
best=0
for share in 20 30 40 50 60 70 80 90 100; do
    rate=$(python3 -c "print(int($reference * $share / 100))")
    if tls_run "$rate"; then best=$rate; else break; fi
done
# The reference again after the device runs, on the machine as it is now: the faster of the two
# counts (as engine.sh does with wrk), so that a quieter moment does not flatter the device path.
after=$(s_time)
echo "reference after: $after new handshakes a second"
reference=$(python3 -c "print(max($reference, $after))")
python3 -c "print(f'highest rate held: {$best:,} new full handshakes a second, {$best / $reference:.2f} of openssl s_time -new ({$reference:,.0f} a second, the faster of its two runs, $partitions processes)')"
