import PushSwarmCore
@testable import PushSwarmNet
import Testing

/// The mock's side of HTTP/2 (RFC 9113), driven by PushSwarm's own client connection in memory:
/// every byte one writes the other reads, so each rule is checked without a socket.
@Suite struct HTTP2ServerConnectionTests {
    /// Moves bytes both ways until neither has anything to say; returns what each saw.
    static func exchange(_ client: inout HTTP2ClientConnection, _ server: inout HTTP2ServerConnection)
        -> (client: [HTTP2ClientConnection.Event], server: [HTTP2ServerConnection.Event]) {
        var seen: ([HTTP2ClientConnection.Event], [HTTP2ServerConnection.Event]) = ([], [])
        for _ in 0..<1_000 {
            let toServer = client.takeOutput(), toClient = server.takeOutput()
            if toServer.isEmpty && toClient.isEmpty { break }
            if !toServer.isEmpty { seen.1 += server.receive(toServer) }
            if !toClient.isEmpty { seen.0 += client.receive(toClient) }
        }
        return seen
    }

    static func request(_ path: String, method: String = "GET") -> [HeaderField] {
        [HeaderField(":method", method), HeaderField(":path", path), HeaderField(":scheme", "http"), HeaderField(":authority", "mock")]
    }

    /// Section 5.1.2: past SETTINGS_MAX_CONCURRENT_STREAMS a stream is refused (REFUSED_STREAM,
    /// which the client may send again); answers go out in any order, a body larger than the
    /// client's window as the client's WINDOW_UPDATEs open it.
    @Test func streamsUpToTheLimitAnsweredInAnyOrderBodiesHeldToTheClientsWindow() throws {
        var limits = HTTP2ServerConnection.Limits()
        limits.maxConcurrentStreams = 2
        var server = HTTP2ServerConnection(limits: limits)
        var clientLimits = HTTP2ClientConnection.Limits()
        clientLimits.receiveWindow = 65_535
        var client = HTTP2ClientConnection(limits: clientLimits)
        // Sent before the server's SETTINGS arrive, as a client may (section 3.4): the client
        // does not know the limit yet, so the third is the server's to refuse.
        let streams = [client.send(Self.request("/a"), body: []), client.send(Self.request("/b", method: "POST"), body: Array("{\"n\":1}".utf8)),
                       client.send(Self.request("/c"), body: [])]
        let first = try #require(streams[0]), second = try #require(streams[1]), third = try #require(streams[2])
        let (events, requests) = Self.exchange(&client, &server)
        #expect(requests.count == 2 && requests.first == .request(stream: first, fields: Self.request("/a"), body: []), "\(requests)")
        #expect(requests.contains { if case .request(second, _, let body) = $0 { body == Array("{\"n\":1}".utf8) } else { false } })
        #expect(events.contains(.reset(stream: third, code: HTTP2ErrorCode.refusedStream.rawValue, retryable: true)), "\(events)")
        let big = [UInt8](repeating: 7, count: 200_000)
        server.respond(stream: second, status: 201, headers: [Header("Content-Type", "application/json")], body: [1])
        server.respond(stream: first, status: 200, headers: [], body: big)
        let (answers, _) = Self.exchange(&client, &server)
        let responses = answers.compactMap { event -> (UInt32, Int, Int)? in
            if case .response(let stream, let status, _, let body) = event { return (stream, status, body.count) } else { return nil }
        }
        #expect(responses.map(\.0) == [second, first], "answered in the order the server answered")
        #expect(responses.first { $0.0 == first }.map { $0.1 == 200 && $0.2 == 200_000 } == true, "the whole body, past a 65,535 window")
        #expect(server.openStreams == 0)
    }

    /// Section 6.8: GOAWAY's last stream is answered, later ones are not processed (the client
    /// learns which), no new one is taken, and the connection is drained once the last is out.
    @Test func goAwayAnswersUpToItsLastStreamAndDrains() throws {
        var server = HTTP2ServerConnection()
        var client = HTTP2ClientConnection()
        _ = Self.exchange(&client, &server)
        let sent = [client.send(Self.request("/kept"), body: []), client.send(Self.request("/dropped"), body: [])]
        let kept = try #require(sent[0]), dropped = try #require(sent[1])
        _ = Self.exchange(&client, &server)
        server.goAway(lastStream: kept)
        #expect(!server.isDrained, "the kept stream is still to answer")
        let (events, _) = Self.exchange(&client, &server)
        #expect(events.contains(.goAway(lastStream: kept, code: 0, unprocessed: [dropped])), "\(events)")
        server.respond(stream: dropped, status: 200, headers: [], body: [])
        server.respond(stream: kept, status: 200, headers: [], body: [])
        let (answers, _) = Self.exchange(&client, &server)
        #expect(answers.count == 1 && answers.first.map { if case .response(kept, 200, _, _) = $0 { true } else { false } } == true, "\(answers)")
        #expect(server.isDrained)
    }

    /// A hostile client ends the connection with the RFC's code and GOAWAY, nothing held past the
    /// limits: a preface that is not HTTP/2's, a CONTINUATION flood, a PING flood, PUSH_PROMISE.
    @Test func aHostileClientEndsTheConnectionWithTheRFCsCode() throws {
        func outcome(_ bytes: [UInt8]) -> HTTP2ErrorCode? {
            var server = HTTP2ServerConnection()
            let events = server.receive(bytes)
            let output = server.takeOutput()
            guard case .connectionError(let code, _)? = events.last else { return nil }
            // The GOAWAY went out with the code.
            var decoder = HTTP2FrameDecoder()
            decoder.append(output)
            var saidGoAway = false
            while let frame = try? decoder.next() { if case .goAway(_, code.rawValue, _) = frame { saidGoAway = true } }
            return saidGoAway ? code : nil
        }
        func frames(_ list: [HTTP2Frame]) -> [UInt8] {
            var bytes = HTTP2Frame.clientPreface
            HTTP2FrameWriter.write(.settings(ack: false, []), into: &bytes)
            for frame in list { HTTP2FrameWriter.write(frame, into: &bytes) }
            return bytes
        }
        #expect(outcome(Array("GET / HTTP/1.1\r\n\r\n".utf8)) == .protocolError)
        var flood: [HTTP2Frame] = [.headers(stream: 1, block: [0x82], endStream: true, endHeaders: false, priority: nil)]
        flood += Array(repeating: .continuation(stream: 1, block: [UInt8](repeating: 0x40, count: 1_000), endHeaders: false), count: 200)
        #expect(outcome(frames(flood)) == .enhanceYourCalm)
        #expect(outcome(frames(Array(repeating: .ping(ack: false, opaque: 1), count: 1_100))) == .enhanceYourCalm)
        #expect(outcome(frames([.pushPromise(stream: 1, promised: 2, block: [], endHeaders: true)])) == .protocolError)
        #expect(outcome(frames([.headers(stream: 2, block: [0x82], endStream: true, endHeaders: true, priority: nil)])) == .protocolError, "an even stream is the server's")
    }
}
