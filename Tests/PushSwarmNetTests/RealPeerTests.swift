import Foundation
import PushSwarmCore
@testable import PushSwarmNet
import Testing

/// PushSwarm's client and server against programs it did not write, started and stopped here.
/// Each test is skipped, with the reason, when its peer is not installed (`.ci/run` installs them).
@Suite(.serialized, .timeLimit(.minutes(2))) struct RealPeerTests {
    @Test(.enabled(if: which("nginx") != nil, "needs nginx (apt-get install nginx-light)"))
    func clientTalksToNginxWithKeepAliveAndChunkedBodies() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = freePort()
        try Array(String(repeating: "0123456789", count: 3000).utf8).withUnsafeBytes { try Data($0).write(to: directory.appendingPathComponent("big.txt")) }
        let config = """
            worker_processes 1; daemon off; pid \(directory.path)/nginx.pid; error_log \(directory.path)/error.log;
            events { worker_connections 256; }
            http {
              access_log \(directory.path)/access.log; client_body_temp_path \(directory.path);
              server {
                listen 127.0.0.1:\(port);
                location = /events { default_type application/json; return 200 '{"status":"ok"}'; }
                location = /big.txt { root \(directory.path); gzip off; chunked_transfer_encoding on; }
                location = /old { return 301 /events; }
              }
            }
            """
        try config.write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
        let nginx = try Peer(which("nginx")!, ["-c", directory.appendingPathComponent("nginx.conf").path, "-p", directory.path, "-e", directory.appendingPathComponent("error.log").path])
        defer { nginx.stop() }
        #expect(waitForPort(port))
        let client = HTTPClient(group: testGroup)
        let base = "http://127.0.0.1:\(port)"
        for index in 0..<5 {
            let result = await client.send(HTTPClientRequest(method: "POST", url: TargetURL("\(base)/events")!, body: Array("{\"n\":\(index)}".utf8)))
            #expect(result.response?.status == 200)
            #expect(result.response?.bodyText == #"{"status":"ok"}"#)
        }
        let big = await client.send(HTTPClientRequest(method: "GET", url: TargetURL("\(base)/big.txt")!))
        #expect(big.response?.body.count == 30_000)
        let moved = await client.send(HTTPClientRequest(method: "GET", url: TargetURL("\(base)/old")!))
        #expect(moved.response?.status == 301 || moved.response?.status == 302)
        let location = try #require(moved.response?.header("Location"))
        let next = try #require(TargetURL("\(base)/old")?.resolving(location))
        let landed = await client.send(HTTPClientRequest(method: "GET", url: next))
        #expect(landed.response?.bodyText == #"{"status":"ok"}"#)
        // Keep-alive: nginx logs every request; all came over few connections.
        nginx.stop()
        let log = try String(contentsOf: directory.appendingPathComponent("access.log"), encoding: .utf8)
        #expect(log.split(separator: "\n").count == 8)
    }

    @Test(.enabled(if: which("openssl") != nil, "needs openssl"))
    func tlsVerifiesCertificatesAgainstOpensslServer() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("key.pem").path
        let certificate = directory.appendingPathComponent("cert.pem").path
        let make = try Peer(which("openssl")!, [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "2",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
        ])
        make.wait()
        let port = freePort()
        // s_server says ACCEPT once it listens.
        let server = try Peer(which("openssl")!, ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key, "-www"], readyWhen: "ACCEPT")
        defer { server.stop() }
        #expect(await server.ready())
        let url = TargetURL("https://localhost:\(port)/")!

        // Verification on by default: a self-signed certificate is refused, with the reason.
        let strict = HTTPClient(group: testGroup, configuration: HTTPClient.Configuration(tls: try TLSContext()))
        let refused = await strict.send(HTTPClientRequest(method: "GET", url: url, timeoutNanoseconds: 5_000_000_000))
        #expect(refused.error?.reason == .tlsVerification)
        #expect(refused.error?.detail.contains("self-signed") == true)

        // Trusting its certificate (--ca-file) works, and SNI + host name checks pass.
        let trusting = HTTPClient(group: testGroup, configuration: HTTPClient.Configuration(tls: try TLSContext(caFile: certificate)))
        let trusted = await trusting.send(HTTPClientRequest(method: "GET", url: url, timeoutNanoseconds: 5_000_000_000))
        #expect(trusted.response?.status == 200)
        #expect(trusted.response?.bodyText.contains("s_server") == true)

        // The wrong name (the certificate is for localhost only) is refused even when trusted.
        let wrongName = await trusting.send(HTTPClientRequest(method: "GET", url: TargetURL("https://127.0.0.1:\(port)/")!, timeoutNanoseconds: 5_000_000_000))
        #expect(wrongName.error?.reason == .tlsVerification)

        // --insecure accepts it.
        let insecure = HTTPClient(group: testGroup, configuration: HTTPClient.Configuration(tls: try TLSContext(insecure: true)))
        let accepted = await insecure.send(HTTPClientRequest(method: "GET", url: url, timeoutNanoseconds: 5_000_000_000))
        #expect(accepted.response?.status == 200)
    }

    @Test(.enabled(if: pythonHasWebsockets() && which("openssl") != nil, "needs Python's websockets and openssl"))
    func secureWebSocketVerifiesTheServerCertificate() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-wss-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("key.pem").path
        let certificate = directory.appendingPathComponent("cert.pem").path
        try Peer(which("openssl")!, [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-days", "2",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
        ]).wait()
        let port = freePort()
        let script = """
            import asyncio, ssl, websockets
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain("\(certificate)", "\(key)")
            async def handler(ws):
                async for message in ws:
                    await ws.send("secure:" + message)
            async def main():
                async with websockets.serve(handler, "127.0.0.1", \(port), ssl=context):
                    print("ready", flush=True)
                    await asyncio.sleep(30)
            asyncio.run(main())
            """
        let server = try Peer(which("python3")!, ["-c", script], readyWhen: "ready")
        defer { server.stop() }
        #expect(await server.ready())
        let url = TargetURL("wss://localhost:\(port)/")!

        let refused = SocketRecorder()
        WebSocketClient.connect(to: url, on: testGroup.loops[0], tls: try TLSContext(), delegate: refused)
        do {
            _ = try await refused.opened()
            Issue.record("a self-signed certificate was accepted with verification on")
        } catch {
            #expect(error.reason == .tlsVerification)
        }

        let trusting = SocketRecorder()
        WebSocketClient.connect(to: url, on: testGroup.loops[1], tls: try TLSContext(caFile: certificate), delegate: trusting)
        let socket = try await trusting.opened()
        socket.loop.execute { socket.send(text: "hi") }
        #expect(await trusting.texts(count: 1) == ["secure:hi"])
        socket.loop.execute { socket.close() }
        #expect(await trusting.closed().code == 1000)
    }

    @Test(.enabled(if: pythonHasWebsockets(), "needs Python's websockets (pip install websockets)"))
    func webSocketClientTalksToPythonWebsocketsServer() async throws {
        let port = freePort()
        let script = """
            import asyncio, websockets
            async def handler(ws):
                async for message in ws:
                    await ws.send("echo:" + message)
                    if message == "ping-me":
                        await ws.ping()
            async def main():
                async with websockets.serve(handler, "127.0.0.1", \(port)):
                    print("ready", flush=True)
                    await asyncio.sleep(30)
            asyncio.run(main())
            """
        let server = try Peer(which("python3")!, ["-c", script], readyWhen: "ready")
        defer { server.stop() }
        #expect(await server.ready())
        let recorder = SocketRecorder()
        // Up to 1 MiB: the 70,005-byte echo takes the 8-byte length form.
        WebSocketClient.connect(to: TargetURL("ws://127.0.0.1:\(port)/")!, on: testGroup.loops[0], maxMessageBytes: 1 << 20, delegate: recorder)
        let socket = try await recorder.opened()
        socket.loop.execute {
            socket.send(text: "hello")
            socket.send(text: String(repeating: "x", count: 70_000))
            socket.send(text: "ping-me")
        }
        let messages = await recorder.texts(count: 3)
        try #require(messages.count == 3, "\(messages.map(\.count))")
        #expect(messages[0] == "echo:hello")
        #expect(messages[1].count == 70_005)
        #expect(messages[2] == "echo:ping-me")
        socket.loop.execute { socket.close(code: 1000, reason: "done") }
        let close = await recorder.closed()
        #expect(close.code == 1000)
        #expect(close.error == nil)
    }
}

