/// What one end of an HTTP/2 connection holds its peer to, and announces in its SETTINGS: the
/// bounds that keep a hostile peer from making it hold more, each breach an error with the RFC's
/// code.
public struct HTTP2Limits: Sendable {
    /// SETTINGS_MAX_HEADER_LIST_SIZE this end announces and holds the peer's header lists to.
    public var maxHeaderListSize = 65_536
    /// The window this end gives each stream and the connection (SETTINGS_INITIAL_WINDOW_SIZE
    /// and a WINDOW_UPDATE on stream 0): OkHttp's 16 MiB connection window is larger; a
    /// device's answers and requests are small.
    public var receiveWindow = 1 << 20
    /// The largest body held for one stream (a response at the client, a request at the server:
    /// past it the stream is cancelled).
    public var maxBodyBytes = 16 << 20
    /// A header block's fragments (HEADERS and its CONTINUATIONs) at most: past it, the
    /// CONTINUATION flood of the 2024 CVEs (VU#421644) ends the connection before it is held.
    public var maxHeaderBlockBytes = 131_072
    /// Frames that make this end work without carrying a request or response forward (PING,
    /// SETTINGS, empty DATA, frames for closed streams, WINDOW_UPDATE, PRIORITY, RST_STREAM,
    /// unknown types), in a row: past it, ENHANCE_YOUR_CALM (the floods of CVE-2019-9512, -9515,
    /// -9518, and CVE-2023-44487's rapid reset).
    public var maxIdleControlFrames = 1_000
    /// SETTINGS_MAX_CONCURRENT_STREAMS a server announces (nginx's 128); one more stream is
    /// refused with REFUSED_STREAM (section 5.1.2). A client takes the server's.
    public var maxConcurrentStreams = 128

    public init() {}
}

/// What both ends of an HTTP/2 connection keep alike (RFC 9113 sections 5 and 6), so that the
/// client's connection and the mock's server each hold only their own side's rules: the frames
/// this end writes and the peer's settings that shape them, the send windows, the connection's
/// receive window, the header block being received across CONTINUATIONs, and the count of frames
/// in a row that carry nothing forward.
struct HTTP2Link: Sendable {
    /// The window this end gives each stream and the connection.
    let receiveWindow: Int
    let maxHeaderBlockBytes: Int
    let maxIdleControlFrames: Int

    private(set) var output: [UInt8] = []
    private var hpackOut = HPACKEncoder()
    // The peer's settings, as they stand (section 6.5.2's initial values until it says).
    private(set) var peerInitialWindow = 65_535
    private var peerMaxFrameSize = HTTP2Frame.defaultMaxFrameSize
    private var connectionSendWindow = 65_535
    private var connectionReceiveWindow: Int
    /// The header block being received: its stream, its fragments so far, whether it ends the
    /// stream, and its CONTINUATIONs; frames of no other kind may come until it ends (6.10).
    private var block: (stream: UInt32, bytes: [UInt8], endStream: Bool, frames: Int)?
    private var idleControlFrames = 0

    init(receiveWindow: Int, maxHeaderBlockBytes: Int, maxIdleControlFrames: Int) {
        self.receiveWindow = receiveWindow
        self.maxHeaderBlockBytes = maxHeaderBlockBytes
        self.maxIdleControlFrames = maxIdleControlFrames
        connectionReceiveWindow = receiveWindow
    }

    // MARK: writing

    /// Bytes written before any frame (the client's preface).
    mutating func writeRaw(_ bytes: [UInt8]) { output += bytes }

    mutating func write(_ frame: HTTP2Frame) {
        HTTP2FrameWriter.write(frame, into: &output)
    }

    mutating func takeOutput() -> [UInt8] {
        defer { output.removeAll(keepingCapacity: true) }
        return output
    }

    /// This end's SETTINGS and the connection's window opened to `receiveWindow` (its initial
    /// 65,535 is section 6.9.2's).
    mutating func writeSettings(_ settings: [HTTP2Setting]) {
        write(.settings(ack: false, settings))
        if receiveWindow > 65_535 { write(.windowUpdate(stream: 0, increment: UInt32(receiveWindow - 65_535))) }
    }

    /// A header block in one HEADERS frame, or split into CONTINUATIONs at the peer's frame size.
    mutating func writeHeaders(stream: UInt32, _ fields: [HeaderField], endStream: Bool) {
        var rest = hpackOut.encode(fields)[...]
        let first = rest.prefix(peerMaxFrameSize)
        rest = rest.dropFirst(first.count)
        write(.headers(stream: stream, block: Array(first), endStream: endStream, endHeaders: rest.isEmpty, priority: nil))
        while !rest.isEmpty {
            let next = rest.prefix(peerMaxFrameSize)
            rest = rest.dropFirst(next.count)
            write(.continuation(stream: stream, block: Array(next), endHeaders: rest.isEmpty))
        }
    }

