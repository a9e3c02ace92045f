import Foundation
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmNet
import PushSwarmPlatforms
import PushSwarmReplay

// libFuzzer targets, one per parser a peer or a user feeds: built only by `Fuzz/run.sh` (with
// `-sanitize=fuzzer,address`; see Fuzz/README.md). `FUZZ_TARGET` names the target; each input must
// end in an answer or an error, never a trap, a hang, a leak or unbounded memory.

@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// SwiftPM links an executable's entry as `<module>_main`; libFuzzer's driver is called from it.
@_cdecl("PushSwarmFuzz_main")
func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    guard let name = ProcessInfo.processInfo.environment["FUZZ_TARGET"], let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("set FUZZ_TARGET to one of: \(names)\n".utf8))
        return 2
    }
    FuzzTarget.selected = target
    var count = argc
    var arguments = argv
    return runDriver(&count, &arguments) { data, size in
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        FuzzTarget.selected.run(bytes)
        return 0
    }
}

enum FuzzTarget: String, CaseIterable {
    case httpRequest = "http-request"
    case httpResponse = "http-response"
    case webSocketServer = "websocket-server"
    case webSocketClient = "websocket-client"
    case json
    case scenario
    case mockHTTP = "mock-http"
    case mockSocket = "mock-socket"
    case metricsArchive = "metrics-archive"
    case pushReceiver = "push-receiver"
    case accessLog = "access-log"
    case serverPipeline = "server-pipeline"
    case hostileServer = "hostile-server"
    case hpack
    case http2Frames = "http2-frames"
    case http2Client = "http2-client"
    case http2Server = "http2-server"

    nonisolated(unsafe) static var selected = FuzzTarget.json

