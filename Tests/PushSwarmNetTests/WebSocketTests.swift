import Foundation
import PushSwarmCore
@testable import PushSwarmNet
import Testing

/// PushSwarm's WebSocket client against its own server, and the server against frames a correct
/// client never sends.
///
/// The limit catches a wait that never returns. It counts from the test's start in the
/// cooperative pool that every suite shares: in CI's first minutes, every suite at once on two
/// cores, a session test that takes 30 ms alone once waited 140 s for its turns, so the limit is
/// well past that.
@Suite(.timeLimit(.minutes(5))) struct WebSocketTests {
    final class Echo: WebSocketDelegate {
        func webSocketOpened(_ socket: WebSocket) { socket.ping([1, 2, 3]) }
        func webSocket(_ socket: WebSocket, receivedText text: String) {
            if text == "bye" { socket.close(code: 4000, reason: "asked") } else { socket.send(text: text.uppercased()) }
        }
        func webSocketClosed(_ socket: WebSocket, code: UInt16?, reason: String, error: NetError?) {}
    }

    /// Takes messages up to 1 MiB, so the 8-byte length form is exercised.
    private func echoServer() throws -> HTTPServer {
        try startServer(HTTPServer.Configuration(maxWebSocketMessageBytes: 1 << 20)) { request, responder in
            if request.isWebSocketUpgrade {
                responder.acceptWebSocket(Echo())
            } else {
                responder.respond(Response(status: 404))
            }
        }
    }

    @Test func clientAndServerExchangeTextAndCloseCleanly() async throws {
        let server = try echoServer()
        defer { server.stop() }
        let recorder = SocketRecorder()
        WebSocketClient.connect(
            to: TargetURL("ws://127.0.0.1:\(server.port)/socket")!, on: testGroup.loops[1], maxMessageBytes: 1 << 20, delegate: recorder
        )
        let socket = try await recorder.opened()
        socket.loop.execute {
            socket.send(text: "hello")
            socket.send(text: String(repeating: "ü", count: 40_000))
            socket.send(text: "bye")
        }
        let texts = await recorder.texts(count: 2)
        #expect(texts.first == "HELLO")
        #expect(texts.last == String(repeating: "Ü", count: 40_000))
        // The server's close (4000) is answered and reported with its code.
        let close = await recorder.closed()
        #expect(close.code == 4000)
        #expect(close.error == nil)
    }

    @Test func aSocketToAHostNameConnectsThroughTheResolversCache() async throws {
        let server = try echoServer()
        defer { server.stop() }
        // localhost comes from /etc/hosts: no query leaves the machine.
        let origin = try #require(TargetURL("ws://localhost:\(server.port)/socket")).origin
        let address = try Resolver.address(of: origin).get()
        #expect(address.ip.isLoopback && address.port == server.port)
        let recorder = SocketRecorder()
        WebSocketClient.connect(to: TargetURL("ws://localhost:\(server.port)/socket")!, on: testGroup.loops[0], delegate: recorder)
        let socket = try await recorder.opened()
        socket.loop.execute { socket.send(text: "by name") }
        #expect(await recorder.texts(count: 1) == ["BY NAME"])
        #expect(try Resolver.address(of: origin).get() == address, "the same answer, from the cache")
    }

    @Test func handshakeToAPlainHTTPEndpointFailsWithTheStatus() async throws {
        let server = try startServer { _, responder in responder.respond(Response(status: 404)) }
        defer { server.stop() }
        let recorder = SocketRecorder()
        WebSocketClient.connect(to: TargetURL("ws://127.0.0.1:\(server.port)/")!, on: testGroup.loops[0], delegate: recorder)
        do {
            _ = try await recorder.opened()
            Issue.record("a 404 opened a WebSocket")
        } catch {
            #expect(error.reason == .webSocketHandshake)
            #expect(error.detail.contains("404"))
        }
    }

    @Test func serverClosesWith1002OnAnUnmaskedClientFrame() throws {
        // RFC 6455 section 5.1: "The server MUST close the connection upon receiving a frame that
        // is not masked", with status code 1002 (protocol error).
        let server = try echoServer()
        defer { server.stop() }
        let key = Data((0..<16).map { UInt8($0) }).base64EncodedString()
        let handshake = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n"
        let unmasked: [UInt8] = [0x81, 0x02, 0x68, 0x69]
        let reply = rawExchange(port: server.port, send: [Array(handshake.utf8), unmasked], answeredInTurn: true)
        let text = String(decoding: reply, as: UTF8.self)
        #expect(text.hasPrefix("HTTP/1.1 101"))
        #expect(text.contains("Sec-WebSocket-Accept: \(WebSocketHandshake.acceptValue(for: key))"))
        // The close frame: FIN + opcode 8, then the code 1002.
        let closeFrame = reply.firstRange(of: [0x88])
        #expect(closeFrame != nil)
        if let start = closeFrame?.lowerBound, reply.count >= start + 4 {
            #expect(UInt16(reply[start + 2]) << 8 | UInt16(reply[start + 3]) == 1002)
        }
    }

    /// A finished WebSocket session leaves the server: before, the upgraded connection never
    /// told the server it ended, so each session stayed in its table (≈ 0.8 KB of RSS each, no
    /// plateau) and `connections_open`/`websockets_open` only grew.
    @Test func aFinishedSessionLeavesTheServerHoweverItEnds() async throws {
        let server = try echoServer()
        defer { server.stop() }
        func open() async throws -> (WebSocket, SocketRecorder) {
            let recorder = SocketRecorder()
            WebSocketClient.connect(to: TargetURL("ws://127.0.0.1:\(server.port)/socket")!, on: testGroup.loops[0], delegate: recorder)
            let socket = try await recorder.opened()
            return (socket, recorder)
        }
        func gauge(_ name: String) -> Int { server.statistics.snapshot.first { $0.name == name }?.value ?? -1 }
        for round in 0..<3 {
            // The server closes (asked to), the client closes, the client drops the TCP connection.
            let endings: [@Sendable (WebSocket) -> Void] = [{ $0.send(text: "bye") }, { $0.close() }, { $0.abort() }]
            for ending in endings {
                let (socket, recorder) = try await open()
                socket.loop.execute { ending(socket) }
                _ = await recorder.closed()
            }
            // Without the server forgetting ended sessions, this never returns (the suite's
            // time limit ends the test).
            await server.statistics.noConnectionOpen()
            #expect(gauge("connections_open") == 0 && gauge("websockets_open") == 0, "round \(round): \(server.statistics.snapshot)")
        }
        #expect(gauge("connections_accepted_total") == 9)
    }

    /// RFC 6455 section 7.4.1: 1009 "indicates that an endpoint is terminating the connection
    /// because it has received a message that is too big for it to process". The server says so
    /// as soon as a frame's header announces more than its limit, without waiting for (or
    /// holding) the payload: here the payload never comes.
    @Test func theServerRefusesAnOversizedFrameFromItsHeader() throws {
        let server = try startServer { request, responder in responder.acceptWebSocket(Echo()) }
        defer { server.stop() }
        let key = Data((0..<16).map { UInt8($0) }).base64EncodedString()
        let handshake = "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n\r\n"
        // FIN + text, masked, 8-byte length 16 MiB, the mask, then 4 bytes of the payload.
        let header: [UInt8] = [0x81, 0xFF, 0, 0, 0, 0, 0x01, 0, 0, 0] + [1, 2, 3, 4] + [0x61, 0x62, 0x63, 0x64]
        let reply = rawExchange(port: server.port, send: [Array(handshake.utf8), header], answeredInTurn: true)
        let close = try #require(reply.firstRange(of: [0x88]), "a close frame: \(reply.suffix(16))")
        #expect(reply.count >= close.lowerBound + 4 && UInt16(reply[close.lowerBound + 2]) << 8 | UInt16(reply[close.lowerBound + 3]) == 1009)
        #expect(NetworkSettings.defaultMaxWebSocketMessageBytes == 64 << 10)
    }

    /// The same on a device's socket: a server announcing a 16 MiB frame (once, 20 devices held
    /// 483 MiB waiting for such frames) is refused at its header, with the scenario's limit.
    @Test(.enabled(if: which("python3") != nil, "needs python3"))
    func aClientRefusesAnOversizedFrameFromItsHeader() async throws {
        let port = freePort()
        // A server that completes the handshake, then sends only a frame header claiming 16 MiB.
        let peer = try rawPythonPeer(port: port, imports: "base64, hashlib", perConnection: """
            head = b""
            while b"\\r\\n\\r\\n" not in head:
                chunk = conn.recv(4096)
                if not chunk: break
                head += chunk
            if b"\\r\\n\\r\\n" not in head: continue
            key = [l.split(b":", 1)[1].strip() for l in head.split(b"\\r\\n") if l.lower().startswith(b"sec-websocket-key")][0]
            accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: " + accept + b"\\r\\n\\r\\n")
            conn.sendall(bytes([0x81, 127, 0, 0, 0, 0, 1, 0, 0, 0]) + b"abcd")
            """)
        defer { peer.stop() }
        #expect(await peer.ready())
        for limit in [NetworkSettings.defaultMaxWebSocketMessageBytes, 1 << 20] {
            let recorder = SocketRecorder()
            WebSocketClient.connect(to: TargetURL("ws://127.0.0.1:\(port)/")!, on: testGroup.loops[0], maxMessageBytes: limit, delegate: recorder)
            _ = try await recorder.opened()
            let closed = await recorder.closed()
            #expect(closed.error?.reason == .webSocketProtocol, "limit \(limit): \(String(describing: closed.error))")
            #expect(closed.error?.detail == "message over \(limit) bytes")
        }
    }

    /// The limit holds over a fragmented message's running total, at each continuation's header:
    /// a 40 KiB fragment and then a 40 KiB continuation's header under 64 KiB is refused at once,
    /// not waited on (issue 35: the mock waited for the payload until its read timeout).
    @Test func aContinuationPastTheLimitIsRefusedAtItsHeader() {
        var decoder = WebSocketFrameDecoder(readsMaskedFrames: false, maxMessageBytes: 64 << 10)
        let first: [UInt8] = [0x01, 126, 0xA0, 0x00] + Array(repeating: 0x61, count: 40 << 10)
        decoder.append(first.span)
        guard case .frame(let frame) = decoder.next() else { Issue.record("the first fragment comes out"); return }
        #expect(!frame.fin && frame.payload.count == 40 << 10)
        // A ping between fragments is allowed (section 5.4) and counts for nothing.
        let ping: [UInt8] = [0x89, 0x00]
        decoder.append(ping.span)
        #expect(decoder.next() == .frame(.init(fin: true, opcode: 9, payload: [])))
        let header: [UInt8] = [0x80, 126, 0xA0, 0x00]
        decoder.append(header.span)
        #expect(decoder.next() == .failure(code: 1009, reason: "message over 65536 bytes"))
        // Within the limit, the same continuation is waited for and comes out.
        var fits = WebSocketFrameDecoder(readsMaskedFrames: false, maxMessageBytes: 64 << 10)
        let small: [UInt8] = [0x01, 126, 0x10, 0x00] + Array(repeating: 0x61, count: 4 << 10) + [0x80, 126, 0x10, 0x00] + Array(repeating: 0x62, count: 4 << 10)
        fits.append(small.span)
        guard case .frame = fits.next(), case .frame(let last) = fits.next() else { Issue.record("both fragments come out"); return }
        #expect(last.fin && last.opcode == 0 && last.payload.count == 4 << 10)
    }

    @Test func acceptValueMatchesTheRFCExample() {
        // RFC 6455 section 1.3: key "dGhlIHNhbXBsZSBub25jZQ==" gives "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".
        #expect(WebSocketHandshake.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }
}
