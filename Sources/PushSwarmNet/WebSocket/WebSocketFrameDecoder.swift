public import PushSwarmCore
import PushSwarmSystem

/// RFC 6455 frames out of a byte stream, for either end: bytes go in as they arrive, whole frames
/// come out, unmasked. It holds at most one frame's worth of a peer's bytes: a header announcing
/// more than `maxMessageBytes` is refused as it arrives (1009), before any payload is kept; so is
/// a continuation frame's header that would take its fragmented message past it.
/// No socket: `WebSocket` feeds it from its connection, the fuzz target from its input.
public struct WebSocketFrameDecoder: Sendable {
    public struct Frame: Sendable, Equatable {
        public var fin: Bool
        public var opcode: UInt8
        public var payload: [UInt8]
    }

    public enum Next: Sendable, Equatable {
        case frame(Frame)
        /// The buffered bytes end inside a frame.
        case needMore
        /// The peer broke the protocol (1002) or sent too much (1009): close with `code`.
        case failure(code: UInt16, reason: String)
    }

    /// A server reads masked frames and refuses unmasked ones; a client the reverse (section 5.1).
    public let readsMaskedFrames: Bool
    public var maxMessageBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0
    /// The payload bytes of the fragmented message under way (its frames so far).
    private var messageBytes: UInt64 = 0

    public init(readsMaskedFrames: Bool, maxMessageBytes: Int = NetworkSettings.defaultMaxWebSocketMessageBytes) {
        self.readsMaskedFrames = readsMaskedFrames
        self.maxMessageBytes = maxMessageBytes
    }

    public mutating func append(_ bytes: Span<UInt8>) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(bytes)
    }

    /// The next whole frame, if the buffer holds one.
    public mutating func next() -> Next {
        let available = buffer.count - start
        guard available >= 2 else { return .needMore }
        let first = buffer[start]
        let second = buffer[start + 1]
        guard first & 0x70 == 0 else { return .failure(code: 1002, reason: "reserved bits set without an extension") }
        let masked = second & 0x80 != 0
        if readsMaskedFrames && !masked { return .failure(code: 1002, reason: "a client frame was not masked") }
        if !readsMaskedFrames && masked { return .failure(code: 1002, reason: "a server frame was masked") }
        var length = UInt64(second & 0x7F)
        var offset = 2
        if length == 126 {
            guard available >= 4 else { return .needMore }
            length = UInt64(buffer[start + 2]) << 8 | UInt64(buffer[start + 3])
            offset = 4
        } else if length == 127 {
            guard available >= 10 else { return .needMore }
            length = 0
            for index in 0..<8 { length = length << 8 | UInt64(buffer[start + 2 + index]) }
            // Section 5.2: in the 64-bit form "the most significant bit MUST be 0".
            guard length >> 63 == 0 else { return .failure(code: 1002, reason: "a 64-bit payload length with its top bit set") }
            offset = 10
        }
        let opcode = first & 0x0F
        let fin = first & 0x80 != 0
        if opcode >= 8 && (length > 125 || !fin) { return .failure(code: 1002, reason: "a control frame over 125 bytes or fragmented") }
        // Checked before any payload is waited for or kept: `length` fits an Int from here on.
        // A continuation counts with the fragments before it (a 40 KiB fragment and then a 40 KiB
        // continuation's header under a 64 KiB limit once waited out the read timeout).
        let soFar = opcode == 0 ? messageBytes : 0
        guard length <= UInt64(max(0, maxMessageBytes)) - min(soFar, UInt64(max(0, maxMessageBytes))) else {
            return .failure(code: 1009, reason: "message over \(maxMessageBytes) bytes")
        }
        let maskOffset = offset
        if masked { offset += 4 }
        guard available >= offset + Int(length) else { return .needMore }
        var payload = Array(buffer[(start + offset)..<(start + offset + Int(length))])
        if masked {
            let mask = (0..<4).map { buffer[start + maskOffset + $0] }
            for index in payload.indices { payload[index] ^= mask[index & 3] }
        }
        start += offset + Int(length)
        if opcode < 8 { messageBytes = fin ? 0 : soFar + length }
        if start > 65_536 && start > buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        return .frame(Frame(fin: fin, opcode: opcode, payload: payload))
    }
}
