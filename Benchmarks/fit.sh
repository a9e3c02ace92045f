#!/usr/bin/env bash
# `pushswarm fit` on a large incident log (issue 37's target: a 1,000,000-line log in under 10 s on
# 2 cores). Generates the log first, in the format of an nginx `log_format` with `$msec` and
# `$request_time`: LINES requests of SmartAppPush traffic from 2,000 NAT addresses (a steady load
# of events, then a campaign's burst of taps a third of the way in), each address behind nginx's
# `limit_req rate=RATEr/s burst=BURST nodelay` (the generator applies nginx's arithmetic), 429s
# retried 1, 2, 4 and 8 s after their answers. Prints the command (the whole fit: reading, the
# limit, the retry rule, the campaign, the scenario written), the wall time, CPU, max RSS, the lines
# a second, and what the fit found against what the generator applied.
#
# Usage: Benchmarks/fit.sh [LINES]   (default 1,000,000; RATE=8 BURST=12 to change the limit)
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-1000000}
rate=${RATE:-8}
burst=${BURST:-12}
work=$(mktemp -d /tmp/pushswarm-fit.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

swift build -c release --product pushswarm 2>&1 | tail -n 1
python3 - "$work/access.log" "$lines" "$rate" "$burst" <<'PY'
import heapq, random, sys
path, total, rate, burst = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
random.seed(37)
addresses = [f"10.{i // 250}.{i % 250}.1" for i in range(2000)]
start = 1795716000.0
# First attempts: a steady load near a third of the addresses' limit, and a burst of taps (two
# requests each, most within a few seconds) a third of the way in; retries fill the rest, and
# writing stops at LINES.
first = total
burst_share = 0.3
length = first * (1 - burst_share) / (len(addresses) * rate * 0.3)
events = []
for _ in range(int(first * (1 - burst_share))):
    events.append((start + random.random() * length, random.randrange(len(addresses)), "/events", 0))
campaign = start + length / 3
for _ in range(int(first * burst_share) // 2):
    at = campaign + random.lognormvariate(0.7, 0.5)
    who = random.randrange(len(addresses))
    events.append((at, who, "/pushes/opened", 0))
    events.append((at + 0.05, who, "/events", 0))
heapq.heapify(events)
state = {}
written = 0
with open(path, "w") as out:
    while events and written < total:
        at, who, path_, attempt = heapq.heappop(events)
        now = int(at * 1000)
        excess, last = state.get(who, (None, None))
        if excess is None:
            admitted, state[who] = True, (0, now)
        else:
            elapsed = max(0, now - last)
            value = max(0, excess - int(rate * 1000) * elapsed // 1000 + 1000)
            admitted = value <= burst * 1000
            if admitted:
                state[who] = (value, now if elapsed else last)
        duration = 0.001 + random.random() * 0.004
        end = at + duration
        seconds = int(end)
        import time
        local = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(seconds))
        out.write(f'{addresses[who]} [{local}] "POST {path_} HTTP/1.1" {200 if admitted else 429} {duration:.3f} {end:.3f}\n')
        written += 1
        if not admitted and attempt < 4:
            heapq.heappush(events, (end + 2 ** attempt, who, path_, attempt + 1))
print(f"generated {written:,} lines: {len(addresses):,} addresses, limit_req rate={rate:g}r/s burst={burst} nodelay, retries after 1, 2, 4, 8 s")
PY
format='$remote_addr [$time_local] "$request" $status $request_time $msec'
echo "command: .build/release/pushswarm fit $work/access.log --nginx-format '$format' --out $work/incident.json"
python3 - "$work/access.log" "$format" "$(wc -l < "$work/access.log")" <<'PY'
import resource, subprocess, sys, time
path, format, lines = sys.argv[1], sys.argv[2], int(sys.argv[3])
began = time.time()
done = subprocess.run([".build/release/pushswarm", "fit", path, "--nginx-format", format, "--out", path + ".json"], capture_output=True, text=True)
wall = time.time() - began
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
if done.returncode != 0:
    sys.exit(f"fit failed ({done.returncode}): {done.stderr}")
found = [line for line in done.stdout.splitlines() if line.startswith(("per-address limit", "retry rule", "campaign", "fit:"))]
print(f"fit of {lines:,} lines: {wall:.2f} s wall, {usage.ru_utime + usage.ru_stime:.2f} s CPU, max RSS {usage.ru_maxrss // 1024} MiB, {lines / wall:,.0f} lines/s (target: under 10 s)")
print("\n".join(found) if found else "nothing fitted")
PY
