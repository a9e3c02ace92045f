public import PushSwarmCore

/// The client's side of one HTTP/2 connection (RFC 9113) as a state machine without I/O: bytes
/// the server sent go in (`receive`), bytes to write and what happened come out (`takeOutput`,
/// the events). Requests are streams on it; flow control, SETTINGS, PING, GOAWAY and RST_STREAM
/// are kept by the rules of sections 5 and 6, and a server that floods or breaks them ends the
/// connection with the error the RFC names, never with unbounded memory.
public struct HTTP2ClientConnection: Sendable {
    public typealias Limits = HTTP2Limits

    public enum Event: Equatable, Sendable {
        /// The server's first SETTINGS arrived: streams may open up to its limit.
        case ready(maxConcurrentStreams: Int)
        /// A stream's final response, complete (1xx answers skipped, trailers dropped).
        case response(stream: UInt32, status: Int, headers: [HeaderField], body: [UInt8])
        /// The server reset a stream: REFUSED_STREAM (section 8.7: "the request has not been
        /// processed") may be retried on any connection; other codes are the request's error.
        case reset(stream: UInt32, code: UInt32, retryable: Bool)
        /// The server is going away: streams above `lastStream` were not processed and may be
        /// retried on a new connection (section 6.8); no stream opens here any more.
        case goAway(lastStream: UInt32, code: UInt32, unprocessed: [UInt32])
        /// This end ended the connection (a GOAWAY with `code` is in the output); every open
        /// stream failed with it.
        case connectionError(code: HTTP2ErrorCode, reason: ConnectionErrorReason, failedStreams: [UInt32])
    }

    public enum ConnectionErrorReason: String, Sendable {
        case frame, compression, flowControl, continuationFlood, controlFlood, headerBlockInterrupted
        case pushPromise, unknownStream, badResponse, bodyTooLarge
    }

    private struct Stream {
        var sendWindow: Int
        var receiveWindow: Int
        /// Body bytes not yet sent for want of window, and whether the body ends the stream.
        var pending: [UInt8] = []
        var finalResponse: (status: Int, headers: [HeaderField])?
        var body: [UInt8] = []
    }

    public let limits: Limits
    private var link: HTTP2Link
    private var decoder = HTTP2FrameDecoder()
    private var hpackIn: HPACKDecoder
    private var streams: [UInt32: Stream] = [:]
    private var nextStream: UInt32 = 1
    private var peerMaxConcurrentStreams = Int.max
    private var receivedSettings = false
    /// GOAWAY's last stream, once the server sent one; nil while it takes new streams.
    public private(set) var goingAway: UInt32?
    public private(set) var isClosed = false

    /// Writes the connection preface and this end's SETTINGS (no server push, the receive window,
    /// the header list limit) and opens the connection's window to `limits.receiveWindow`.
    public init(limits: Limits = Limits()) {
        self.limits = limits
        link = HTTP2Link(receiveWindow: limits.receiveWindow, maxHeaderBlockBytes: limits.maxHeaderBlockBytes, maxIdleControlFrames: limits.maxIdleControlFrames)
        hpackIn = HPACKDecoder(maxHeaderListSize: limits.maxHeaderListSize)
        link.writeRaw(HTTP2Frame.clientPreface)
        link.writeSettings([
            HTTP2Setting(HTTP2Setting.enablePush, 0),
            HTTP2Setting(HTTP2Setting.initialWindowSize, UInt32(limits.receiveWindow)),
            HTTP2Setting(HTTP2Setting.maxHeaderListSize, UInt32(limits.maxHeaderListSize)),
        ])
    }

    /// The bytes to write to the server now.
    public mutating func takeOutput() -> [UInt8] { link.takeOutput() }

    public var openStreams: Int { streams.count }

    /// True while a new request may open a stream: the server's limit not reached, no GOAWAY.
    public var canOpenStream: Bool { !isClosed && goingAway == nil && streams.count < peerMaxConcurrentStreams }

    /// Opens a stream for a request: its header fields (pseudo-headers first) and body. Its
    /// body goes out as the windows allow. Nil when no stream may open (`canOpenStream`).
    public mutating func send(_ fields: [HeaderField], body: [UInt8]) -> UInt32? {
        guard canOpenStream, nextStream <= UInt32(Int32.max) else { return nil }
        let id = nextStream
        nextStream += 2
        link.madeProgress()
        streams[id] = Stream(sendWindow: link.peerInitialWindow, receiveWindow: limits.receiveWindow, pending: body)
        link.writeHeaders(stream: id, fields, endStream: body.isEmpty)
        if !body.isEmpty { flush(id) }
        return id
    }

