"""Captures real device traffic as seeds for the mock-http fuzz target: runs `pushswarm run
Tests/Fixtures/all-platforms-wall-vs-simulated.json` (a day compressed into seconds) in wall time for a few seconds against this script's HTTP server
on loopback, and writes the first requests of each (platform, method, path) into
Fuzz/corpus/mock-http/ as "METHOD /platform/path" + newline + body. The server answers each with
the built-in mock's answer, fetched from a `pushswarm mock` it starts, so devices go on as they
would (registrations, then events). Usage: python3 Fuzz/capture-seeds.py [path/to/pushswarm]."""
import hashlib, http.server, os, re, socket, subprocess, sys, threading, time, urllib.request

binary = sys.argv[1] if len(sys.argv) > 1 else ".build/release/pushswarm"
out = "Fuzz/corpus/mock-http"
os.makedirs(out, exist_ok=True)

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

mock_port, capture_port = free_port(), free_port()
mock = subprocess.Popen([binary, "mock", "--listen", f"127.0.0.1:{mock_port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
seen = {}

class Capture(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        target = self.path.split("?")[0]
        # One kind of request per method and path, ids and tokens in the path counted as one.
        key = (self.command, re.sub(r"/[0-9a-f]{16,}|/t/(show|click)/.*", "/*", target))
        if seen.get(key, 0) < 3:
            seen[key] = seen.get(key, 0) + 1
            seed = f"{self.command} {self.path}\n".encode() + body
            with open(os.path.join(out, hashlib.sha1(seed).hexdigest()[:16]), "wb") as f:
                f.write(seed)
        request = urllib.request.Request(f"http://127.0.0.1:{mock_port}{self.path}", data=body if body else None, method=self.command,
                                         headers={k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")})
        try:
            with urllib.request.urlopen(request) as answer:
                status, headers, data = answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as error:
            status, headers, data = error.code, error.headers, error.read()
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "connection", "transfer-encoding", "date", "server"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    do_GET = do_POST = do_PUT = do_DELETE = forward

server = http.server.ThreadingHTTPServer(("127.0.0.1", capture_port), Capture)
threading.Thread(target=server.serve_forever, daemon=True).start()
time.sleep(1)
try:
    targets = [f"--target={p}=http://127.0.0.1:{capture_port}/{p}" for p in ["smartapppush", "meiro", "pushexpress", "flocktory", "smartico"]]
    subprocess.run([binary, "run", "Tests/Fixtures/all-platforms-wall-vs-simulated.json", "--clock", "wall", "--duration", "20s", "--out", "/tmp/pushswarm-capture", "--quiet"] + targets,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
finally:
    server.shutdown()
    mock.terminate()
    mock.wait()
print(f"{sum(seen.values())} seeds from {len(seen)} kinds of request in {out}")
for key in sorted(seen): print(" ", *key)
