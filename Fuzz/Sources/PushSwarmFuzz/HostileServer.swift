import Dispatch
import Foundation
import Glibc
import PushSwarmNet
import Synchronization

/// The `hostile-server` target: PushSwarm's HTTP client, over TLS or not (the first byte picks),
/// sends a request to a loopback server that answers with the input: a TLS flight cut short, an
/// alert, a reset in the handshake or after the headers, garbage, a closed connection. Each
/// request ends (an answer, a failure, a timeout; never a trap or a hang: a request not ended
/// within 10 s stops the target), and a failed one leaves no connection open.
enum HostileServer {
    /// One loop of the client's, a TLS context that takes any certificate (the peer has none it
    /// could prove), and a listener on loopback the target accepts from.
    static let group = EventLoopGroup(threads: 1, name: "fuzz-client")
    static let tlsClient = HTTPClient(group: group, configuration: .init(
        connectTimeoutNanoseconds: 2_000_000_000, tls: try! TLSContext(insecure: true),
        limits: HTTPParser.Limits(maxHeaderBytes: 4_096, maxBodyBytes: 65_536)
    ))
    static let plainClient = HTTPClient(group: group, configuration: .init(
        connectTimeoutNanoseconds: 2_000_000_000, limits: HTTPParser.Limits(maxHeaderBytes: 4_096, maxBodyBytes: 65_536)
    ))
    static let listener: (fd: Int32, port: UInt16) = {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        precondition(bound == 0 && listen(fd, 16) == 0, "cannot listen on loopback")
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return (fd, UInt16(bigEndian: address.sin_port))
    }()

    /// First byte: bit 0 TLS, bit 1 a reset (else a close) once the input is sent, bit 2 the
    /// server reads what the client sent first, bits 3-7 the piece size (1 to 32 bytes).
    static func run(_ input: [UInt8]) {
        guard let first = input.first else { return }
        let tls = first & 1 != 0
        let reset = first & 2 != 0
        let readsFirst = first & 4 != 0
        let piece = Int(first >> 3) + 1
        let url = TargetURL("\(tls ? "https" : "http")://127.0.0.1:\(listener.port)/fuzz")!
        let client = tls ? tlsClient : plainClient
        let ending = Ending()
        client.execute(HTTPClientRequest(method: "POST", url: url, body: Array("{}".utf8), timeoutNanoseconds: 3_000_000_000)) { result in
            ending.result.withLock { $0 = result }
            ending.done.signal()
        }
        // A request may end without a connection to this server (one kept alive from the last
        // input, found closed): then there is none to accept.
        var ready = pollfd(fd: listener.fd, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, 5_000) == 1 else { return finish(client, ending) }
        let peer = accept(listener.fd, nil, nil)
        precondition(peer >= 0, "accept failed")
        var wait = timeval(tv_sec: 0, tv_usec: 200_000)
        _ = setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 16_384)
        if readsFirst { _ = recv(peer, &buffer, buffer.count, 0) }
        FuzzTarget.send(Array(input.dropFirst()), inPiecesOf: piece, to: peer)
        if reset {
            var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(peer, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        } else {
            shutdown(peer, Int32(SHUT_WR))
            while recv(peer, &buffer, buffer.count, 0) > 0 {}
        }
        close(peer)
        finish(client, ending)
    }

    /// How the exchange ended, told from the client's loop.
    private final class Ending: Sendable {
        let result = Mutex<HTTPResult?>(nil)
        let done = DispatchSemaphore(value: 0)
    }

    private static func finish(_ client: HTTPClient, _ ending: Ending) {
        precondition(ending.done.wait(timeout: .now() + 10) == .success, "a request to a hostile server never ended")
        if case .response? = ending.result.withLock({ $0 }) { return }
        // A failed exchange gave its connection back before it ended.
        precondition(client.openConnections == 0, "a failed exchange left \(client.openConnections) connections open")
    }
}