    /// Gives up a stream (its request timed out): RST_STREAM with CANCEL (section 8.7's code for a
    /// response no longer wanted); what the server still sends on it is read and dropped.
    public mutating func cancel(_ id: UInt32) {
        guard !isClosed, streams.removeValue(forKey: id) != nil else { return }
        link.write(.rstStream(stream: id, code: HTTP2ErrorCode.cancel.rawValue))
    }

    /// Ends the connection as a client closing it does (section 6.8): GOAWAY with NO_ERROR and
    /// no stream, since the server opens none. Open streams are dropped; the caller ends them.
    public mutating func shutdown() {
        guard !isClosed else { return }
        isClosed = true
        streams.removeAll()
        link.end()
        link.write(.goAway(lastStream: 0, code: HTTP2ErrorCode.noError.rawValue, debug: []))
    }

    /// Reads what the server sent; returns what happened, in order.
    public mutating func receive(_ bytes: [UInt8]) -> [Event] {
        guard !isClosed else { return [] }
        decoder.append(bytes)
        var events: [Event] = []
        while !isClosed {
            let frame: HTTP2Frame?
            do {
                frame = try decoder.next()
            } catch {
                if let stream = error.stream {
                    resetStream(stream, error.code, into: &events)
                    continue
                }
                fail(error.code, .frame, into: &events)
                break
            }
            guard let frame else { break }
            handle(frame, into: &events)
        }
        return events
    }

    // MARK: frames

    private mutating func handle(_ frame: HTTP2Frame, into events: inout [Event]) {
        switch link.step(frame) {
        case .notInBlock: break
        case .continued: return
        case .whole(let stream, let bytes, let endStream): return headerBlock(stream: stream, bytes, endStream: endStream, into: &events)
        case .interrupted: return fail(.protocolError, .headerBlockInterrupted, into: &events)
        case .flood: return fail(.enhanceYourCalm, .continuationFlood, into: &events)
        }
        switch frame {
        case .settings(let ack, let settings):
            countIdle(into: &events)
            if !ack { apply(settings, into: &events) }
        case .ping(let ack, let opaque):
            countIdle(into: &events)
            if !ack { link.write(.ping(ack: true, opaque: opaque)) }
        case .headers(let stream, let fragment, let endStream, let endHeaders, _):
            guard stream % 2 == 1, stream < nextStream else { return fail(.protocolError, .unknownStream, into: &events) }
            switch link.begin(stream: stream, fragment: fragment, endStream: endStream, endHeaders: endHeaders) {
            case .whole(let stream, let bytes, let endStream): headerBlock(stream: stream, bytes, endStream: endStream, into: &events)
            case .flood: fail(.enhanceYourCalm, .continuationFlood, into: &events)
            default: break
            }
        case .continuation:
            break  // taken by `link.step`
        case .data(let stream, let payload, let endStream):
            data(stream: stream, payload, endStream: endStream, into: &events)
        case .windowUpdate(let stream, let increment):
            countIdle(into: &events)
            windowUpdate(stream: stream, Int(increment), into: &events)
        case .rstStream(let stream, let code):
            countIdle(into: &events)
            guard streams.removeValue(forKey: stream) != nil else { return }
            events.append(.reset(stream: stream, code: code, retryable: code == HTTP2ErrorCode.refusedStream.rawValue))
        case .goAway(let lastStream, let code, _):
            let unprocessed = streams.keys.filter { $0 > lastStream }.sorted()
            for stream in unprocessed { streams[stream] = nil }
            goingAway = min(goingAway ?? lastStream, lastStream)
            events.append(.goAway(lastStream: lastStream, code: code, unprocessed: unprocessed))
        case .pushPromise:
            // Section 8.4: this end sent SETTINGS_ENABLE_PUSH 0.
            fail(.protocolError, .pushPromise, into: &events)
        case .priority, .unknown:
            countIdle(into: &events)
        }
    }

    private mutating func apply(_ settings: [HTTP2Setting], into events: inout [Event]) {
        for setting in settings {
            if setting.id == HTTP2Setting.maxConcurrentStreams { peerMaxConcurrentStreams = Int(setting.value) }
            // Section 6.9.2: a new initial window applies to every open stream's window, which
            // may not pass 2^31 - 1.
            let delta = link.apply(setting)
            guard delta != 0 else { continue }
            for id in streams.keys {
                streams[id]!.sendWindow += delta
                guard streams[id]!.sendWindow <= HTTP2Frame.maxWindow else { return fail(.flowControlError, .flowControl, into: &events) }
            }
        }
        // Section 6.5.3: acknowledged once applied.
        link.write(.settings(ack: true, []))
        if !receivedSettings {
            receivedSettings = true
            events.append(.ready(maxConcurrentStreams: peerMaxConcurrentStreams))
        }
        for id in streams.keys.sorted() where !(streams[id]?.pending.isEmpty ?? true) { flush(id) }
    }

