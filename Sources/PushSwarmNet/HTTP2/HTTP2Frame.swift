public import PushSwarmCore

/// HTTP/2's frames (RFC 9113 sections 4 and 6): their layout, what each may carry, and the errors
/// a frame that breaks those rules is. The connection's state (streams, flow control, SETTINGS
/// in force, header blocks across CONTINUATION) is the connection's; this reads and writes frames.

/// A SETTINGS parameter (section 6.5.2); unknown identifiers are kept and ignored.
public struct HTTP2Setting: Equatable, Sendable {
    public var id: UInt16
    public var value: UInt32

    public init(_ id: UInt16, _ value: UInt32) {
        self.id = id
        self.value = value
    }

    public static let headerTableSize: UInt16 = 0x1
    public static let enablePush: UInt16 = 0x2
    public static let maxConcurrentStreams: UInt16 = 0x3
    public static let initialWindowSize: UInt16 = 0x4
    public static let maxFrameSize: UInt16 = 0x5
    public static let maxHeaderListSize: UInt16 = 0x6
}

/// A stream's priority as HEADERS and PRIORITY carry it (section 5.3, deprecated by RFC 9113 but
/// still to be parsed).
public struct HTTP2Priority: Equatable, Sendable {
    public var exclusive: Bool
    public var dependency: UInt32
    public var weight: UInt8
}

public enum HTTP2Frame: Equatable, Sendable {
    /// Padding removed.
    case data(stream: UInt32, payload: [UInt8], endStream: Bool)
    /// A header block fragment, padding removed; CONTINUATION frames follow until `endHeaders`.
    case headers(stream: UInt32, block: [UInt8], endStream: Bool, endHeaders: Bool, priority: HTTP2Priority?)
    case priority(stream: UInt32, HTTP2Priority)
    case rstStream(stream: UInt32, code: UInt32)
    case settings(ack: Bool, [HTTP2Setting])
    case pushPromise(stream: UInt32, promised: UInt32, block: [UInt8], endHeaders: Bool)
    case ping(ack: Bool, opaque: UInt64)
    case goAway(lastStream: UInt32, code: UInt32, debug: [UInt8])
    case windowUpdate(stream: UInt32, increment: UInt32)
    case continuation(stream: UInt32, block: [UInt8], endHeaders: Bool)
    /// Section 4.1: "Implementations MUST ignore and discard frames of unknown types."
    case unknown(type: UInt8, stream: UInt32)

    /// The client's connection preface (section 3.4), sent before its SETTINGS.
    public static let clientPreface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
    /// Section 4.2: every peer must accept frames this large; SETTINGS_MAX_FRAME_SIZE may allow
    /// up to 2^24 - 1.
    public static let defaultMaxFrameSize = 16_384
    public static let largestMaxFrameSize = (1 << 24) - 1
    /// Section 6.9.1: a flow-control window may not exceed 2^31 - 1.
    public static let maxWindow = Int(Int32.max)
}

/// A frame that breaks section 6's rules: a connection error (`stream` nil: the connection ends
/// with GOAWAY and `code`) or a stream error (RST_STREAM on `stream`).
public struct HTTP2FrameError: Error, Equatable, Sendable {
    public enum Reason: String, Sendable {
        case tooLarge, streamZero, streamNonZero, badLength, badPadding, zeroIncrement, badSetting
    }

    public var code: HTTP2ErrorCode
    public var reason: Reason
    /// The stream a stream error ends; nil for a connection error.
    public var stream: UInt32?

    public init(_ code: HTTP2ErrorCode, _ reason: Reason, stream: UInt32? = nil) {
        self.code = code
        self.reason = reason
        self.stream = stream
    }
}

/// Reads frames from the bytes of a connection, as they arrive in any pieces.
public struct HTTP2FrameDecoder: Sendable {
    /// This end's SETTINGS_MAX_FRAME_SIZE: a larger frame is a FRAME_SIZE_ERROR (section 4.2),
    /// found from its header, before its payload is held.
    public var maxFrameSize: Int
    private var buffer: [UInt8] = []
    private var offset = 0