    func run(_ bytes: [UInt8]) {
        switch self {
        case .httpRequest: Self.http(bytes, kind: .request)
        case .httpResponse: Self.http(bytes, kind: .response)
        case .webSocketServer: Self.frames(bytes, readsMasked: true)
        case .webSocketClient: Self.frames(bytes, readsMasked: false)
        case .json: Self.json(bytes)
        case .scenario: _ = try? ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: bytes)
        case .mockHTTP: Self.mockHTTP(bytes)
        case .mockSocket: Self.mockSocket(bytes)
        case .metricsArchive: Self.metricsArchive(bytes)
        case .pushReceiver: Self.pushReceiver(bytes)
        case .serverPipeline: Self.serverPipeline(bytes)
        case .hostileServer: HostileServer.run(bytes)
        case .hpack: Self.hpack(bytes)
        case .http2Frames: Self.http2Frames(bytes)
        case .http2Client: Self.http2Client(bytes)
        case .http2Server: Self.http2Server(bytes)
        case .accessLog: Self.accessLog(bytes)
        }
    }

    /// Lines of an access log in the format the first byte picks (combined, a custom nginx
    /// format with $msec and $request_time, JSON lines, ALB): each a record within bounds, whose
    /// operation is looked up, or an `AccessLogError`.
    static let customFormat = try! NginxLogFormat(#"$remote_addr [$time_local] "$request" $status $request_time $msec"#)
    static let logOperations = LogOperations(platforms: PlatformRegistry.all)

    static func accessLog(_ bytes: [UInt8]) {
        guard let first = bytes.first else { return }
        let formats: [AccessLogFormat] = [.combined, .nginx(customFormat), .jsonLines(JSONLogFields()), .alb]
        let format = formats[Int(first) % formats.count]
        var profile = LogProfile()
        for line in bytes.dropFirst().split(separator: UInt8(ascii: "\n")) {
            guard let record = try? format.record(Array(line).span) else { continue }
            precondition((100...999).contains(record.status), "status \(record.status)")
            precondition(!record.address.isEmpty, "an empty address")
            precondition(record.durationMicroseconds.map { $0 >= 0 } ?? true, "a negative duration")
            profile.add(record, operation: logOperations.operation(method: record.method, path: record.path))
        }
        _ = (profile.peakSecond, profile.peakMinute, profile.storm, profile.fitLimiter())
    }

    /// Every message the bytes hold, fed in pieces whose size the first byte picks (a peer's
    /// segments split anywhere); a response's `Retry-After` is read too.
    static func http(_ input: [UInt8], kind: HTTPParser.Kind) {
        guard let first = input.first else { return }
        let bytes = input.dropFirst()
        let piece = Int(first % 64) + 1
        var parser = HTTPParser(kind: kind, limits: HTTPParser.Limits(maxHeaderBytes: 4_096, maxBodyBytes: 65_536))
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let end = min(bytes.endIndex, offset + piece)
            parser.append(Array(bytes[offset..<end]))
            offset = end
            do {
                while let message = try parser.next() {
                    if let value = message.header("retry-after") { _ = RetryAfter.parse(value, unixNow: 1_800_000_000) }
                    // An interim answer (1xx but 101) is one the client skips: it has no body.
                    if kind == .response, message.isInterim { precondition(message.body.isEmpty, "an interim answer with a body") }
                }
            } catch {
                return
            }
        }
        _ = parser.finishAtEOF()
    }

    /// A body posted to `--push-listen`: FCM's answer, or a push whose payload is within FCM's
    /// 4,096 bytes (all a device keeps of it).
    static func pushReceiver(_ bytes: [UInt8]) {
        guard case .success(let push) = PushReceiver.push(from: bytes) else { return }
        let payload = push.data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        precondition(payload <= 4_096 && !push.token.isEmpty, "a push over FCM's limit was taken")
    }

    static func frames(_ input: [UInt8], readsMasked: Bool) {
        guard let first = input.first else { return }
        var decoder = WebSocketFrameDecoder(readsMaskedFrames: readsMasked, maxMessageBytes: 4_096)
        let bytes = Array(input.dropFirst())
        let piece = Int(first % 32) + 1
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + piece)
            decoder.append(bytes.span.extracting(offset..<end))
            offset = end
            while true {
                switch decoder.next() {
                case .frame(let frame):
                    precondition(frame.payload.count <= 4_096, "a frame over the limit came out")
                    continue
                case .needMore: break
                case .failure: return
                }
                break
            }
        }
    }

    /// Both parsers agree on what is JSON (a differential check), and what they read is written
    /// back as JSON that reads the same.
    static func json(_ bytes: [UInt8]) {
        let tree = try? JSONParser.parse(bytes)
        var fieldsRead = true
        do { _ = try JSONFields.parse(bytes) } catch { fieldsRead = false }
        precondition((tree != nil) == fieldsRead, "JSONParser and JSONFields disagree on whether the input is JSON")
        if let tree {
            let again = try? JSONParser.parse(JSONWriter.bytes(of: tree))
            precondition(again != nil, "what was read does not write back as JSON")
        }
    }

    /// A metrics.json as `merge` and `compare` read it; one that reads is told and drawn as a
    /// report would (its ticks and marks feed the story, its intervals the charts).
    static func metricsArchive(_ bytes: [UInt8]) {
        guard let summary = try? SummaryArchive.read(String(decoding: bytes, as: UTF8.self)) else { return }
        _ = TerminalReport.render(summary, reportPath: nil)
        _ = HTMLReport.render(summary)
        _ = JSONWriter.bytes(of: summary.json)
        _ = try? Threshold(parsing: "storm.drained < 30s").measure(summary)
    }

    static let platforms: [String: any PlatformConfiguration] = Dictionary(
        uniqueKeysWithValues: PlatformRegistry.all.map { ($0.name, try! $0.configure(nil)) }
    )

    /// `METHOD /platform/path` on the first line, the body after it; a fresh set of mocks each time.
    static func mockHTTP(_ bytes: [UInt8]) {
        guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else { return }
        let line = String(decoding: bytes[..<newline], as: UTF8.self).split(separator: " ", maxSplits: 1)
        guard line.count == 2 else { return }
        let mocks = MockFleet(platforms: platforms, seed: 1)
        guard let (platform, path) = mocks.route(String(line[1])) else { return }
        let request = Request(method: String(line[0]), path: path, headers: [Header("Content-Type", "application/json")], body: Array(bytes[(newline + 1)...]))
        for second in 0..<2 {
            _ = mocks.exchange(platform: platform, request, from: SourceAddress(index: 0), at: Instant.start + .seconds(Double(second)))
        }
    }

    /// A server on a loop of its own: a request whose target has an even length is answered by
    /// the handler at once, an odd one a moment later (both paths of the server's loop over
    /// pipelined requests).
    static let pipelineServer: HTTPServer = {
        let server = HTTPServer(group: EventLoopGroup(threads: 1, name: "fuzz-server")) { request, responder in
            let response = Response(status: 200, body: Array(request.target.utf8))
            if request.target.utf8.count % 2 == 0 {
                responder.respond(response)
            } else {
                responder.respond(response, afterNanoseconds: 10_000)
            }
        }
        try! server.start(at: SocketAddress(ip: .loopback, port: 0))
        return server
    }()

    /// HTTP/2 frames from a peer, in pieces of 1 to 256 bytes (the first byte picks): frames, a
    /// stream error (the frame consumed, reading goes on) or a connection error (reading stops);
    /// never more held than a frame's header and the largest payload allowed; each frame read,
    /// written again, reads back the same.
    static func http2Frames(_ input: [UInt8]) {
        guard let first = input.first else { return }
        let piece = Int(first) + 1
        var decoder = HTTP2FrameDecoder(maxFrameSize: 4_096)
        var offset = 1
        while offset < input.count {
            let end = min(input.count, offset + piece)
            decoder.append(Array(input[offset..<end]))
            offset = end
            while true {
                let frame: HTTP2Frame?
                do {
                    frame = try decoder.next()
                } catch {
                    if error.stream != nil { continue }
                    return
                }
                guard let frame else { break }
                var written: [UInt8] = []
                HTTP2FrameWriter.write(frame, into: &written)
                var again = HTTP2FrameDecoder(maxFrameSize: 1 << 24)
                again.append(written)
                precondition((try? again.next()) == frame, "a frame written again reads back differently")
            }
            precondition(decoder.buffered <= 9 + 4_096 + piece, "held \(decoder.buffered) bytes")
        }
    }

    /// A server's bytes to a client connection with three requests open, in pieces of 1 to 256
    /// bytes (the first byte picks): each stream ends once at most (a response, a reset, unprocessed
    /// at a GOAWAY, or failed with the connection), nothing is held past the limits, and a
    /// closed connection reads nothing more.
    static func http2Client(_ input: [UInt8]) {
        guard let first = input.first else { return }
        let piece = Int(first) + 1
        var limits = HTTP2ClientConnection.Limits()
        limits.maxBodyBytes = 65_536
        limits.maxIdleControlFrames = 100
        var client = HTTP2ClientConnection(limits: limits)
        let request = [HeaderField(":method", "POST"), HeaderField(":scheme", "https"), HeaderField(":path", "/e"), HeaderField(":authority", "x")]
        var open = Set((0..<3).compactMap { _ in client.send(request, body: Array("{}".utf8)) })
        var offset = 1
        while offset < input.count {
            let end = min(input.count, offset + piece)
            let events = client.receive(Array(input[offset..<end]))
            offset = end
            _ = client.takeOutput()
            for event in events {
                switch event {
                case .ready: break
                case .response(let stream, _, _, let body):
                    precondition(open.remove(stream) != nil && body.count <= 65_536, "stream \(stream) ended twice, or held too much")
                case .reset(let stream, _, _):
                    precondition(open.remove(stream) != nil, "stream \(stream) reset after it ended")
                case .goAway(_, _, let unprocessed):
                    for stream in unprocessed { precondition(open.remove(stream) != nil, "stream \(stream) unprocessed after it ended") }
                case .connectionError(_, _, let failed):
                    for stream in failed { precondition(open.remove(stream) != nil, "stream \(stream) failed after it ended") }
                    precondition(open.isEmpty, "streams left open by a connection error")
                }
            }
            if client.isClosed { precondition(client.receive([0, 0, 0, 6, 0, 0, 0, 0, 0]).isEmpty); return }
        }
    }

    /// A client's bytes (after the preface) to the mock's HTTP/2 server connection, in pieces of 1
    /// to 256 bytes (the first byte picks), each whole request answered at once (the second byte's
    /// low bit: with a body past the client's window) and every third with GOAWAY: no stream is
    /// ever over the limit, no request body past its limit, and a closed connection reads nothing.
    static func http2Server(_ input: [UInt8]) {
        guard input.count >= 2 else { return }
        let piece = Int(input[0]) + 1
        let body = [UInt8](repeating: 0x61, count: input[1] & 1 == 0 ? 2 : 70_000)
        var limits = HTTP2ServerConnection.Limits()
        limits.maxBodyBytes = 65_536
        limits.maxIdleControlFrames = 100
        limits.maxConcurrentStreams = 4
        var server = HTTP2ServerConnection(limits: limits)
        _ = server.receive(HTTP2Frame.clientPreface)
        var offset = 2
        var requests = 0
        while offset < input.count {
            let end = min(input.count, offset + piece)
            let events = server.receive(Array(input[offset..<end]))
            offset = end
            for event in events {
                guard case .request(let stream, _, let requestBody) = event else { continue }
                precondition(requestBody.count <= 65_536, "held a request body of \(requestBody.count)")
                requests += 1
                if requests % 3 == 0 { server.goAway(lastStream: stream >= 2 ? stream - 2 : 0) }
                server.respond(stream: stream, status: 200, headers: [Header("content-type", "text/plain")], body: body)
            }
            precondition(server.openStreams <= 4, "\(server.openStreams) streams open past the limit of 4")
            _ = server.takeOutput()
            if server.isClosed { precondition(server.receive([0, 0, 0, 6, 0, 0, 0, 0, 0]).isEmpty); return }
        }
    }

    /// Header blocks a peer's encoder wrote, in pieces the first byte sizes (each a block, so the
    /// dynamic table carries across them): fields within the list limit, or an `HPACKError`; what
    /// decodes, written again by the encoder, decodes to the same fields.
    static func hpack(_ input: [UInt8]) {
        guard let first = input.first else { return }
        let size = Int(first) * 4 + 1
        var decoder = HPACKDecoder(maxTableSize: 4_096, maxHeaderListSize: 16_384)
        var encoder = HPACKEncoder()
        var again = HPACKDecoder(maxTableSize: 4_096, maxHeaderListSize: 1 << 30)
        var offset = 1
        while offset < input.count {
            let end = min(input.count, offset + size)
            defer { offset = end }
            guard let fields = try? decoder.decode(Array(input[offset..<end])) else { return }
            precondition(fields.reduce(0) { $0 + $1.size } <= 16_384, "a header list past its limit")
            precondition(decoder.dynamicTableSize <= 4_096, "a dynamic table past its size")
            precondition((try? again.decode(encoder.encode(fields))) == fields, "a round trip changed the fields")
        }
    }

    /// The input, in pieces of 1 to 256 bytes (the first byte picks), on one connection to a real
    /// server, then the end of the input: the server answers what it can and closes, and the
    /// peer reads to the end (a hang is libFuzzer's timeout).
    static func serverPipeline(_ input: [UInt8]) {
        guard let first = input.first else { return }
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else { return }
        pipelineServer.serve(connectedSocket: ends[0])
        let peer = ends[1]
        defer { close(peer) }
        send(Array(input.dropFirst()), inPiecesOf: Int(first) + 1, to: peer)
        shutdown(peer, Int32(SHUT_WR))
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while read(peer, &buffer, buffer.count) > 0 {}
    }

    /// Writes `bytes` to socket `peer` in pieces of `piece` bytes (a peer's segments split
    /// anywhere), until they are all sent or the socket refuses more.
    static func send(_ bytes: [UInt8], inPiecesOf piece: Int, to peer: Int32) {
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + piece)
            let sent = bytes[offset..<end].withUnsafeBytes { Glibc.send(peer, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { break }
            offset += sent
        }
    }

    /// A Smartico session: each line of the input is one message on the socket.
    static func mockSocket(_ bytes: [UInt8]) {
        let mocks = MockFleet(platforms: platforms, seed: 1)
        guard let platform = mocks.index(of: "smartico") else { return }
        let (session, _) = mocks.openSocket(platform: platform, path: SmarticoMessages.socketPath, from: SourceAddress(index: 0), at: .start)
        var now = Instant.start
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            now = now + .seconds(1)
            _ = mocks.socketMessage(platform: platform, session: session, text: String(decoding: line, as: UTF8.self), from: SourceAddress(index: 0), at: now)
        }
        _ = mocks.socketTimer(platform: platform, session: session, at: now + .seconds(30))
        mocks.socketClosed(platform: platform, session: session, at: now + .seconds(31))
    }
}
