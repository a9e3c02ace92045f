public import PushSwarmCore

/// The server's side of one HTTP/2 connection (RFC 9113), as a state machine without I/O, for
/// the built-in mock: the client's bytes go in (`receive`), whole requests come out as events,
/// answers go in (`respond`), bytes to write come out (`takeOutput`). It keeps the rules a
/// client relies on (SETTINGS, flow control both ways, PING, GOAWAY) and bounds what a hostile
/// client can make it hold, each breach a connection error with the RFC's code.
public struct HTTP2ServerConnection: Sendable {
    public typealias Limits = HTTP2Limits

    public enum Event: Equatable, Sendable {
        /// A whole request: its header fields (pseudo-headers included) and body.
        case request(stream: UInt32, fields: [HeaderField], body: [UInt8])
        /// The client sent GOAWAY: it opens no more streams.
        case clientGoingAway
        /// This end ended the connection (a GOAWAY with `code` is in the output).
        case connectionError(code: HTTP2ErrorCode, reason: String)
    }

    private struct Stream {
        var fields: [HeaderField] = []
        var body: [UInt8] = []
        var receiveWindow: Int
        var sendWindow: Int
        /// The answer's body not yet sent for want of window.
        var pending: [UInt8] = []
        /// The request is whole (END_STREAM): it waits for its answer.
        var requestDone = false
        var answered = false
    }

    public let limits: Limits
    private var link: HTTP2Link
    private var prefaceSeen = 0
    private var decoder = HTTP2FrameDecoder()
    private var hpackIn: HPACKDecoder
    private var streams: [UInt32: Stream] = [:]
    private var lastStream: UInt32 = 0
    /// The last stream this end will process, once it sent GOAWAY.
    public private(set) var goingAwayFrom: UInt32?
    public private(set) var isClosed = false

    /// Writes this end's SETTINGS (its stream limit, windows and header list limit).
    public init(limits: Limits = Limits()) {
        self.limits = limits
        link = HTTP2Link(receiveWindow: limits.receiveWindow, maxHeaderBlockBytes: limits.maxHeaderBlockBytes, maxIdleControlFrames: limits.maxIdleControlFrames)
        hpackIn = HPACKDecoder(maxHeaderListSize: limits.maxHeaderListSize)
        link.writeSettings([
            HTTP2Setting(HTTP2Setting.maxConcurrentStreams, UInt32(limits.maxConcurrentStreams)),
            HTTP2Setting(HTTP2Setting.initialWindowSize, UInt32(limits.receiveWindow)),
            HTTP2Setting(HTTP2Setting.maxHeaderListSize, UInt32(limits.maxHeaderListSize)),
        ])
    }

    public mutating func takeOutput() -> [UInt8] { link.takeOutput() }

    /// Streams open: requests arriving or waiting for their answer, answers still going out.
    public var openStreams: Int { streams.count }

    /// Reads what the client sent; returns the requests that are whole, in order.
    public mutating func receive(_ bytes: [UInt8]) -> [Event] {
        guard !isClosed else { return [] }
        var events: [Event] = []
        var rest = bytes[...]
        // Section 3.4: the client's preface, then its SETTINGS.
        while prefaceSeen < HTTP2Frame.clientPreface.count, let byte = rest.first {
            guard byte == HTTP2Frame.clientPreface[prefaceSeen] else {
                fail(.protocolError, "the client's preface is not HTTP/2's", into: &events)
                return events
            }
            prefaceSeen += 1
            rest = rest.dropFirst()
        }
        guard !rest.isEmpty else { return events }
        decoder.append(Array(rest))
        while !isClosed {
            let frame: HTTP2Frame?
            do {
                frame = try decoder.next()
            } catch {
                if let stream = error.stream {
                    reset(stream, error.code)
                    continue
                }
                fail(error.code, "\(error.reason)", into: &events)
                break
            }
            guard let frame else { break }
            handle(frame, into: &events)
        }
        return events
    }

