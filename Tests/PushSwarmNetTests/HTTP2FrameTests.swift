import Testing
import PushSwarmCore
@testable import PushSwarmNet

/// HTTP/2's frames (RFC 9113 sections 4 and 6): each type written and read back, whatever pieces
/// its bytes arrive in, and each rule of section 6 a peer's frame can break refused as the error
/// the RFC names.
@Suite struct HTTP2FrameTests {
    static func decodeAll(_ bytes: [UInt8], piece: Int, maxFrameSize: Int = HTTP2Frame.defaultMaxFrameSize) throws(HTTP2FrameError) -> [HTTP2Frame] {
        var decoder = HTTP2FrameDecoder(maxFrameSize: maxFrameSize)
        var frames: [HTTP2Frame] = []
        var offset = 0
        while offset < bytes.count {
            decoder.append(Array(bytes[offset..<min(bytes.count, offset + piece)]))
            offset += piece
            while let frame = try decoder.next() { frames.append(frame) }
        }
        return frames
    }

    static func refusal(_ bytes: [UInt8]) -> HTTP2FrameError? {
        do {
            _ = try decodeAll(bytes, piece: bytes.count)
            return nil
        } catch {
            return error
        }
    }

    /// A frame's 9-octet header (section 4.1) and its payload.
    static func frame(type: UInt8, flags: UInt8 = 0, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        [UInt8(payload.count >> 16), UInt8((payload.count >> 8) & 0xFF), UInt8(payload.count & 0xFF), type, flags,
         UInt8(stream >> 24), UInt8((stream >> 16) & 0xFF), UInt8((stream >> 8) & 0xFF), UInt8(stream & 0xFF)] + payload
    }

    static let every: [HTTP2Frame] = [
        .settings(ack: false, [HTTP2Setting(HTTP2Setting.enablePush, 0), HTTP2Setting(HTTP2Setting.initialWindowSize, 1 << 20), HTTP2Setting(0x99, 7)]),
        .settings(ack: true, []),
        .headers(stream: 1, block: [0x82, 0x87], endStream: false, endHeaders: false, priority: HTTP2Priority(exclusive: true, dependency: 0, weight: 255)),
        .continuation(stream: 1, block: [0x84], endHeaders: true),
        .data(stream: 1, payload: Array("{\"event\":1}".utf8), endStream: true),
        .windowUpdate(stream: 0, increment: 65_535),
        .windowUpdate(stream: 1, increment: 1),
        .ping(ack: false, opaque: 0x0102_0304_0506_0708),
        .priority(stream: 3, HTTP2Priority(exclusive: false, dependency: 1, weight: 16)),
        .rstStream(stream: 3, code: HTTP2ErrorCode.refusedStream.rawValue),
        .pushPromise(stream: 1, promised: 2, block: [0x82], endHeaders: true),
        .goAway(lastStream: 5, code: 0xDEAD, debug: Array("deploy".utf8)),
        .unknown(type: 0xFA, stream: 9),
    ]

    @Test func everyFrameIsWrittenAndReadBackInAnyPieces() throws {
        var bytes: [UInt8] = []
        for frame in Self.every { HTTP2FrameWriter.write(frame, into: &bytes) }
        for piece in [1, 7, 9, 64, bytes.count] {
            #expect(try Self.decodeAll(bytes, piece: piece) == Self.every, "in pieces of \(piece)")
        }
        // Section 6.5: an acknowledging SETTINGS is a bare header with ACK (0x1) on stream 0.
        var ack: [UInt8] = []
        HTTP2FrameWriter.write(.settings(ack: true, []), into: &ack)
        #expect(ack == [0, 0, 0, 4, 1, 0, 0, 0, 0])
        #expect(HTTP2Frame.clientPreface.count == 24)
    }

    /// Padding is removed (6.1, 6.2); the reserved bit of a stream id is ignored (4.1).
    @Test func paddingAndTheReservedBitAreReadAsTheRFCSays() throws {
        let padded = Self.frame(type: 0x0, flags: 0x8 | 0x1, stream: 0x8000_0003, [3] + Array("ab".utf8) + [0, 0, 0])
        #expect(try Self.decodeAll(padded, piece: 4) == [.data(stream: 3, payload: Array("ab".utf8), endStream: true)])
        let headers = Self.frame(type: 0x1, flags: 0x8 | 0x4, stream: 1, [1, 0x82, 0])
        #expect(try Self.decodeAll(headers, piece: 100) == [.headers(stream: 1, block: [0x82], endStream: false, endHeaders: true, priority: nil)])
    }