    private mutating func headerBlock(stream id: UInt32, _ bytes: [UInt8], endStream: Bool, into events: inout [Event]) {
        let fields: [HeaderField]
        do {
            fields = try hpackIn.decode(bytes)
        } catch {
            // The table may be out of step with the server's: the connection cannot go on.
            return fail(.compressionError, .compression, into: &events)
        }
        guard var stream = streams[id] else { return countIdle(into: &events) }
        link.madeProgress()
        if stream.finalResponse == nil {
            guard let status = fields.first(where: { $0.name == Array(":status".utf8) }).flatMap({ Int(String(decoding: $0.value, as: UTF8.self)) }),
                  (100...999).contains(status) else {
                return resetStream(id, .protocolError, into: &events)
            }
            // Section 8.1: 1xx answers come before the final one; a client skips them.
            if status < 200 {
                guard !endStream else { return resetStream(id, .protocolError, into: &events) }
                return
            }
            stream.finalResponse = (status, fields)
        }
        // A second block is the trailers: kept only as the stream's end.
        streams[id] = stream
        if endStream { finish(id, into: &events) }
    }

    private mutating func data(stream id: UInt32, _ payload: [UInt8], endStream: Bool, into events: inout [Event]) {
        guard link.received(dataOctets: payload.count) else { return fail(.flowControlError, .flowControl, into: &events) }
        guard id % 2 == 1, id < nextStream else { return fail(.protocolError, .unknownStream, into: &events) }
        guard var stream = streams[id] else { return countIdle(into: &events) }
        if payload.isEmpty && !endStream {
            countIdle(into: &events)
        } else {
            link.madeProgress()
        }
        stream.receiveWindow -= payload.count
        guard stream.receiveWindow >= 0 else { return resetStream(id, .flowControlError, into: &events) }
        guard stream.finalResponse != nil else { return resetStream(id, .protocolError, into: &events) }
        guard stream.body.count + payload.count <= limits.maxBodyBytes else { return resetStream(id, .cancel, into: &events) }
        stream.body += payload
        if !endStream { link.reopen(stream: id, window: &stream.receiveWindow) }
        streams[id] = stream
        if endStream { finish(id, into: &events) }
    }

    private mutating func windowUpdate(stream id: UInt32, _ increment: Int, into events: inout [Event]) {
        if id == 0 {
            guard link.openConnectionWindow(by: increment) else { return fail(.flowControlError, .flowControl, into: &events) }
            for stream in streams.keys.sorted() where !(streams[stream]?.pending.isEmpty ?? true) { flush(stream) }
            return
        }
        guard streams[id] != nil else { return }
        streams[id]!.sendWindow += increment
        guard streams[id]!.sendWindow <= HTTP2Frame.maxWindow else { return resetStream(id, .flowControlError, into: &events) }
        flush(id)
    }

    private mutating func finish(_ id: UInt32, into events: inout [Event]) {
        guard let stream = streams.removeValue(forKey: id), let response = stream.finalResponse else { return }
        events.append(.response(stream: id, status: response.status, headers: response.headers, body: stream.body))
    }

    // MARK: writing

    /// Sends as much of the stream's pending body as the windows allow.
    private mutating func flush(_ id: UInt32) {
        guard var stream = streams[id] else { return }
        link.sendData(stream: id, pending: &stream.pending, window: &stream.sendWindow)
        streams[id] = stream
    }

    private mutating func countIdle(into events: inout [Event]) {
        if link.countIdle() { fail(.enhanceYourCalm, .controlFlood, into: &events) }
    }

    private mutating func resetStream(_ id: UInt32, _ code: HTTP2ErrorCode, into events: inout [Event]) {
        guard streams.removeValue(forKey: id) != nil else { return }
        link.write(.rstStream(stream: id, code: code.rawValue))
        events.append(.reset(stream: id, code: code.rawValue, retryable: false))
    }

    /// Section 5.4.1: a connection error sends GOAWAY with the code and closes; every open
    /// stream fails.
    private mutating func fail(_ code: HTTP2ErrorCode, _ reason: ConnectionErrorReason, into events: inout [Event]) {
        guard !isClosed else { return }
        isClosed = true
        link.write(.goAway(lastStream: 0, code: code.rawValue, debug: Array(reason.rawValue.utf8)))
        let failed = streams.keys.sorted()
        streams.removeAll()
        link.end()
        events.append(.connectionError(code: code, reason: reason, failedStreams: failed))
    }
}
