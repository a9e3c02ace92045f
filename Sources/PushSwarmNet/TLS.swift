import PushSwarmCore
import PushSwarmSystem

/// A TLS client configuration (libssl): certificate verification on unless `insecure`, extra
/// trusted roots from `caFile` (a self-signed staging host's certificate, for example).
public final class TLSContext: Sendable {
    let handle: TLSContextHandle
    public let verifies: Bool

    public init(insecure: Bool = false, caFile: String? = nil) throws(NetError) {
        switch TLSContextHandle.make(verify: !insecure, caFile: caFile) {
        case .success(let handle): self.handle = handle
        case .failure(let error): throw NetError(.tlsHandshake, detail: "cannot set up TLS: \(error.message)")
        }
        verifies = !insecure
    }
}

/// A TLS server configuration (libssl): the certificate chain and key a server presents, and
/// ALPN that agrees `h2` with a client that offers it (the built-in mock's `--tls-cert`).
public final class TLSServerContext: Sendable {
    let handle: TLSContextHandle

    public init(certificateFile: String, keyFile: String) throws(NetError) {
        switch TLSContextHandle.makeServer(certificateFile: certificateFile, keyFile: keyFile) {
        case .success(let handle): self.handle = handle
        case .failure(let error): throw NetError(.tlsHandshake, detail: "cannot set up TLS with \(certificateFile) and \(keyFile): \(error.message)")
        }
    }
}

/// One TLS session over a connected socket.
final class TLSSession {
    let handle: TLSSessionHandle

    /// The server's side, on an accepted socket.
    init?(accepting context: TLSServerContext, fd: Int32) {
        guard let handle = TLSSessionHandle(accepting: context.handle, fd: fd) else { return nil }
        self.handle = handle
    }

    init?(context: TLSContext, fd: Int32, hostName: String) {
        guard let handle = TLSSessionHandle(context: context.handle, fd: fd, hostName: hostName, verify: context.verifies) else { return nil }
        self.handle = handle
    }

    /// A step of the handshake: 1 done, -1 wants to read, -2 wants to write, 0 failed.
    func handshake() -> Int32 { handle.handshake() }

    /// As `TLSSessionHandle.write`.
    func write(_ bytes: Span<UInt8>) -> Int32 { handle.write(bytes) }

    func lastError() -> String { handle.lastError() }

    /// Full or resumed, once the handshake is done.
    var handshakeKind: TLSHandshake { handle.resumed ? .resumed : .full }
}
