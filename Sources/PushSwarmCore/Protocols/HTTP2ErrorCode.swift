/// RFC 9113 section 7's error codes. A peer may send others: frames carry the code as a number
/// (`HTTP2Frame.rstStream`, `.goAway`), and "unknown or unsupported error codes MUST NOT trigger
/// any special behavior".
public enum HTTP2ErrorCode: UInt32, Sendable, CaseIterable {
    case noError = 0x0
    case protocolError = 0x1
    case internalError = 0x2
    case flowControlError = 0x3
    case settingsTimeout = 0x4
    case streamClosed = 0x5
    case frameSizeError = 0x6
    case refusedStream = 0x7
    case cancel = 0x8
    case compressionError = 0x9
    case connectError = 0xA
    case enhanceYourCalm = 0xB
    case inadequateSecurity = 0xC
    case http11Required = 0xD

    /// The RFC's name (`REFUSED_STREAM`), for counters and reports; a code the RFC does not name
    /// is `unknown` (a peer may send any number: the counters stay a bounded set).
    public var name: String {
        switch self {
        case .noError: "NO_ERROR"
        case .protocolError: "PROTOCOL_ERROR"
        case .internalError: "INTERNAL_ERROR"
        case .flowControlError: "FLOW_CONTROL_ERROR"
        case .settingsTimeout: "SETTINGS_TIMEOUT"
        case .streamClosed: "STREAM_CLOSED"
        case .frameSizeError: "FRAME_SIZE_ERROR"
        case .refusedStream: "REFUSED_STREAM"
        case .cancel: "CANCEL"
        case .compressionError: "COMPRESSION_ERROR"
        case .connectError: "CONNECT_ERROR"
        case .enhanceYourCalm: "ENHANCE_YOUR_CALM"
        case .inadequateSecurity: "INADEQUATE_SECURITY"
        case .http11Required: "HTTP_1_1_REQUIRED"
        }
    }

    /// The name of a code as a peer sent it.
    public static func name(of code: UInt32) -> String { HTTP2ErrorCode(rawValue: code)?.name ?? "unknown" }
}
