"""Writes the seed corpora that are not captured traffic (see capture-seeds.py for those):
the JSON examples of the platform specs (../shared/specs, as the project's README points to;
only needed to regenerate: the seeds are committed), Smartico socket sessions built from spec
000's examples, hand-written HTTP messages and WebSocket frames, and the shipped scenarios.
Usage: python3 Fuzz/make-seeds.py [specs-directory]."""
import glob, hashlib, json, os, re, struct, sys

specs = sys.argv[1] if len(sys.argv) > 1 else "../shared/specs"
root = "Fuzz/corpus"

def write(target, data):
    os.makedirs(f"{root}/{target}", exist_ok=True)
    if isinstance(data, str): data = data.encode()
    with open(f"{root}/{target}/{hashlib.sha1(data).hexdigest()[:16]}", "wb") as f: f.write(data)

examples = {}
for path in sorted(glob.glob(f"{specs}/*.txt")):
    for block in re.findall(r"```json\s*\n(.*?)```", open(path, encoding="utf-8").read(), re.S):
        try: value = json.loads(block)
        except ValueError: continue  # examples with comments or placeholders
        examples.setdefault(os.path.basename(path)[:3], []).append(value)
        write("json", json.dumps(value))
# Smartico (spec 000): a session opens with the init message (cid 3), then the spec's others.
smartico = [m for m in examples.get("000", []) if isinstance(m, dict) and "cid" in m]
init = next((m for m in smartico if m.get("cid") == 3), None)
for message in smartico:
    lines = [json.dumps(init)] if init and message is not init else []
    write("mock-socket", "\n".join(lines + [json.dumps(message)]))
# Hand-written bodies for the requests a short captured run does not reach.
for line, body in [
    ("POST /smartapppush/devices/refresh-token", {"tenant_id": "pushswarm", "api_key": "pushswarm-demo-key", "old_token": "a", "new_token": "b"}),
    ("POST /smartapppush/pushes/opened", {"tenant_id": "pushswarm", "api_key": "pushswarm-demo-key", "tracking_token": "t-1"}),
    ("POST /meiro/meiro_mobile", {"user_id": "7c9e6679-7425-40de-944b-e07fc1f90ae7", "event_type": "fcm_registration_token_registered",
                                  "event_timestamp": "2026-03-02T10:00:00Z", "version": "1.0.0", "session_id": "s",
                                  "app": {"language": "en"}, "os": {"type": "android"}, "firebase": {"registration_token": "tok"},
                                  "event_data": {"fcm_registration_token_registration_timestamp": "2026-03-02T10:00:00Z"}}),
    ("POST /pushexpress/apps/pushswarm-demo/instances", {"ic_token": "ic-1", "ext_id": "user_1"}),
    ("POST /pushexpress/apps/pushswarm-demo/instances/0123456789abcdef01234567/events/notification", {"msg_id": "m-1", "event": "click"}),
]:
    write("mock-http", f"{line}\n{json.dumps(body)}")
write("mock-http", "GET /flocktory/t/show/?site_id=1&campaign_id=2\n")
# HTTP: the first byte picks the size of the pieces the parser is fed.
for message in [
    b"POST /events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
    b"POST /events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"GET /websocket/services HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: AAECAwQFBgcICQoLDA0ODw==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
]:
    write("http-request", b"\x07" + message)
for message in [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 120\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n",
    b"HTTP/1.0 200 OK\r\n\r\nread until close",
    # Interim answers before the final one (RFC 9110 section 15.2).
    b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
]:
    write("http-response", b"\x05" + message)
# --push-listen: FCM's messages:send bodies, within and over its 4,096-byte payload.
for body in [
    {"message": {"token": "tok-1", "data": {"tracking_token": "t-1", "campaign_id": "c"}, "notification": {"title": "Sale", "body": "Now"}}},
    {"message": {"token": "tok-2", "data": {"px.msg_id": "m-1"}}},
    {"message": {"token": "tok-3", "data": {"blob": "x" * 4090}}},
    {"message": {"topic": "news", "data": {"a": 1}}},
]:
    write("push-receiver", json.dumps(body))
# WebSocket frames: a client's are masked, a server's are not; the first byte picks the piece size.
def frame(opcode, payload, fin=True, mask=None):
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    bit = 0x80 if mask else 0
    head += bytes([bit | n]) if n < 126 else bytes([bit | 126]) + struct.pack(">H", n) if n < 65536 else bytes([bit | 127]) + struct.pack(">Q", n)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        head += mask
    return head + payload
key = b"\x01\x02\x03\x04"
for masked, target in [(key, "websocket-server"), (None, "websocket-client")]:
    write(target, b"\x03" + frame(1, b'{"cid":3}', mask=masked) + frame(9, b"p", mask=masked))
    write(target, b"\x10" + frame(1, b"frag", fin=False, mask=masked) + frame(0, b"ment", mask=masked) + frame(8, b"\x03\xe8bye", mask=masked))
    write(target, b"\x1f" + frame(2, bytes(300), mask=masked))
