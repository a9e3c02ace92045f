import Foundation
import PushSwarmCore
@testable import PushSwarmNet
import Testing

/// The server must answer bad input with the status RFC 9112 gives and keep serving others.
@Suite struct ServerRobustnessTests {
    private func start() throws -> HTTPServer {
        let configuration = HTTPServer.Configuration(
            limits: HTTPParser.Limits(maxHeaderBytes: 4096, maxBodyBytes: 65_536), requestReadTimeoutNanoseconds: 300_000_000
        )
        return try startServer(configuration) { request, responder in
            responder.respond(Response(status: 200, body: Array("ok \(request.body.count)".utf8)))
        }
    }

    private func status(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix(12), as: UTF8.self)
    }

    @Test func badInputGetsItsStatusAndTheServerKeepsServing() async throws {
        let server = try start()
        defer { server.stop() }
        let port = server.port
        #expect(status(rawExchange(port: port, send: [Array("GARBAGE\u{1}\u{2}\r\n\r\n".utf8)])) == "HTTP/1.1 400")
        #expect(status(rawExchange(port: port, send: [Array("GET / HTTP/1.1\r\nX: \(String(repeating: "a", count: 5000))\r\n\r\n".utf8)])) == "HTTP/1.1 431")
        #expect(status(rawExchange(port: port, send: [Array("POST / HTTP/1.1\r\nContent-Length: 999999\r\n\r\n".utf8)])) == "HTTP/1.1 413")
        #expect(status(rawExchange(port: port, send: [Array("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n".utf8)])) == "HTTP/1.1 501")
        // A chunk size near Int.max once overflowed the body's length and killed the process; a
        // signed one left the connection hanging.
        let chunked = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(status(rawExchange(port: port, send: [Array((chunked + "1\r\na\r\n7FFFFFFFFFFFFFFF\r\n").utf8)])) == "HTTP/1.1 413")
        #expect(status(rawExchange(port: port, send: [Array((chunked + "-1\r\n").utf8)])) == "HTTP/1.1 400")
        // Truncated requests and random bytes followed by an abrupt close or reset.
        _ = rawExchange(port: port, send: [Array("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc".utf8)], readTimeout: 0)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let noise = (0..<Int.random(in: 1...2000, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = rawExchange(port: port, send: [noise], readTimeout: 0)
        }
        resetConnection(port: port, after: Array("GET / HTTP/1.1\r\nHost: a\r\n".utf8))
        // Pipelined requests are answered in order on one connection.
        let pipelined = rawExchange(port: port, send: [Array("POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\naPOST / HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\nbb".utf8)])
        let text = String(decoding: pipelined, as: UTF8.self)
        #expect(text.components(separatedBy: "HTTP/1.1 200").count == 3)
        #expect(text.range(of: "ok 1")!.lowerBound < text.range(of: "ok 2")!.lowerBound)
        // And a well-behaved client is still served.
        let result = await HTTPClient(group: testGroup).send(HTTPClientRequest(method: "POST", url: url(server), body: [1, 2, 3]))
        #expect(result.response?.bodyText == "ok 3")
    }

    /// A slow client (a slowloris) is cut off with 408 once the read timeout has passed since
    /// its request began to arrive, on the loop's clock. One write carries a whole request and the
    /// start of the next: when the first is answered, the server holds the second's start and its
    /// read timer runs, so the test knows when to move time on.
    @Test func aRequestNotReceivedWithinTheReadTimeoutGets408() async throws {
        let group = manualGroup("read-timeout")
        defer { group.shutdown() }
        let configuration = HTTPServer.Configuration(requestReadTimeoutNanoseconds: 300_000_000)
        let server = try startServer(configuration, group: group) { _, responder in
            responder.respond(Response(status: 200, body: Array("ok".utf8)))
        }
        defer { server.stop() }
        let fd = try #require(connectLoopback(port: server.port))
        defer { close(fd) }
        // A guard against a hang, not a wait: every read below has its bytes sent already.
        var limit = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        let sent = Array("GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\n".utf8)
        #expect(sent.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == sent.count)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !String(decoding: received, as: UTF8.self).hasSuffix("\r\n\r\nok") {
            let count = read(fd, &buffer, buffer.count)
            try #require(count > 0, "the first request was not answered: \(String(decoding: received, as: UTF8.self))")
            received += buffer[0..<count]
        }
        #expect(status(received) == "HTTP/1.1 200")
        await group.advanceTime(by: 299_999_999)
        #expect(recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT)) < 0 && errno == EAGAIN, "answered before the read timeout")
        await group.advanceTime(by: 1)
        received = []
        while true {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        #expect(status(received) == "HTTP/1.1 408", "\(String(decoding: received, as: UTF8.self))")
    }

    private func resetConnection(port: UInt16, after bytes: [UInt8]) {
        guard let fd = connectLoopback(port: port) else {
            Issue.record("cannot connect to the server")
            return
        }
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close(fd)
    }

    /// A 3xx is an answer like any other (the platform client follows a `Location` it wants,
    /// one request each in the report), and the client sends no cookie it was not given.
    @Test func aRedirectIsAnAnswerAndNoCookieIsKeptForTheDevice() async throws {
        let server = try startServer { request, responder in
            switch request.target {
            case "/start":
                responder.respond(Response(status: 302, headers: [Header("Location", "/landing"), Header("Set-Cookie", "session=42; Path=/")]))
            default:
                responder.respond(Response(status: 200, body: Array("cookie=\(request.header("Cookie") ?? "")".utf8)))
            }
        }
        defer { server.stop() }
        let client = HTTPClient(group: testGroup)
        let result = await client.send(HTTPClientRequest(method: "GET", url: url(server, "/start")))
        #expect(result.response?.status == 302)
        #expect(result.response?.header("Location") == "/landing")
        let landing = await client.send(HTTPClientRequest(method: "GET", url: url(server, "/landing")))
        #expect(landing.response?.bodyText == "cookie=")
    }
}
