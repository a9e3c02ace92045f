import Testing
import PushSwarmCore
@testable import PushSwarmNet

/// The client's side of an HTTP/2 connection (RFC 9113), driven by a server written in the test
/// from the same frame and HPACK codecs: requests as streams, SETTINGS, flow control both ways,
/// PING, GOAWAY and RST_STREAM as section 6 says, and each flood or broken rule of a hostile
/// server ending the connection with the RFC's code. No socket and no clock: bytes in, bytes out.
@Suite struct HTTP2ClientConnectionTests {
    /// The server's end: reads what the client wrote, writes frames to it.
    struct Server {
        var decoder = HTTP2FrameDecoder(maxFrameSize: 1 << 24)
        var hpackIn = HPACKDecoder()
        var hpackOut = HPACKEncoder()
        var sawPreface = false

        /// The frames in the client's output (its preface checked and dropped first).
        mutating func read(_ client: inout HTTP2ClientConnection) throws -> [HTTP2Frame] {
            var bytes = client.takeOutput()
            if !sawPreface {
                #expect(Array(bytes.prefix(24)) == HTTP2Frame.clientPreface)
                bytes.removeFirst(24)
                sawPreface = true
            }
            decoder.append(bytes)
            var frames: [HTTP2Frame] = []
            while let frame = try decoder.next() { frames.append(frame) }
            return frames
        }

        static func bytes(_ frames: [HTTP2Frame]) -> [UInt8] {
            var out: [UInt8] = []
            for frame in frames { HTTP2FrameWriter.write(frame, into: &out) }
            return out
        }

        mutating func response(stream: UInt32, status: Int, body: String?) -> [UInt8] {
            let block = hpackOut.encode([HeaderField(":status", "\(status)"), HeaderField("content-type", "application/json")])
            var frames: [HTTP2Frame] = [.headers(stream: stream, block: block, endStream: body == nil, endHeaders: true, priority: nil)]
            if let body { frames.append(.data(stream: stream, payload: Array(body.utf8), endStream: true)) }
            return Self.bytes(frames)
        }
    }

    static let request = [HeaderField(":method", "POST"), HeaderField(":scheme", "https"), HeaderField(":path", "/events"),
                          HeaderField(":authority", "push.example.com"), HeaderField("content-type", "application/json")]

    /// A connection past the server's SETTINGS (with `settings`), its ACK read.
    static func connected(_ settings: [HTTP2Setting] = [], limits: HTTP2ClientConnection.Limits = .init()) throws -> (HTTP2ClientConnection, Server) {
        var client = HTTP2ClientConnection(limits: limits)
        var server = Server()
        let opening = try server.read(&client)
        guard case .settings(false, let announced)? = opening.first else {
            Issue.record("the preface is followed by SETTINGS: \(opening)")
            return (client, server)
        }
        // Section 8.4: a client that takes no push says so.
        #expect(announced.contains(HTTP2Setting(HTTP2Setting.enablePush, 0)))
        #expect(client.receive(Server.bytes([.settings(ack: false, settings)])).first.map { if case .ready = $0 { true } else { false } } == true)
        #expect(try server.read(&client) == [.settings(ack: true, [])], "section 6.5.3: acknowledged")
        return (client, server)
    }

    @Test func requestsAreStreamsAnsweredInAnyOrderUpToTheServersLimit() throws {
        var (client, server) = try Self.connected([HTTP2Setting(HTTP2Setting.maxConcurrentStreams, 2)])
        let firstSent = client.send(Self.request, body: Array("{\"n\":1}".utf8))
        let first = try #require(firstSent)
        let secondSent = client.send(Self.request, body: [])
        let second = try #require(secondSent)
        #expect((first, second) == (1, 3), "client streams are odd, ascending (5.1.1)")
        #expect(client.send(Self.request, body: []) == nil && !client.canOpenStream, "SETTINGS_MAX_CONCURRENT_STREAMS 2")
        let frames = try server.read(&client)
        guard frames.count == 3, case .headers(1, let block, false, true, nil) = frames[0], case .data(1, let body, true) = frames[1],
              case .headers(3, _, true, true, nil) = frames[2] else {
            Issue.record("HEADERS and DATA on 1, HEADERS ending 3: \(frames)")
            return
        }
        #expect(try server.hpackIn.decode(block) == Self.request && String(decoding: body, as: UTF8.self) == "{\"n\":1}")
        // Answered out of order: each response is its stream's.
        let answers = client.receive(server.response(stream: 3, status: 204, body: nil) + server.response(stream: 1, status: 200, body: "{\"ok\":true}"))
        #expect(answers.map { if case .response(let stream, let status, _, let body) = $0 { "\(stream) \(status) \(body.count)" } else { "\($0)" } } == ["3 204 0", "1 200 11"])
        #expect(client.canOpenStream && client.openStreams == 0)
    }