    /// Answers stream `id`: HEADERS with `:status` and `headers` (names in lower case, no
    /// connection-specific ones), then the body as the client's windows allow.
    public mutating func respond(stream id: UInt32, status: Int, headers: [Header], body: [UInt8]) {
        guard !isClosed, var stream = streams[id], !stream.answered else { return }
        stream.answered = true
        var fields = [HeaderField(":status", String(status))]
        for header in headers {
            let name = header.name.lowercased()
            if ["connection", "keep-alive", "transfer-encoding", "upgrade", "content-length"].contains(name) { continue }
            fields.append(HeaderField(name: Array(name.utf8), value: Array(header.value.utf8)))
        }
        fields.append(HeaderField("content-length", String(body.count)))
        stream.pending = body
        streams[id] = stream
        link.writeHeaders(stream: id, fields, endStream: body.isEmpty)
        if body.isEmpty {
            close(id)
        } else {
            flush(id)
        }
    }

    /// Resets stream `id` with `code` (a fault, a refused stream).
    public mutating func reset(_ id: UInt32, _ code: HTTP2ErrorCode) {
        guard !isClosed else { return }
        streams[id] = nil
        link.write(.rstStream(stream: id, code: code.rawValue))
    }

    /// Says GOAWAY as a server draining for a deploy does (section 6.8): streams up to `last`
    /// are answered, none after is processed (the client sends them again elsewhere), and no new
    /// one is taken. Streams above `last` are dropped here.
    public mutating func goAway(lastStream last: UInt32, code: HTTP2ErrorCode = .noError) {
        guard !isClosed, goingAwayFrom == nil else { return }
        goingAwayFrom = last
        for id in streams.keys where id > last { streams[id] = nil }
        link.write(.goAway(lastStream: last, code: code.rawValue, debug: []))
    }

    /// Whether it has said GOAWAY and has nothing left to send: the socket may close.
    public var isDrained: Bool { isClosed || (goingAwayFrom != nil && streams.isEmpty) }

    // MARK: frames

    private mutating func handle(_ frame: HTTP2Frame, into events: inout [Event]) {
        switch link.step(frame) {
        case .notInBlock: break
        case .continued: return
        case .whole(let stream, let bytes, let endStream): return headerBlock(stream: stream, bytes, endStream: endStream, into: &events)
        case .interrupted: return fail(.protocolError, "a frame inside a header block, or a CONTINUATION outside one", into: &events)
        case .flood: return fail(.enhanceYourCalm, "CONTINUATION flood", into: &events)
        }
        switch frame {
        case .settings(let ack, let settings):
            countIdle(into: &events)
            if !ack { apply(settings, into: &events) }
        case .ping(let ack, let opaque):
            countIdle(into: &events)
            if !ack { link.write(.ping(ack: true, opaque: opaque)) }
        case .headers(let stream, let fragment, let endStream, let endHeaders, _):
            switch link.begin(stream: stream, fragment: fragment, endStream: endStream, endHeaders: endHeaders) {
            case .whole(let stream, let bytes, let endStream): headerBlock(stream: stream, bytes, endStream: endStream, into: &events)
            case .flood: fail(.enhanceYourCalm, "CONTINUATION flood", into: &events)
            default: break
            }
        case .continuation:
            break  // taken by `link.step`
        case .data(let stream, let payload, let endStream):
            data(stream: stream, payload, endStream: endStream, into: &events)
        case .windowUpdate(let stream, let increment):
            countIdle(into: &events)
            windowUpdate(stream: stream, Int(increment), into: &events)
        case .rstStream(let stream, _):
            countIdle(into: &events)
            streams[stream] = nil
        case .goAway:
            events.append(.clientGoingAway)
        case .pushPromise:
            // Section 8.4: "A client cannot push."
            fail(.protocolError, "PUSH_PROMISE from a client", into: &events)
        case .priority, .unknown:
            countIdle(into: &events)
        }
    }

    private mutating func apply(_ settings: [HTTP2Setting], into events: inout [Event]) {
        for setting in settings {
            let delta = link.apply(setting)
            guard delta != 0 else { continue }
            for id in streams.keys {
                streams[id]!.sendWindow += delta
                guard streams[id]!.sendWindow <= HTTP2Frame.maxWindow else { return fail(.flowControlError, "window past 2^31-1", into: &events) }
            }
        }
        link.write(.settings(ack: true, []))
        for id in streams.keys.sorted() where !(streams[id]?.pending.isEmpty ?? true) { flush(id) }
    }

