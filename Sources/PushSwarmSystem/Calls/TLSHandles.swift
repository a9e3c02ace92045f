import CPushSwarmShim

/// A libssl client context (`SSL_CTX`), freed with its handle.
public final class TLSContextHandle: @unchecked Sendable {
    fileprivate let pointer: UnsafeMutableRawPointer

    /// Certificate verification on when `verify`; extra trusted roots from `caFile`. Nil, with
    /// libssl's message, when it cannot be set up.
    public static func make(verify: Bool, caFile: String?) -> Result<TLSContextHandle, TLSSetupError> {
        var error = [CChar](repeating: 0, count: 256)
        guard let context = ps_tls_client_context(verify ? 1 : 0, caFile, &error, 256) else {
            return .failure(TLSSetupError(message: String(cText: error)))
        }
        return .success(TLSContextHandle(pointer: context))
    }

    /// A server's context: its certificate chain and key (PEM files), and ALPN that picks `h2`
    /// when the client offers it, else `http/1.1`.
    public static func makeServer(certificateFile: String, keyFile: String) -> Result<TLSContextHandle, TLSSetupError> {
        var error = [CChar](repeating: 0, count: 256)
        guard let context = ps_tls_server_context(certificateFile, keyFile, &error, 256) else {
            return .failure(TLSSetupError(message: String(cText: error)))
        }
        return .success(TLSContextHandle(pointer: context))
    }

    private init(pointer: UnsafeMutableRawPointer) {
        self.pointer = pointer
    }

    deinit { ps_tls_context_free(pointer) }
}

public struct TLSSetupError: Error, Sendable {
    public let message: String
}

/// One libssl session (`SSL`) over a connected socket, freed with its handle. Used on one thread.
public final class TLSSessionHandle {
    private let pointer: UnsafeMutableRawPointer
    /// Held so that the context outlives the session.
    private let context: TLSContextHandle

    public init?(context: TLSContextHandle, fd: Int32, hostName: String, verify: Bool) {
        guard let session = ps_tls_session(context.pointer, fd, hostName, verify ? 1 : 0) else { return nil }
        pointer = session
        self.context = context
    }

    /// A session that accepts a client's handshake on an accepted socket (`makeServer`'s context).
    public init?(accepting context: TLSContextHandle, fd: Int32) {
        guard let session = ps_tls_server_session(context.pointer, fd) else { return nil }
        pointer = session
        self.context = context
    }

    deinit { ps_tls_session_free(pointer) }

    /// A step of the handshake: 1 done, -1 wants to read, -2 wants to write, 0 failed.
    public func handshake() -> Int32 { ps_tls_handshake(pointer) }

    /// Decrypted bytes into `buffer`: the count, 0 at the end, -1 wants to read, -2 wants to
    /// write, -3 failed.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int32 {
        ps_tls_read(pointer, buffer.baseAddress, Int32(min(buffer.count, Int(Int32.max))))
    }

    /// Encrypts and sends from `bytes`: the count taken (> 0), -1 wants to read, -2 wants to
    /// write, -3 failed.
    public func write(_ bytes: Span<UInt8>) -> Int32 {
        bytes.withUnsafeBufferPointer { ps_tls_write(pointer, $0.baseAddress, Int32(min($0.count, Int(Int32.max)))) }
    }

    /// The session to resume on a later connection, once it has one (TLS 1.3 sends its tickets
    /// after the handshake, read with the first answer); nil before, or when it is not resumable.
    public func savedSession() -> TLSSavedSession? {
        ps_tls_saved_session(pointer).map(TLSSavedSession.init)
    }

    /// Offers `saved` for resumption; call before the handshake.
    public func offer(_ saved: TLSSavedSession) {
        _ = ps_tls_offer_session(pointer, saved.pointer)
    }

    /// Offers `protocols` by ALPN (RFC 7301), most preferred first (`["h2", "http/1.1"]`, as
    /// OkHttp and URLSession offer them); call before the handshake. False when libssl refused
    /// the list (an empty or over-long name).
    public func offerProtocols(_ protocols: [String]) -> Bool {
        var wire: [UInt8] = []
        for name in protocols {
            let bytes = Array(name.utf8)
            guard !bytes.isEmpty, bytes.count <= 255 else { return false }
            wire.append(UInt8(bytes.count))
            wire.append(contentsOf: bytes)
        }
        return wire.withUnsafeBufferPointer { ps_tls_set_alpn(pointer, $0.baseAddress, UInt32($0.count)) } == 1
    }

    /// The protocol the server chose by ALPN once the handshake is done; nil when it chose none
    /// (a server without ALPN: HTTP/1.1).
    public var selectedProtocol: String? {
        var name = [UInt8](repeating: 0, count: 255)
        let length = name.withUnsafeMutableBufferPointer { ps_tls_alpn_selected(pointer, $0.baseAddress, Int32($0.count)) }
        guard length > 0 else { return nil }
        return String(decoding: name[0..<Int(length)], as: UTF8.self)
    }

    /// Whether the handshake resumed an offered session (an abbreviated handshake).
    public var resumed: Bool { ps_tls_resumed(pointer) == 1 }

    /// The protocol agreed: 0x0303 for TLS 1.2, 0x0304 for TLS 1.3.
    public var protocolVersion: Int32 { ps_tls_protocol(pointer) }

    /// libssl's last error for this session, as text.
    public func lastError() -> String {
        var error = [CChar](repeating: 0, count: 256)
        ps_tls_error(pointer, &error, 256)
        return String(cText: error)
    }
}

/// A TLS session a client keeps to resume (`SSL_SESSION`, reference counted by libssl), freed
/// with its handle. Immutable once made; used on one loop's thread.
public final class TLSSavedSession: @unchecked Sendable {
    fileprivate let pointer: UnsafeMutableRawPointer

    fileprivate init(pointer: UnsafeMutableRawPointer) { self.pointer = pointer }

    deinit { ps_tls_saved_session_free(pointer) }
}