/// Records what a WebSocket hears, for tests to await: each event wakes the waiters whose
/// condition it met (no polling). A test that waits for what never comes is ended by its suite's
/// time limit.
final class SocketRecorder: WebSocketDelegate, Sendable {
    private struct Heard: Sendable {
        var socket: WebSocket?
        var failure: NetError?
        var received: [String] = []
        var closeInfo: (code: UInt16?, error: NetError?)?
    }

    private let heard = Watched(Heard())

    func webSocketOpened(_ socket: WebSocket) { heard.update { $0.socket = socket } }
    func webSocket(_ socket: WebSocket, receivedText text: String) { heard.update { $0.received.append(text) } }
    func webSocketClosed(_ socket: WebSocket, code: UInt16?, reason: String, error: NetError?) { heard.update { $0.closeInfo = (code, error) } }
    func webSocketDidNotOpen(_ error: NetError) { heard.update { $0.failure = error } }

    func opened() async throws(NetError) -> WebSocket {
        let outcome: Result<WebSocket, NetError> = await heard.wait {
            if let socket = $0.socket { return .success(socket) }
            if let failure = $0.failure { return .failure(failure) }
            return nil
        }
        return try outcome.get()
    }

    func texts(count: Int) async -> [String] {
        await heard.wait { $0.received.count >= count ? $0.received : nil }
    }

    func closed() async -> (code: UInt16?, error: NetError?) {
        await heard.wait { $0.closeInfo }
    }
}
