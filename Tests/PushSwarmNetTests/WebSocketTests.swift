import Foundation
import PushSwarmCore
@testable import PushSwarmNet
import Testing

/// PushSwarm's WebSocket client against its own server, and the server against frames a correct
/// client never sends.
@Suite struct WebSocketTests {
    final class Echo: WebSocketDelegate {
        func webSocketOpened(_ socket: WebSocket) { socket.ping([1, 2, 3]) }
        func webSocket(_ socket: WebSocket, receivedText text: String) {
            if text == "bye" { socket.close(code: 4000, reason: "asked") } else { socket.send(text: text.uppercased()) }
        }
        func webSocketClosed(_ socket: WebSocket, code: UInt16?, reason: String, error: NetError?) {}
    }

    private func echoServer() throws -> HTTPServer {
        try startServer { request, responder in
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
        WebSocketClient.connect(to: TargetURL("ws://127.0.0.1:\(server.port)/socket")!, on: testGroup.loops[1], delegate: recorder)
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
        let reply = rawExchange(port: server.port, send: [Array(handshake.utf8), unmasked], pause: 0.1)
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

    @Test func acceptValueMatchesTheRFCExample() {
        // RFC 6455 section 1.3: key "dGhlIHNhbXBsZSBub25jZQ==" gives "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".
        #expect(WebSocketHandshake.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }
}