    /// Section 6.9: the body goes out as the server's windows allow, the rest when it opens them;
    /// the client opens its own windows again as it reads.
    @Test func flowControlHoldsTheBodyToTheServersWindowsAndOpensTheClients() throws {
        var limits = HTTP2ClientConnection.Limits()
        limits.receiveWindow = 100
        var (client, server) = try Self.connected([HTTP2Setting(HTTP2Setting.initialWindowSize, 10)], limits: limits)
        let streamSent = client.send(Self.request, body: [UInt8](repeating: 1, count: 25))
        let stream = try #require(streamSent)
        var frames = try server.read(&client)
        #expect(frames.dropFirst().map { if case .data(_, let payload, let end) = $0 { "\(payload.count) \(end)" } else { "\($0)" } } == ["10 false"])
        _ = client.receive(Server.bytes([.windowUpdate(stream: stream, increment: 15)]))
        frames = try server.read(&client)
        #expect(frames.map { if case .data(_, let payload, let end) = $0 { "\(payload.count) \(end)" } else { "\($0)" } } == ["15 true"])
        // 60 of the client's 100 read: under half is left, so both windows open again.
        let status = server.hpackOut.encode([HeaderField(":status", "200")])
        _ = client.receive(Server.bytes([.headers(stream: stream, block: status, endStream: false, endHeaders: true, priority: nil)]))
        _ = client.receive(Server.bytes([.data(stream: stream, payload: [UInt8](repeating: 2, count: 60), endStream: false)]))
        frames = try server.read(&client)
        #expect(frames == [.windowUpdate(stream: 0, increment: 60), .windowUpdate(stream: stream, increment: 60)])
        // DATA past the window the client gave is a flow-control error (6.9.1).
        let over = client.receive(Server.bytes([.data(stream: stream, payload: [UInt8](repeating: 3, count: 101), endStream: true)]))
        #expect(over.first.map { if case .connectionError(.flowControlError, .flowControl, _) = $0 { true } else { false } } == true, "\(over)")
    }

