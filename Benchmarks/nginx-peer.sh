# Sourced by the benchmark scripts: the reference server and wrk's request, the same for all, and
# the runs engine.sh and scale.sh share (measure, summary, device_run, highest_held).
#
# start_nginx DIR [WORKERS] [CERT KEY [DIRECTIVES]]: starts Debian's nginx (nginx-light), WORKERS
# workers (default 1), on a free loopback port, answering every request with a fixed JSON body;
# with CERT and KEY over TLS, with DIRECTIVES (nginx's, such as `keepalive_timeout 0;`) added to
# its http block; sets `port` and `nginx_pid`. The caller stops it (kill "$nginx_pid"). write_wrk_post DIR: writes DIR/post.lua,
# one SmartAppPush event as a device sends it, POSTed by wrk. NGINX_BIN (default: the nginx on PATH or
# /usr/sbin/nginx) may name another binary, with a loader in front (Benchmarks/scale-bundle.sh).
# NGINX_HTTP2=1 adds `http2` to its listen: HTTP/2 by ALPN over TLS, h2c with prior knowledge
# without it.

need_tools() {
    for tool in "$@"; do
        if ! command -v "$tool" >/dev/null && ! [ -x "/usr/sbin/$tool" ]; then
            echo "needs $tool: apt-get install -y nginx-light wrk nghttp2-client" >&2
            exit 2
        fi
    done
}

start_nginx() {
    local dir=$1 workers=${2:-1} cert=${3:-} key=${4:-} extra=${5:-}
    local nginx_bin ssl="" certificates=""
    nginx_bin=${NGINX_BIN:-$(command -v nginx || echo /usr/sbin/nginx)}
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    if [ -n "$cert" ]; then
        ssl=" ssl"
        certificates="ssl_certificate $cert; ssl_certificate_key $key;"
    fi
    cat > "$dir/nginx.conf" <<CONF
worker_processes $workers;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 8192; }
worker_rlimit_nofile 20000;
http {
    access_log off;
    client_body_temp_path $dir; proxy_temp_path $dir; fastcgi_temp_path $dir; uwsgi_temp_path $dir; scgi_temp_path $dir;
    keepalive_requests 1000000;
    $extra
    server {
        listen 127.0.0.1:$port$ssl$([ "${NGINX_HTTP2:-0}" = 1 ] && echo " http2") reuseport backlog=4096;
        $certificates
        location / {
            default_type application/json;
            return 200 '{"status":"ok","deduplicated":false}';
        }
    }
}
CONF
    $nginx_bin -e "$dir/error.log" -c "$dir/nginx.conf" -p "$dir"
    nginx_pid=$(cat "$dir/nginx.pid")
    for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
}

write_wrk_post() {
    cat > "$1/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"tenant_id":"demo-tenant","api_key":"sap_demo_api_key","event_name":"screen_viewed","event_time":"2026-03-02T19:04:11.250+03:00","device_token":"dGVzdC10b2tlbi0wMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAw","platform":"android","push_permission_granted":true,"timezone":"Europe/Istanbul","language":"tr","country":"TR","session_id":"5f0c6a52-8a53-4a65-9b0e-1f3f1d2a7c41","params":{"screen_name":"home"},"context":{"app_version":"2.1.0","os_version":"14","device_model":"Pixel 7"}}'
LUA
}

# measure COMMAND ARGS...: runs a command and prints "cpu_seconds max_rss_kib wall_seconds" for it
# (children's rusage). COMMAND may be a binary with a loader in front (scale-bundle.sh): it is
# split as a shell would. Its standard output is dropped; standard error goes where the caller's does.
measure() {
    python3 - "$@" <<'PY'
import resource, shlex, subprocess, sys, time
start = time.time()
done = subprocess.run(shlex.split(sys.argv[1]) + sys.argv[2:], stdout=subprocess.DEVNULL)
wall = time.time() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
if done.returncode not in (0, 99):
    sys.exit(f"command failed with {done.returncode}: {' '.join(sys.argv[1:])}")
print(f"{usage.ru_utime + usage.ru_stime:.3f} {usage.ru_maxrss} {wall:.3f}")
PY
}

