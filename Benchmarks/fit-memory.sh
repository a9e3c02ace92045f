#!/usr/bin/env bash
# `pushswarm fit` on a log of many lines from many addresses (issue 49's target: 10,000,000 lines
# from 1,000,000 addresses under 1 GiB). Generates the log first, in nginx's format with `$msec`
# and `$request_time`: LINES requests in time order over an hour, each from one of ADDRESSES client
# addresses (spread by a multiplicative hash), SmartAppPush's events (no campaign: what is measured is
# the log's reading and what the fits hold), a 429 every 8th. Prints the command, the wall time, CPU and the maximum resident set, and the
# ratio of that set to the lines (bytes a line) and to 1 GiB.
#
# Usage: Benchmarks/fit-memory.sh [LINES [ADDRESSES]]   (default 10,000,000 and 1,000,000;
# BINARY=path to use a built pushswarm instead of building the release one)
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-10000000}
addresses=${2:-1000000}
work=$(mktemp -d /tmp/pushswarm-fit-memory.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

binary=${BINARY:-}
if [ -z "$binary" ]; then
    swift build -c release --product pushswarm 2>&1 | tail -n 1
    binary=.build/release/pushswarm
fi
python3 - "$work/access.log" "$lines" "$addresses" <<'PY'
import sys
path, total, addresses = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
start = 1795716000.0
step = 3600.0 / total
with open(path, "w", buffering=1 << 22) as out:
    chunk = []
    for i in range(total):
        at = start + i * step
        who = (i * 2654435761) % addresses
        address = f"10.{who >> 16 & 255}.{who >> 8 & 255}.{who & 255}"
        request = "POST /events HTTP/1.1"
        status = 429 if i % 8 == 0 else 200
        chunk.append(f'{address} [26/Nov/2026:18:00:00 +0000] "{request}" {status} 0.002 {at + 0.002:.3f}\n')
        if len(chunk) == 100000:
            out.write("".join(chunk))
            chunk = []
    out.write("".join(chunk))
PY
format='$remote_addr [$time_local] "$request" $status $request_time $msec'
echo "log: $(wc -l < "$work/access.log") lines, $(du -h "$work/access.log" | cut -f1), $addresses addresses"
echo "command: $binary fit $work/access.log --nginx-format '$format' --out $work/fitted.json"
/usr/bin/time -f "%e %U %S %M" -o "$work/time" "$binary" fit "$work/access.log" --nginx-format "$format" --out "$work/fitted.json" > "$work/fit.out"
read -r wall user sys rss < "$work/time"
grep -E "lines, |per-address limit|^fit:" "$work/fit.out" || true
python3 - "$wall" "$user" "$sys" "$rss" "$lines" <<'PY'
import sys
wall, user, system, rss, lines = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print(f"wall {wall:.1f} s, CPU {user + system:.1f} s, max RSS {rss / 1024:.0f} MiB: {rss * 1024 / lines:.1f} bytes a line, {rss / 1048576:.2f} of 1 GiB")
PY