# A hostile server's answers to the client (first byte: bit 0 TLS, bit 1 reset at the end, bit 2
# read the request first, bits 3-7 the piece size): TLS alerts and flights cut short, HTTP cut
# after its headers or mid-chunk, garbage.
def record(kind, body): return bytes([kind, 3, 3]) + struct.pack(">H", len(body)) + body
extensions = b"\x00\x2b\x00\x02\x03\x04" + b"\x00\x33\x00\x24\x00\x1d\x00\x20" + bytes(range(32))
hello = b"\x03\x03" + bytes(range(32, 64)) + b"\x20" + bytes(32) + b"\x13\x01\x00" + struct.pack(">H", len(extensions)) + extensions
server_hello = record(0x16, b"\x02" + struct.pack(">I", len(hello))[1:] + hello)
for mode, answer in [
    (0x05, record(0x15, b"\x02\x28")),                       # TLS: handshake_failure alert
    (0x07, server_hello[:40]),                                 # TLS: a ServerHello cut short, then a reset
    (0x05, server_hello + record(0x17, bytes(64))),            # TLS 1.3: a ServerHello, then records no key opens
    (0x01, b"HTTP/1.1 200 OK\r\n\r\n"),                      # TLS: plain HTTP where TLS was due
    (0x04, b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"),  # closed mid-body
    (0x06, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"),     # reset after the headers began
    (0x0c, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"),
    (0x04, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
    (0x04, b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n"),
    (0x02, bytes(range(256))),                                 # garbage, then a reset
]:
    write("hostile-server", bytes([mode]) + answer)
# HPACK blocks (RFC 7541 Appendix C's requests and a response, a literal then its index, a size
# update); the first byte sizes the blocks the input is cut into.
for hexed in ["04828684418cf1e3c2e5f23a6ba0ab90f4ff", "03828684be5886a8eb10649cbf",
              "40488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
              "10400a637573746f6d2d6b65790d637573746f6d2d686561646572be", "023fe11f82"]:
    write("hpack", bytes.fromhex(hexed))
# HTTP/2 frames (the first byte picks the piece size): SETTINGS, HEADERS and CONTINUATION, padded
# DATA, PING, WINDOW_UPDATE, GOAWAY with debug data, an unknown type.
def h2(kind, flags, stream, payload): return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload
write("http2-frames", b"\x08" + h2(4, 0, 0, b"\x00\x02\x00\x00\x00\x00\x00\x04\x00\x10\x00\x00") + h2(4, 1, 0, b"")
      + h2(1, 0x20, 1, b"\x80\x00\x00\x00\xff\x82\x87") + h2(9, 4, 1, b"\x84") + h2(0, 9, 1, b"\x02ok\x00\x00"))
write("http2-frames", b"\x00" + h2(6, 0, 0, bytes(8)) + h2(8, 0, 0, b"\x00\x00\xff\xff") + h2(7, 0, 0, b"\x00\x00\x00\x03\x00\x00\x00\x00deploy") + h2(0xfa, 0, 9, b"x"))
write("http2-frames", b"\x40" + h2(3, 0, 1, b"\x00\x00\x00\x07") + h2(2, 0, 3, b"\x00\x00\x00\x01\x10") + h2(5, 4, 1, b"\x00\x00\x00\x02\x82"))
# A server's answers to a client's three streams (1, 3, 5): SETTINGS, responses with bodies, a
# PING, a reset, a GOAWAY; the first byte picks the piece size.
write("http2-client", b"\x10" + h2(4, 0, 0, b"\x00\x03\x00\x00\x00\x64") + h2(4, 1, 0, b"") + h2(1, 4, 1, b"\x88") + h2(0, 1, 1, b"{}")
      + h2(6, 0, 0, bytes(8)) + h2(3, 0, 3, b"\x00\x00\x00\x07") + h2(1, 5, 5, b"\x88") + h2(7, 0, 0, bytes(8)))
write("http2-client", b"\x03" + h2(4, 0, 0, b"") + h2(1, 0, 1, b"\x88") + h2(9, 0, 1, b"") + h2(9, 4, 1, b"") + h2(0, 0, 1, b"ab") + h2(8, 0, 1, b"\x00\x00\x00\x01"))
# A client's frames to the mock's server (after the preface): SETTINGS, a GET, a POST with its
# body in two DATA frames, a PING, a WINDOW_UPDATE, a reset, a GOAWAY; the first byte picks the
# piece size, the second the answers' body.
write("http2-server", b"\x10\x00" + h2(4, 0, 0, b"\x00\x02\x00\x00\x00\x00") + h2(1, 5, 1, b"\x82\x86\x84\x41\x01\x78")
      + h2(1, 4, 3, b"\x83\x86\x84\x41\x01\x78") + h2(0, 0, 3, b"{") + h2(0, 1, 3, b"}") + h2(6, 0, 0, bytes(8))
      + h2(8, 0, 0, b"\x00\x01\x00\x00") + h2(1, 5, 5, b"\x82\x86\x84\x41\x01\x78") + h2(3, 0, 5, b"\x00\x00\x00\x08") + h2(7, 0, 0, bytes(8)))
write("http2-server", b"\x02\x01" + h2(4, 0, 0, b"") + h2(1, 1, 1, b"\x82\x86\x84") + h2(9, 4, 1, b"\x41\x01\x78") + h2(1, 5, 3, b"\x82\x86\x84\x41\x01\x78"))
for path in sorted(glob.glob("Scenarios/*.json")):
    if not path.endswith("schema.json"): write("scenario", open(path, "rb").read())
print({target: len(os.listdir(f"{root}/{target}")) for target in sorted(os.listdir(root))})
