import CPushSwarmShim
import Foundation
import PushSwarmSystem
import Synchronization

/// An IP address, v4 or v6.
public enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    /// Host byte order.
    case v4(UInt32)
    case v6([UInt8])

    /// Parses a literal IPv4 or IPv6 address (brackets allowed around v6).
    public init?(_ text: String) {
        var literal = text
        if literal.hasPrefix("["), literal.hasSuffix("]") { literal = String(literal.dropFirst().dropLast()) }
        switch Sockets.parseAddress(literal) {
        case .v4(let value)?:
            self = .v4(value)
            return
        case .v6(let bytes)?:
            self = .v6(bytes)
            return
        case nil:
            break
        }
        return nil
    }

    public static let loopback = IPAddress.v4(0x7F00_0001)

    /// 127.0.0.0/8 or ::1: where PushSwarm may send traffic in tests and benchmarks, and where a
    /// device's NAT source address can be bound.
    public var isLoopback: Bool {
        switch self {
        case .v4(let value): value >> 24 == 127
        case .v6(let bytes): bytes == [UInt8](repeating: 0, count: 15) + [1]
        }
    }

    public var description: String {
        switch self {
        case .v4(let value):
            return "\(value >> 24).\(value >> 16 & 0xFF).\(value >> 8 & 0xFF).\(value & 0xFF)"
        case .v6(let bytes):
            return Sockets.ipv6Text(bytes)
        }
    }
}

/// An IP address and port.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    public var ip: IPAddress
    public var port: UInt16

    public init(ip: IPAddress, port: UInt16) {
        self.ip = ip
        self.port = port
    }

    /// Parses `host:port` with a literal address (`127.0.0.1:8080`, `[::1]:8080`).
    public init?(parsing text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]),
              let ip = IPAddress(String(text[..<colon]))
        else { return nil }
        self.init(ip: ip, port: port)
    }

    public var description: String {
        if case .v6 = ip { return "[\(ip)]:\(port)" }
        return "\(ip):\(port)"
    }
}

public enum Resolver {
    /// Names looked up so far in this process, and what came of it: the system resolver blocks,
    /// so a name is looked up once, not on every connection an event loop opens (and a name that
    /// does not resolve fails at once after that). `NetworkTransport` looks the targets up before
    /// the run starts.
    private static let cache = Mutex<[String: Result<IPAddress, NetError>]>([:])

    /// The address to connect to for `origin`: its host's first address, looked up once.
    public static func address(of origin: Origin) -> Result<SocketAddress, NetError> {
        let known = cache.withLock { $0[origin.host] }
        let found: Result<IPAddress, NetError>
        if let known {
            found = known
        } else {
            do {
                if let ip = try resolve(origin.host).first {
                    found = .success(ip)
                } else {
                    found = .failure(NetError(.dnsFailure, detail: "\(origin.host): no address"))
                }
            } catch {
                found = .failure(error)
            }
            cache.withLock { $0[origin.host] = found }
        }
        return found.map { SocketAddress(ip: $0, port: origin.port) }
    }

    /// The addresses of `host` (a literal, or a name through the system resolver), IPv4 first.
    public static func resolve(_ host: String) throws(NetError) -> [IPAddress] {
        if let literal = IPAddress(host) { return [literal] }
        let found: [Sockets.ResolvedAddress]
        switch Sockets.resolve(host) {
        case .success(let addresses): found = addresses
        case .failure(let error): throw NetError(.dnsFailure, detail: "\(host): \(error.message)")
        }
        var v4: [IPAddress] = []
        var v6: [IPAddress] = []
        for address in found {
            switch address {
            case .v4(let value):
                let ip = IPAddress.v4(value)
                if !v4.contains(ip) { v4.append(ip) }
            case .v6(let bytes):
                let ip = IPAddress.v6(bytes)
                if !v6.contains(ip) { v6.append(ip) }
            }
        }
        return v4 + v6
    }
}

/// Why a socket operation failed, as a short stable reason (a metrics key) and a detail for people.
public struct NetError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable {
        case connectionRefused, connectionReset, connectTimeout, closedBeforeResponse, malformedResponse
        case dnsFailure, addressUnavailable, tooManyOpenFiles, tlsHandshake, tlsVerification, socketError
        case bodyTooLarge, tooManyRedirects, webSocketHandshake, webSocketProtocol
        /// HTTP/2: the server reset the request's stream (its code in the detail), or a request
        /// it left unprocessed went unanswered after its retries; this end ended the connection
        /// for a broken rule (the RFC's code in the detail).
        case streamReset, unprocessed, http2Protocol
    }

    public var reason: Reason
    public var detail: String

    public init(_ reason: Reason, detail: String = "") {
        self.reason = reason
        self.detail = detail
    }

    /// The error an errno from socket calls means.
    static func errno(_ code: Int32, during action: String) -> NetError {
        let text = Sockets.errorText(code)
        switch code {
        case ECONNREFUSED: return NetError(.connectionRefused, detail: "\(action): \(text)")
        case ECONNRESET, EPIPE: return NetError(.connectionReset, detail: "\(action): \(text)")
        case EADDRNOTAVAIL, EADDRINUSE: return NetError(.addressUnavailable, detail: "\(action): \(text)")
        case EMFILE, ENFILE: return NetError(.tooManyOpenFiles, detail: "\(action): \(text)")
        default: return NetError(.socketError, detail: "\(action): \(text) (errno \(code))")
        }
    }

    public var description: String { detail.isEmpty ? reason.rawValue : "\(reason.rawValue): \(detail)" }
}

/// The process's limit on open files, raised to the hard limit first.
public enum FileLimit {
    public static func raiseAndRead() -> Int { ps_raise_open_files_limit() }
}
