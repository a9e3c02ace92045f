# Sourced by the benchmark scripts: the reference server and wrk's request, the same for all.
#
# start_nginx DIR [WORKERS]: starts Debian's nginx (nginx-light), WORKERS workers (default 1), on
# a free loopback port, answering every request with a fixed JSON body; sets `port` and
# `nginx_pid`. The caller stops it (kill "$nginx_pid"). write_wrk_post DIR: writes DIR/post.lua,
# one SmartAppPush event as a device sends it, POSTed by wrk. NGINX_BIN (default: the nginx on PATH or
# /usr/sbin/nginx) may name another binary, with a loader in front (Benchmarks/scale-bundle.sh).

need_tools() {
    for tool in "$@"; do
        if ! command -v "$tool" >/dev/null && ! [ -x "/usr/sbin/$tool" ]; then
            echo "needs $tool: apt-get install -y nginx-light wrk" >&2
            exit 2
        fi
    done
}

start_nginx() {
    local dir=$1 workers=${2:-1}
    local nginx_bin
    nginx_bin=${NGINX_BIN:-$(command -v nginx || echo /usr/sbin/nginx)}
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    cat > "$dir/nginx.conf" <<CONF
worker_processes $workers;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections 8192; }
worker_rlimit_nofile 20000;
http {
    access_log off;
    client_body_temp_path $dir;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$port reuseport backlog=4096;
        location / {
            default_type application/json;
            return 200 '{"status":"ok","deduplicated":false}';
        }
    }
}
CONF
    $nginx_bin -c "$dir/nginx.conf" -p "$dir"
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