    private mutating func headerBlock(stream id: UInt32, _ bytes: [UInt8], endStream: Bool, into events: inout [Event]) {
        let fields: [HeaderField]
        do {
            fields = try hpackIn.decode(bytes)
        } catch {
            return fail(.compressionError, "HPACK: \(error)", into: &events)
        }
        if var stream = streams[id] {
            // Trailers: the request ends with them.
            guard endStream, !stream.requestDone else { return fail(.protocolError, "a second header block that does not end the stream", into: &events) }
            stream.requestDone = true
            streams[id] = stream
            link.madeProgress()
            return events.append(.request(stream: id, fields: stream.fields, body: stream.body))
        }
        // Section 5.1.1: a new stream's id is odd and above every earlier one.
        guard id % 2 == 1, id > lastStream else {
            return id <= lastStream ? countIdle(into: &events) : fail(.protocolError, "stream \(id) is not a client's new stream", into: &events)
        }
        lastStream = id
        if let last = goingAwayFrom, id > last { return countIdle(into: &events) }
        guard streams.count < limits.maxConcurrentStreams else {
            // Section 5.1.2: past SETTINGS_MAX_CONCURRENT_STREAMS, REFUSED_STREAM.
            countIdle(into: &events)
            return reset(id, .refusedStream)
        }
        link.madeProgress()
        streams[id] = Stream(fields: fields, receiveWindow: limits.receiveWindow, sendWindow: link.peerInitialWindow, requestDone: endStream)
        if endStream { events.append(.request(stream: id, fields: fields, body: [])) }
    }

    private mutating func data(stream id: UInt32, _ payload: [UInt8], endStream: Bool, into events: inout [Event]) {
        guard link.received(dataOctets: payload.count) else { return fail(.flowControlError, "DATA past the connection's window", into: &events) }
        guard var stream = streams[id], !stream.requestDone else {
            guard id <= lastStream else { return fail(.protocolError, "DATA on stream \(id), never opened", into: &events) }
            return countIdle(into: &events)
        }
        if payload.isEmpty && !endStream { countIdle(into: &events) } else { link.madeProgress() }
        stream.receiveWindow -= payload.count
        guard stream.receiveWindow >= 0 else { return reset(id, .flowControlError) }
        guard stream.body.count + payload.count <= limits.maxBodyBytes else { return reset(id, .cancel) }
        stream.body += payload
        if !endStream { link.reopen(stream: id, window: &stream.receiveWindow) }
        stream.requestDone = endStream
        streams[id] = stream
        if endStream { events.append(.request(stream: id, fields: stream.fields, body: stream.body)) }
    }

    private mutating func windowUpdate(stream id: UInt32, _ increment: Int, into events: inout [Event]) {
        if id == 0 {
            guard link.openConnectionWindow(by: increment) else { return fail(.flowControlError, "window past 2^31-1", into: &events) }
            for stream in streams.keys.sorted() where !(streams[stream]?.pending.isEmpty ?? true) { flush(stream) }
            return
        }
        guard streams[id] != nil else { return }
        streams[id]!.sendWindow += increment
        guard streams[id]!.sendWindow <= HTTP2Frame.maxWindow else { return reset(id, .flowControlError) }
        flush(id)
    }

    // MARK: writing

    private mutating func flush(_ id: UInt32) {
        guard var stream = streams[id], stream.answered else { return }
        link.sendData(stream: id, pending: &stream.pending, window: &stream.sendWindow)
        streams[id] = stream
        if stream.pending.isEmpty { close(id) }
    }

    /// The answer is out: the stream closes once the request is whole too (an answer before the
    /// request's end closes it all the same, as section 8.1 allows a server to).
    private mutating func close(_ id: UInt32) {
        guard let stream = streams[id] else { return }
        if !stream.requestDone { link.write(.rstStream(stream: id, code: HTTP2ErrorCode.noError.rawValue)) }
        streams[id] = nil
    }

    private mutating func countIdle(into events: inout [Event]) {
        if link.countIdle() { fail(.enhanceYourCalm, "control frame flood", into: &events) }
    }

    private mutating func fail(_ code: HTTP2ErrorCode, _ reason: String, into events: inout [Event]) {
        guard !isClosed else { return }
        isClosed = true
        link.write(.goAway(lastStream: lastStream, code: code.rawValue, debug: Array(reason.utf8.prefix(256))))
        streams.removeAll()
        link.end()
        events.append(.connectionError(code: code, reason: reason))
    }
}