    public init(maxFrameSize: Int = HTTP2Frame.defaultMaxFrameSize) {
        self.maxFrameSize = maxFrameSize
    }

    /// Bytes received and not yet read as frames.
    public var buffered: Int { buffer.count - offset }

    public mutating func append(_ bytes: [UInt8]) {
        if offset > 0, offset >= buffer.count / 2 {
            buffer.removeFirst(offset)
            offset = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame, nil until one has arrived; an error ends the connection (or, with
    /// a stream, that stream: the frame is consumed and reading may go on).
    public mutating func next() throws(HTTP2FrameError) -> HTTP2Frame? {
        guard buffer.count - offset >= 9 else { return nil }
        let length = Int(buffer[offset]) << 16 | Int(buffer[offset + 1]) << 8 | Int(buffer[offset + 2])
        let type = buffer[offset + 3]
        let flags = buffer[offset + 4]
        // Section 4.1: the reserved bit "MUST be ignored when receiving".
        let stream = (UInt32(buffer[offset + 5]) << 24 | UInt32(buffer[offset + 6]) << 16 | UInt32(buffer[offset + 7]) << 8 | UInt32(buffer[offset + 8])) & 0x7FFF_FFFF
        guard length <= maxFrameSize else { throw HTTP2FrameError(.frameSizeError, .tooLarge) }
        guard buffer.count - offset - 9 >= length else { return nil }
        let payload = Array(buffer[offset + 9..<offset + 9 + length])
        offset += 9 + length
        if offset == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 16)
            offset = 0
        }
        return try Self.frame(type: type, flags: flags, stream: stream, payload: payload)
    }

    static func frame(type: UInt8, flags: UInt8, stream: UInt32, payload: [UInt8]) throws(HTTP2FrameError) -> HTTP2Frame {
        func needsStream() throws(HTTP2FrameError) {
            guard stream != 0 else { throw HTTP2FrameError(.protocolError, .streamZero) }
        }
        func needsConnection() throws(HTTP2FrameError) {
            guard stream == 0 else { throw HTTP2FrameError(.protocolError, .streamNonZero) }
        }
        switch type {
        case 0x0:
            // 6.1 DATA: END_STREAM 0x1, PADDED 0x8.
            try needsStream()
            return .data(stream: stream, payload: try unpadded(payload, flags: flags), endStream: flags & 0x1 != 0)
        case 0x1:
            // 6.2 HEADERS: END_STREAM 0x1, END_HEADERS 0x4, PADDED 0x8, PRIORITY 0x20.
            try needsStream()
            var body = try unpadded(payload, flags: flags)
            var priority: HTTP2Priority?
            if flags & 0x20 != 0 {
                guard body.count >= 5 else { throw HTTP2FrameError(.frameSizeError, .badLength) }
                priority = Self.priority(Array(body[0..<5]))
                body.removeFirst(5)
            }
            return .headers(stream: stream, block: body, endStream: flags & 0x1 != 0, endHeaders: flags & 0x4 != 0, priority: priority)
        case 0x2:
            // 6.3 PRIORITY: 5 octets, else a stream error.
            try needsStream()
            guard payload.count == 5 else { throw HTTP2FrameError(.frameSizeError, .badLength, stream: stream) }
            return .priority(stream: stream, Self.priority(payload))
        case 0x3:
            // 6.4 RST_STREAM: 4 octets.
            try needsStream()
            guard payload.count == 4 else { throw HTTP2FrameError(.frameSizeError, .badLength) }
            return .rstStream(stream: stream, code: Self.word(payload, 0))
        case 0x4:
            // 6.5 SETTINGS: on stream 0, six octets a parameter, an ACK empty; values in range.
            try needsConnection()
            if flags & 0x1 != 0 {
                guard payload.isEmpty else { throw HTTP2FrameError(.frameSizeError, .badLength) }
                return .settings(ack: true, [])
            }
            guard payload.count % 6 == 0 else { throw HTTP2FrameError(.frameSizeError, .badLength) }
            var settings: [HTTP2Setting] = []
            for start in stride(from: 0, to: payload.count, by: 6) {
                let setting = HTTP2Setting(UInt16(payload[start]) << 8 | UInt16(payload[start + 1]), Self.word(payload, start + 2))
                switch setting.id {
                case HTTP2Setting.enablePush where setting.value > 1:
                    throw HTTP2FrameError(.protocolError, .badSetting)
                case HTTP2Setting.initialWindowSize where setting.value > UInt32(HTTP2Frame.maxWindow):
                    throw HTTP2FrameError(.flowControlError, .badSetting)
                case HTTP2Setting.maxFrameSize where setting.value < UInt32(HTTP2Frame.defaultMaxFrameSize) || setting.value > UInt32(HTTP2Frame.largestMaxFrameSize):
                    throw HTTP2FrameError(.protocolError, .badSetting)
                default:
                    settings.append(setting)
                }
            }
            return .settings(ack: false, settings)
        case 0x5:
            // 6.6 PUSH_PROMISE: END_HEADERS 0x4, PADDED 0x8, then the promised stream.
            try needsStream()
            let body = try unpadded(payload, flags: flags)
            guard body.count >= 4 else { throw HTTP2FrameError(.frameSizeError, .badLength) }
            return .pushPromise(stream: stream, promised: Self.word(body, 0) & 0x7FFF_FFFF, block: Array(body[4...]), endHeaders: flags & 0x4 != 0)
        case 0x6:
            // 6.7 PING: 8 octets on stream 0.
            try needsConnection()
            guard payload.count == 8 else { throw HTTP2FrameError(.frameSizeError, .badLength) }
            return .ping(ack: flags & 0x1 != 0, opaque: UInt64(Self.word(payload, 0)) << 32 | UInt64(Self.word(payload, 4)))
        case 0x7:
            // 6.8 GOAWAY: last stream, code, debug data, on stream 0.
            try needsConnection()
            guard payload.count >= 8 else { throw HTTP2FrameError(.frameSizeError, .badLength) }
            return .goAway(lastStream: Self.word(payload, 0) & 0x7FFF_FFFF, code: Self.word(payload, 4), debug: Array(payload[8...]))
        case 0x8:
            // 6.9 WINDOW_UPDATE: 4 octets; an increment of 0 is an error on what it names.
            guard payload.count == 4 else { throw HTTP2FrameError(.frameSizeError, .badLength) }
            let increment = Self.word(payload, 0) & 0x7FFF_FFFF
            guard increment > 0 else { throw HTTP2FrameError(.protocolError, .zeroIncrement, stream: stream == 0 ? nil : stream) }
            return .windowUpdate(stream: stream, increment: increment)
        case 0x9:
            // 6.10 CONTINUATION: END_HEADERS 0x4.
            try needsStream()
            return .continuation(stream: stream, block: payload, endHeaders: flags & 0x4 != 0)
        default:
            return .unknown(type: type, stream: stream)
        }
    }

    /// Section 6.1: with PADDED, the first octet is the pad length, and "if the length of the
    /// padding is the length of the frame payload or greater, the recipient MUST treat this as a
    /// connection error of type PROTOCOL_ERROR".
    private static func unpadded(_ payload: [UInt8], flags: UInt8) throws(HTTP2FrameError) -> [UInt8] {
        guard flags & 0x8 != 0 else { return payload }
        guard let pad = payload.first, Int(pad) < payload.count else { throw HTTP2FrameError(.protocolError, .badPadding) }
        return Array(payload[1..<payload.count - Int(pad)])
    }

    private static func priority(_ bytes: [UInt8]) -> HTTP2Priority {
        let word = Self.word(bytes, 0)
        return HTTP2Priority(exclusive: word & 0x8000_0000 != 0, dependency: word & 0x7FFF_FFFF, weight: bytes[4])
    }

    static func word(_ bytes: [UInt8], _ start: Int) -> UInt32 {
        UInt32(bytes[start]) << 24 | UInt32(bytes[start + 1]) << 16 | UInt32(bytes[start + 2]) << 8 | UInt32(bytes[start + 3])
    }
}

/// Writes frames (no padding: PushSwarm pads nothing).
public enum HTTP2FrameWriter {
    public static func write(_ frame: HTTP2Frame, into out: inout [UInt8]) {
        switch frame {
        case .data(let stream, let payload, let endStream):
            header(payload.count, type: 0x0, flags: endStream ? 0x1 : 0, stream: stream, into: &out)
            out.append(contentsOf: payload)
        case .headers(let stream, let block, let endStream, let endHeaders, let priority):
            let flags: UInt8 = (endStream ? 0x1 : 0) | (endHeaders ? 0x4 : 0) | (priority == nil ? 0 : 0x20)
            header(block.count + (priority == nil ? 0 : 5), type: 0x1, flags: flags, stream: stream, into: &out)
            if let priority { write(priority, into: &out) }
            out.append(contentsOf: block)
        case .priority(let stream, let priority):
            header(5, type: 0x2, flags: 0, stream: stream, into: &out)
            write(priority, into: &out)
        case .rstStream(let stream, let code):
            header(4, type: 0x3, flags: 0, stream: stream, into: &out)
            word(code, into: &out)
        case .settings(let ack, let settings):
            header(settings.count * 6, type: 0x4, flags: ack ? 0x1 : 0, stream: 0, into: &out)
            for setting in settings {
                out.append(UInt8(setting.id >> 8))
                out.append(UInt8(setting.id & 0xFF))
                word(setting.value, into: &out)
            }
        case .pushPromise(let stream, let promised, let block, let endHeaders):
            header(4 + block.count, type: 0x5, flags: endHeaders ? 0x4 : 0, stream: stream, into: &out)
            word(promised & 0x7FFF_FFFF, into: &out)
            out.append(contentsOf: block)
        case .ping(let ack, let opaque):
            header(8, type: 0x6, flags: ack ? 0x1 : 0, stream: 0, into: &out)
            word(UInt32(truncatingIfNeeded: opaque >> 32), into: &out)
            word(UInt32(truncatingIfNeeded: opaque), into: &out)
        case .goAway(let lastStream, let code, let debug):
            header(8 + debug.count, type: 0x7, flags: 0, stream: 0, into: &out)
            word(lastStream & 0x7FFF_FFFF, into: &out)
            word(code, into: &out)
            out.append(contentsOf: debug)
        case .windowUpdate(let stream, let increment):
            header(4, type: 0x8, flags: 0, stream: stream, into: &out)
            word(increment & 0x7FFF_FFFF, into: &out)
        case .continuation(let stream, let block, let endHeaders):
            header(block.count, type: 0x9, flags: endHeaders ? 0x4 : 0, stream: stream, into: &out)
            out.append(contentsOf: block)
        case .unknown(let type, let stream):
            header(0, type: type, flags: 0, stream: stream, into: &out)
        }
    }

    private static func header(_ length: Int, type: UInt8, flags: UInt8, stream: UInt32, into out: inout [UInt8]) {
        out.append(UInt8((length >> 16) & 0xFF))
        out.append(UInt8((length >> 8) & 0xFF))
        out.append(UInt8(length & 0xFF))
        out.append(type)
        out.append(flags)
        word(stream & 0x7FFF_FFFF, into: &out)
    }

    private static func write(_ priority: HTTP2Priority, into out: inout [UInt8]) {
        word((priority.exclusive ? 0x8000_0000 : 0) | (priority.dependency & 0x7FFF_FFFF), into: &out)
        out.append(priority.weight)
    }

    private static func word(_ value: UInt32, into out: inout [UInt8]) {
        out.append(UInt8(value >> 24))
        out.append(UInt8((value >> 16) & 0xFF))
        out.append(UInt8((value >> 8) & 0xFF))
        out.append(UInt8(value & 0xFF))
    }
}