    @Test func pingIsAnsweredResetsAndGoAwaySayWhatMayBeRetried() throws {
        var (client, server) = try Self.connected()
        _ = client.receive(Server.bytes([.ping(ack: false, opaque: 0xABCD)]))
        #expect(try server.read(&client) == [.ping(ack: true, opaque: 0xABCD)], "6.7: the same opaque data, ACK set")
        let streams = (0..<3).compactMap { _ in client.send(Self.request, body: []) }
        _ = try server.read(&client)
        let events = client.receive(Server.bytes([
            .rstStream(stream: streams[0], code: HTTP2ErrorCode.refusedStream.rawValue),
            .goAway(lastStream: streams[1], code: HTTP2ErrorCode.noError.rawValue, debug: Array("deploy".utf8)),
        ]))
        #expect(events == [
            .reset(stream: 1, code: HTTP2ErrorCode.refusedStream.rawValue, retryable: true),
            .goAway(lastStream: 3, code: 0, unprocessed: [5]),
        ])
        #expect(!client.canOpenStream && client.send(Self.request, body: []) == nil, "no new stream after GOAWAY")
        // Stream 3, below the last stream, is still answered.
        let answer = client.receive(server.response(stream: 3, status: 200, body: "{}"))
        #expect(answer.count == 1 && client.openStreams == 0)
        let cancelled = try Self.connected()
        var other = cancelled.0
        let idSent = other.send(Self.request, body: [])
        let id = try #require(idSent)
        #expect(other.receive(Server.bytes([.rstStream(stream: id, code: HTTP2ErrorCode.cancel.rawValue)])) == [.reset(stream: id, code: 8, retryable: false)])
    }

    /// A hostile or broken server: each case ends the connection with GOAWAY and the RFC's code,
    /// its open streams failed, nothing held past the limits.
    @Test func aHostileServerEndsTheConnectionWithTheRFCsCode() throws {
        func outcome(_ frames: (UInt32) -> [HTTP2Frame], limits: HTTP2ClientConnection.Limits = .init()) throws -> (HTTP2ErrorCode, HTTP2ClientConnection.ConnectionErrorReason, [UInt32], UInt32?)? {
            var (client, server) = try Self.connected(limits: limits)
            let streamSent = client.send(Self.request, body: [])
            let stream = try #require(streamSent)
            _ = try server.read(&client)
            let events = client.receive(Server.bytes(frames(stream)))
            let goAway = try server.read(&client).compactMap { if case .goAway(_, let code, _) = $0 { code } else { nil } }.first
            for event in events {
                if case .connectionError(let code, let reason, let failed) = event { return (code, reason, failed, goAway) }
            }
            return nil
        }
        var encoder = HPACKEncoder()
        let status = encoder.encode([HeaderField(":status", "200")])
        let flood = try outcome { stream in
            [.headers(stream: stream, block: status, endStream: false, endHeaders: false, priority: nil)]
                + Array(repeating: .continuation(stream: stream, block: [UInt8](repeating: 0x40, count: 16_384), endHeaders: false), count: 9)
        }
        #expect(flood?.0 == .enhanceYourCalm && flood?.1 == .continuationFlood && flood?.2 == [1] && flood?.3 == 0xB, "CVE-2024 CONTINUATION flood")
        let emptyContinuations = try outcome { stream in
            [.headers(stream: stream, block: status, endStream: false, endHeaders: false, priority: nil)]
                + Array(repeating: .continuation(stream: stream, block: [], endHeaders: false), count: 1_001)
        }
        #expect(emptyContinuations?.0 == .enhanceYourCalm, "empty CONTINUATIONs count too")
        let interrupted = try outcome { stream in
            [.headers(stream: stream, block: status, endStream: false, endHeaders: false, priority: nil), .ping(ack: false, opaque: 1)]
        }
        #expect(interrupted?.0 == .protocolError && interrupted?.1 == .headerBlockInterrupted, "6.10: only CONTINUATION may follow")
        let pings = try outcome { _ in Array(repeating: .ping(ack: false, opaque: 7), count: 1_001) }
        #expect(pings?.0 == .enhanceYourCalm && pings?.1 == .controlFlood, "CVE-2019-9512 ping flood")
        let settings = try outcome { _ in Array(repeating: .settings(ack: false, []), count: 1_001) }
        #expect(settings?.0 == .enhanceYourCalm, "CVE-2019-9515 settings flood")
        let emptyData = try outcome { stream in
            [.headers(stream: stream, block: status, endStream: false, endHeaders: true, priority: nil)]
                + Array(repeating: .data(stream: stream, payload: [], endStream: false), count: 1_001)
        }
        #expect(emptyData?.0 == .enhanceYourCalm, "CVE-2019-9518 empty frames")
        let overflow = try outcome { _ in [.windowUpdate(stream: 0, increment: 0x7FFF_FFFF)] }
        #expect(overflow?.0 == .flowControlError, "6.9.1: a window past 2^31 - 1")
        let push = try outcome { stream in [.pushPromise(stream: stream, promised: 2, block: status, endHeaders: true)] }
        #expect(push?.0 == .protocolError && push?.1 == .pushPromise, "8.4: push was refused in SETTINGS")
        let serverStream = try outcome { _ in [.headers(stream: 2, block: status, endStream: true, endHeaders: true, priority: nil)] }
        #expect(serverStream?.1 == .unknownStream)
        let garbage = try outcome { stream in [.headers(stream: stream, block: [0x80], endStream: true, endHeaders: true, priority: nil)] }
        #expect(garbage?.0 == .compressionError, "HPACK index 0")
        let tooLarge = try outcome { stream in [.data(stream: stream, payload: [UInt8](repeating: 0, count: 16_385), endStream: true)] }
        #expect(tooLarge?.0 == .frameSizeError, "4.2: past SETTINGS_MAX_FRAME_SIZE")
    }
}
