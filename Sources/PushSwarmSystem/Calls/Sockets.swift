public import CPushSwarmShim
import Glibc

/// The socket and clock calls PushSwarmNet makes whose C arguments are pointers, behind
/// signatures that take spans, arrays and values: each checks its lengths, in release builds too.
public enum Sockets {
    /// Nanoseconds on the monotonic clock.
    public static func monotonicNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }

    /// Starts connecting `fd` to the IPv6 `address` (16 bytes) at `port`; as connect(2): 0, or
    /// -1 with `errno` set.
    public static func connectIPv6(_ fd: Int32, address: [UInt8], port: UInt16) -> Int32 {
        precondition(address.count == 16, "an IPv6 address is 16 bytes, not \(address.count)")
        return address.withUnsafeBufferPointer { ps_connect_ipv6(fd, $0.baseAddress, port) }
    }

    /// Accepts a connection on the listening `fd`: the new descriptor (or -1 with `errno` set)
    /// and the peer's IPv4 address in host order (0 for another family).
    public static func accept(_ fd: Int32) -> (fd: Int32, peerIPv4: UInt32) {
        var peer: UInt32 = 0
        let accepted = ps_accept(fd, &peer)
        return (accepted, peer)
    }

    /// Sends what the socket takes of `bytes` now: the count, or -1 with `errno` set.
    public static func send(_ fd: Int32, _ bytes: Span<UInt8>) -> Int {
        bytes.withUnsafeBufferPointer { ps_send(fd, $0.baseAddress, $0.count) }
    }

    /// Waits for readiness on `epoll` for at most `timeoutNanoseconds` (epoll_pwait2; rounded up
    /// to whole milliseconds on a kernel before 5.11), filling `events` from the start (at most
    /// its count): how many were filled, or -1 with `errno` set.
    public static func epollWait(_ epoll: Int32, into events: inout [ps_event], timeoutNanoseconds: UInt64) -> Int32 {
        let capacity = Int32(min(events.count, Int(Int32.max)))
        let timeout = Int64(min(timeoutNanoseconds, UInt64(Int64.max)))
        return events.withUnsafeMutableBufferPointer { ps_epoll_wait_ns(epoll, $0.baseAddress, capacity, timeout) }
    }

    /// An IPv6 address (16 bytes) as text (RFC 5952's form, by inet_ntop).
    public static func ipv6Text(_ address: [UInt8]) -> String {
        precondition(address.count == 16, "an IPv6 address is 16 bytes, not \(address.count)")
        var text = [CChar](repeating: 0, count: 64)
        var raw = address
        _ = inet_ntop(AF_INET6, &raw, &text, 64)
        return String(cText: text)
    }

    /// A literal IPv4 or IPv6 address (inet_pton), or nil.
    public static func parseAddress(_ literal: String) -> ResolvedAddress? {
        var v4 = in_addr()
        if inet_pton(AF_INET, literal, &v4) == 1 { return .v4(UInt32(bigEndian: v4.s_addr)) }
        var v6 = [UInt8](repeating: 0, count: 16)
        if inet_pton(AF_INET6, literal, &v6) == 1 { return .v6(v6) }
        return nil
    }

    /// strerror's text for `code`.
    public static func errorText(_ code: Int32) -> String {
        strerror(code).map { String(cString: $0) } ?? "error \(code)"
    }

    /// One address the resolver gave, or a literal parsed.
    public enum ResolvedAddress: Equatable, Sendable {
        /// Host order.
        case v4(UInt32)
        /// 16 bytes.
        case v6([UInt8])
    }

    /// The addresses of `host` by the system resolver (getaddrinfo), in its order; or the
    /// resolver's message.
    public static func resolve(_ host: String) -> Result<[ResolvedAddress], ResolverError> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &result)
        guard status == 0, let first = result else {
            return .failure(ResolverError(message: String(cString: gai_strerror(status))))
        }
        defer { freeaddrinfo(first) }
        var found: [ResolvedAddress] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let current = node {
            if let address = current.pointee.ai_addr {
                if current.pointee.ai_family == AF_INET {
                    let value = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
                    found.append(.v4(UInt32(bigEndian: value)))
                } else if current.pointee.ai_family == AF_INET6 {
                    let bytes = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                        withUnsafeBytes(of: pointer.pointee.sin6_addr) { Array($0) }
                    }
                    found.append(.v6(bytes))
                }
            }
            node = current.pointee.ai_next
        }
        return .success(found)
    }

    public struct ResolverError: Error, Sendable {
        public let message: String
    }
}

extension String {
    /// The text of a NUL-terminated C buffer (all of it when there is no NUL).
    public init(cText: [CChar]) {
        self = String(decoding: cText.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