# summary FILE EXPRESSION: prints EXPRESSION of summary.json FILE (as `s`).
summary() { python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

# device_run RATE PARTITIONS NAME [MODE]: one run of `$device_json` (default
# Benchmarks/device-path.json) at RATE/s through
# `$device_binary` against nginx on `$port`, for `$seconds` s, in `$work`, its 64 addresses holding
# `$per_address` connections each (default 1: 64 in all, as many as wrk -c64 holds); in the default mode (live
# progress on, its output to NAME.stderr, as a user or a CI job runs it) unless MODE is quiet.
# Prints its figures, leaves its max RSS (KiB) in NAME.rss, and exits 0 if it held: no generator
# saturation, lag p99 under 100 ms, no missed start, nothing shed or pending.
device_run() {
    local rate=$1 partitions=$2 name=$3 mode=${4:-default}
    local extra=()
    [ "$mode" = quiet ] && extra=(--quiet)
    sed "s/RATE/$rate/; s/CONNS/${per_address:-1}/" "${device_json:-Benchmarks/device-path.json}" > "$work/$name.json"
    read -r cpu rss wall < <(measure "$device_binary" run "$work/$name.json" --clock wall --target "http://127.0.0.1:$port" --duration "${seconds}s" \
        --partitions "$partitions" --out "$work/$name" "${extra[@]}" 2>"$work/$name.stderr")
    echo "$rss" > "$work/$name.rss"
    python3 - "$work/$name/summary.json" "$rate" "$partitions" "$cpu" "$rss" "$wall" "$seconds" "$mode" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
rate, partitions, cpu, rss, wall, length = int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
g, r, w = s["generator"], s["requests"], s.get("workload", {})
pending = s.get("queue", {}).get("pendingAtEnd", 0) + r.get("inFlightAtEnd", 0)
ok200 = r["byStatus"].get("200", 0)
held = not g["saturated"] and g["lagP99Ms"] < 100 and g["missedStarts"] == 0 and w.get("shed", 0) == 0 and pending == 0
print(f"  P={partitions} ({sys.argv[8]}) offered {rate:,}/s: sent {r['sent']:,} ({r['sent'] / length:,.0f}/s), 200s {ok200:,}, errors {r['transportErrors'] + r['timeouts']}, "
      f"latency p99 {s['operations']['smartapppush.events']['latencyMs']['p99']} ms, lag p99 {g['lagP99Ms']} ms, CPU busy {g.get('cpuBusy', '?')}, "
      f"shed {w.get('shed', 0):,}, missed starts {g['missedStarts']:,}, pending {pending:,}, saturated {g['saturated']}, "
      f"CPU {cpu:.1f} s, max RSS {rss // 1024} MiB, wall {wall:.1f} s -> {'held' if held else 'did not hold'}")
sys.exit(0 if held else 1)
PY
}

# highest_held PARTITIONS MODE WRK_RATE: device runs at 20, 30, ... 100 % of WRK_RATE until one does
# not hold, then one halfway between the last that held and it (the figure to 5 % of wrk's rate
# rather than 10 %); sets `best` to the highest offered rate that held (0: none).
highest_held() {
    local partitions=$1 mode=$2 wrk_rate=$3 failed=0 share rate
    best=0
    for share in 20 30 40 50 60 70 80 90 100; do
        rate=$(python3 -c "print(int($wrk_rate * $share / 100))")
        if device_run "$rate" "$partitions" "p$partitions-$mode-$share" "$mode"; then best=$rate; else failed=$rate; break; fi
    done
    if [ "$best" -gt 0 ] && [ "$failed" -gt 0 ]; then
        rate=$(( (best + failed) / 2 ))
        if device_run "$rate" "$partitions" "p$partitions-$mode-mid" "$mode"; then best=$rate; fi
    fi
}
