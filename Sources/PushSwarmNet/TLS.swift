import CPushSwarmShim

/// A TLS client configuration (libssl): certificate verification on unless `insecure`, extra
/// trusted roots from `caFile` (a self-signed staging host's certificate, for example).
public final class TLSContext: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
    public let verifies: Bool

    public init(insecure: Bool = false, caFile: String? = nil) throws(NetError) {
        var error = [CChar](repeating: 0, count: 256)
        guard let context = ps_tls_client_context(insecure ? 0 : 1, caFile, &error, 256) else {
            throw NetError(.tlsHandshake, detail: "cannot set up TLS: \(String(cBuffer: error))")
        }
        pointer = context
        verifies = !insecure
    }

    deinit { ps_tls_context_free(pointer) }
}

/// One TLS session over a connected socket.
final class TLSSession {
    let pointer: UnsafeMutableRawPointer
    var handshakeDone = false

    init?(context: TLSContext, fd: Int32, hostName: String) {
        guard let session = ps_tls_session(context.pointer, fd, hostName, context.verifies ? 1 : 0) else { return nil }
        pointer = session
    }

    deinit { ps_tls_session_free(pointer) }

    func lastError() -> String {
        var error = [CChar](repeating: 0, count: 256)
        ps_tls_error(pointer, &error, 256)
        return String(cBuffer: error)
    }
}

extension String {
    /// The text of a NUL-terminated C buffer.
    init(cBuffer: [CChar]) {
        self = String(decoding: cBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