    /// Section 6's rules, each a connection error unless the RFC makes it a stream's.
    @Test func aFrameBreakingSectionSixIsRefusedAsTheErrorTheRFCNames() {
        let cases: [(String, [UInt8], HTTP2FrameError)] = [
            ("DATA on stream 0 (6.1)", Self.frame(type: 0x0, stream: 0, [1]), HTTP2FrameError(.protocolError, .streamZero)),
            ("padding as long as the payload (6.1)", Self.frame(type: 0x0, flags: 0x8, stream: 1, [2, 0]), HTTP2FrameError(.protocolError, .badPadding)),
            ("padded, with no pad length (6.1)", Self.frame(type: 0x0, flags: 0x8, stream: 1, []), HTTP2FrameError(.protocolError, .badPadding)),
            ("HEADERS on stream 0 (6.2)", Self.frame(type: 0x1, stream: 0, [0x82]), HTTP2FrameError(.protocolError, .streamZero)),
            ("PRIORITY of 4 octets: the stream's error (6.3)", Self.frame(type: 0x2, stream: 5, [0, 0, 0, 1]), HTTP2FrameError(.frameSizeError, .badLength, stream: 5)),
            ("RST_STREAM of 3 octets (6.4)", Self.frame(type: 0x3, stream: 1, [0, 0, 8]), HTTP2FrameError(.frameSizeError, .badLength)),
            ("SETTINGS on a stream (6.5)", Self.frame(type: 0x4, stream: 1, []), HTTP2FrameError(.protocolError, .streamNonZero)),
            ("a SETTINGS ACK with a payload (6.5)", Self.frame(type: 0x4, flags: 0x1, stream: 0, [0, 1, 0, 0, 0, 0]), HTTP2FrameError(.frameSizeError, .badLength)),
            ("SETTINGS not a multiple of 6 (6.5)", Self.frame(type: 0x4, stream: 0, [0, 1, 0, 0, 0]), HTTP2FrameError(.frameSizeError, .badLength)),
            ("ENABLE_PUSH of 2 (6.5.2)", Self.frame(type: 0x4, stream: 0, [0, 2, 0, 0, 0, 2]), HTTP2FrameError(.protocolError, .badSetting)),
            ("INITIAL_WINDOW_SIZE over 2^31 - 1 (6.5.2)", Self.frame(type: 0x4, stream: 0, [0, 4, 0x80, 0, 0, 0]), HTTP2FrameError(.flowControlError, .badSetting)),
            ("MAX_FRAME_SIZE under 16,384 (6.5.2)", Self.frame(type: 0x4, stream: 0, [0, 5, 0, 0, 0x3F, 0xFF]), HTTP2FrameError(.protocolError, .badSetting)),
            ("PING of 7 octets (6.7)", Self.frame(type: 0x6, stream: 0, [1, 2, 3, 4, 5, 6, 7]), HTTP2FrameError(.frameSizeError, .badLength)),
            ("PING on a stream (6.7)", Self.frame(type: 0x6, stream: 1, [UInt8](repeating: 0, count: 8)), HTTP2FrameError(.protocolError, .streamNonZero)),
            ("GOAWAY of 7 octets (6.8)", Self.frame(type: 0x7, stream: 0, [0, 0, 0, 1, 0, 0, 0]), HTTP2FrameError(.frameSizeError, .badLength)),
            ("a window increment of 0 on a stream: its error (6.9)", Self.frame(type: 0x8, stream: 7, [0, 0, 0, 0]), HTTP2FrameError(.protocolError, .zeroIncrement, stream: 7)),
            ("a window increment of 0 on the connection (6.9)", Self.frame(type: 0x8, stream: 0, [0x80, 0, 0, 0]), HTTP2FrameError(.protocolError, .zeroIncrement)),
            ("CONTINUATION on stream 0 (6.10)", Self.frame(type: 0x9, stream: 0, [0x82]), HTTP2FrameError(.protocolError, .streamZero)),
        ]
        for (rule, bytes, expected) in cases {
            #expect(Self.refusal(bytes) == expected, "\(rule)")
        }
    }

    /// Section 4.2: a frame past SETTINGS_MAX_FRAME_SIZE is a FRAME_SIZE_ERROR, known from its
    /// header: its payload is never waited for or held.
    @Test func aFrameOverTheMaximumIsRefusedFromItsHeader() throws {
        var decoder = HTTP2FrameDecoder()
        // A DATA frame's header announcing 16,385 octets (0x004001), and none of them.
        decoder.append([0x00, 0x40, 0x01, 0x0, 0x0, 0, 0, 0, 1])
        #expect(throws: HTTP2FrameError(.frameSizeError, .tooLarge)) { _ = try decoder.next() }
        #expect(decoder.buffered == 9, "only the header was held")
        // A frame of exactly the maximum is read.
        let largest = Self.frame(type: 0x0, stream: 1, [UInt8](repeating: 7, count: HTTP2Frame.defaultMaxFrameSize))
        #expect(try Self.decodeAll(largest, piece: 4_096).count == 1)
    }
}