    /// Sends as much of a stream's `pending` body as its `window`, the connection's and the
    /// peer's frame size allow (section 6.9); the last of it ends the stream.
    mutating func sendData(stream: UInt32, pending: inout [UInt8], window: inout Int) {
        while !pending.isEmpty {
            let size = min(pending.count, window, connectionSendWindow, peerMaxFrameSize)
            guard size > 0 else { break }
            let chunk = Array(pending.prefix(size))
            pending.removeFirst(size)
            window -= size
            connectionSendWindow -= size
            write(.data(stream: stream, payload: chunk, endStream: pending.isEmpty))
        }
    }

    // MARK: the peer's settings and windows

    /// Applies one of the peer's settings that shapes what this end writes; returns the change
    /// of SETTINGS_INITIAL_WINDOW_SIZE, which section 6.9.2 applies to every open stream.
    mutating func apply(_ setting: HTTP2Setting) -> Int {
        switch setting.id {
        case HTTP2Setting.headerTableSize: hpackOut.peerTableSize(Int(setting.value))
        case HTTP2Setting.maxFrameSize: peerMaxFrameSize = Int(setting.value)
        case HTTP2Setting.initialWindowSize:
            let delta = Int(setting.value) - peerInitialWindow
            peerInitialWindow = Int(setting.value)
            return delta
        default: break
        }
        return 0
    }

    /// A WINDOW_UPDATE on stream 0; false when the window passes 2^31 - 1 (FLOW_CONTROL_ERROR).
    mutating func openConnectionWindow(by increment: Int) -> Bool {
        connectionSendWindow += increment
        return connectionSendWindow <= HTTP2Frame.maxWindow
    }

    /// DATA of `count` octets arrived (it counts against the connection's window whatever its
    /// stream, 6.9.1); false when past the window. The window opens again under half.
    mutating func received(dataOctets count: Int) -> Bool {
        connectionReceiveWindow -= count
        guard connectionReceiveWindow >= 0 else { return false }
        if connectionReceiveWindow < receiveWindow / 2 {
            write(.windowUpdate(stream: 0, increment: UInt32(receiveWindow - connectionReceiveWindow)))
            connectionReceiveWindow = receiveWindow
        }
        return true
    }

    /// A stream's receive window opens again once under half (unless the stream has ended).
    mutating func reopen(stream: UInt32, window: inout Int) {
        guard window < receiveWindow / 2 else { return }
        write(.windowUpdate(stream: stream, increment: UInt32(receiveWindow - window)))
        window = receiveWindow
    }

    // MARK: header blocks and floods

    enum BlockStep {
        /// No header block is open: the frame is the caller's.
        case notInBlock
        /// A CONTINUATION taken; the block goes on.
        case continued
        /// The block ended: all its fragments.
        case whole(stream: UInt32, bytes: [UInt8], endStream: Bool)
        /// Another frame inside a block, or a CONTINUATION outside one (PROTOCOL_ERROR).
        case interrupted
        /// Past the block's size or CONTINUATION count (ENHANCE_YOUR_CALM).
        case flood
    }

    /// A HEADERS frame begins a block; `nil` when it is whole already (END_HEADERS), `.flood`
    /// when its fragment alone is past the limit.
    mutating func begin(stream: UInt32, fragment: [UInt8], endStream: Bool, endHeaders: Bool) -> BlockStep {
        guard fragment.count <= maxHeaderBlockBytes else { return .flood }
        if endHeaders { return .whole(stream: stream, bytes: fragment, endStream: endStream) }
        block = (stream, fragment, endStream, 0)
        return .continued
    }

    /// Section 6.10: a header block is "a contiguous sequence of frames": only its CONTINUATIONs
    /// may come until it ends.
    mutating func step(_ frame: HTTP2Frame) -> BlockStep {
        guard let pending = block else {
            if case .continuation = frame { return .interrupted }
            return .notInBlock
        }
        guard case .continuation(let stream, let fragment, let endHeaders) = frame, stream == pending.stream else { return .interrupted }
        guard pending.bytes.count + fragment.count <= maxHeaderBlockBytes, pending.frames < maxIdleControlFrames else { return .flood }
        block?.bytes += fragment
        block?.frames += 1
        guard endHeaders, let whole = block else { return .continued }
        block = nil
        return .whole(stream: whole.stream, bytes: whole.bytes, endStream: whole.endStream)
    }

    /// A frame that carries nothing forward; true when there have been too many in a row.
    mutating func countIdle() -> Bool {
        idleControlFrames += 1
        return idleControlFrames > maxIdleControlFrames
    }

    /// A frame that carries a request or response forward: the count starts again.
    mutating func madeProgress() { idleControlFrames = 0 }

    /// The connection ended: no header block is awaited.
    mutating func end() { block = nil }
}
