import PushSwarmMetrics
import PushSwarmSystem

/// One HTTP request as a platform client builds it: no I/O, just the bytes to send.
public struct Request: Sendable, Equatable {
    public var method: String
    /// Path and query, starting with `/`.
    public var path: String
    public var headers: [Header]
    public var body: [UInt8]
    /// A redirect's `Location` values followed so far, in order (RFC 9110 section 10.2.2): each a
    /// URI reference resolved against the URL before it, from `path` under the target. Empty for
    /// every request but a redirect's next hop.
    public var locations: [String]

    public init(method: String, path: String, headers: [Header] = [], body: [UInt8] = [], locations: [String] = []) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.locations = locations
    }

    /// Where the request goes under a target without a path: `path`, then each of `locations`
    /// resolved against it, an absolute URL on any host by its path. What the simulated transport
    /// hands its mocks; a live one resolves against the real URLs (`TargetURL.resolving`).
    public var resolvedPath: String {
        locations.reduce(path) { URIReference.resolve($1, against: $0).path }
    }

    /// The request as a service under a target without a path receives it: at `resolvedPath`,
    /// with no locations left to follow.
    public var resolved: Request {
        guard !locations.isEmpty else { return self }
        return Request(method: method, path: resolvedPath, headers: headers, body: body)
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The path without its query (`/events?x=1` → `/events`): what services route by.
    public var pathWithoutQuery: String {
        // Searched as bytes in place, per request: a Character search walks grapheme clusters,
        // and a `UTF8View`'s generic search costs far more.
        guard let query = path.withUTF8Span({ $0.firstIndex(of: UInt8(ascii: "?")) }) else { return path }
        return String(decoding: path.utf8.prefix(query), as: UTF8.self)
    }
}

/// One HTTP response as a mock service builds it or a transport received it.
public struct Response: Sendable, Equatable {
    public var status: Int
    public var headers: [Header]
    public var body: [UInt8]

    public init(status: Int, headers: [Header] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}

public struct Header: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    /// The headers of a JSON body, as every platform's client and mock send them.
    public static let jsonContentType = [Header("Content-Type", "application/json")]
}

/// One socket of one device, as a run's transports and partitions key what they hold for it.
public struct SocketKey: Hashable, Sendable {
    /// The device's index in its partition.
    public var device: Int
    /// The socket's number, as the device's client chose it.
    public var socket: UInt64

    public init(device: Int, socket: UInt64) {
        self.device = device
        self.socket = socket
    }
}

/// The public address a device's traffic comes from, as a service sees it: devices behind the same
/// carrier-grade NAT share one. Numbered from 0 and written as a loopback address (127.0.0.1 is
/// number 0), which is also the address bound for it in wall-clock runs on this machine.
public struct SourceAddress: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var index: UInt32

    public init(index: UInt32) { self.index = index }

    public static func < (lhs: SourceAddress, rhs: SourceAddress) -> Bool { lhs.index < rhs.index }

    public var description: String {
        let value = index + 1
        return "127.\(value >> 16 & 0xFF).\(value >> 8 & 0xFF).\(value & 0xFF)"
    }
}
