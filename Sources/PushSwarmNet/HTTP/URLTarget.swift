import Foundation
import PushSwarmCore

/// Where requests go: scheme, host and port (an origin, RFC 6454).
public struct Origin: Hashable, Sendable, CustomStringConvertible {
    public let scheme: String
    public let host: String
    public let port: UInt16
    public let isTLS: Bool
    /// The Host header: the port only when it is not the scheme's default. Computed once: every
    /// request writes it.
    public let hostHeader: String
    /// Computed once: pools are looked up by origin on every request.
    private let hash: Int

    public static func == (lhs: Origin, rhs: Origin) -> Bool {
        lhs.hash == rhs.hash && lhs.port == rhs.port && lhs.host == rhs.host && lhs.scheme == rhs.scheme
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(hash) }

    public init(scheme: String, host: String, port: UInt16) {
        self.scheme = scheme
        self.host = host
        self.port = port
        isTLS = scheme == "https" || scheme == "wss"
        let bracketed = host.utf8.contains(58) ? "[\(host)]" : host
        hostHeader = port == (isTLS ? 443 : 80) ? bracketed : "\(bracketed):\(port)"
        var hasher = Hasher()
        hasher.combine(scheme)
        hasher.combine(host)
        hasher.combine(port)
        hash = hasher.finalize()
    }

    public var description: String { "\(scheme)://\(hostHeader)" }
}

/// An absolute http(s) or ws(s) URL split into origin and path-with-query.
public struct TargetURL: Hashable, Sendable, CustomStringConvertible {
    public var origin: Origin
    /// Starts with `/`.
    public var path: String

    public init(origin: Origin, path: String) {
        self.origin = origin
        self.path = path
    }

    /// Parses `scheme://host[:port][/path][?query]`; nil when it is not such a URL.
    public init?(_ text: String) {
        guard let schemeEnd = text.range(of: "://") else { return nil }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard ["http", "https", "ws", "wss"].contains(scheme) else { return nil }
        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var path = String(rest[authorityEnd...])
        if let hash = path.firstIndex(of: "#") { path = String(path[..<hash]) }
        if path.isEmpty || path.hasPrefix("?") { path = "/" + path }
        let isTLS = scheme == "https" || scheme == "wss"
        var host = String(authority)
        var port: UInt16 = isTLS ? 443 : 80
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            if after.hasPrefix(":") {
                guard let value = UInt16(after.dropFirst()) else { return nil }
                port = value
            } else if !after.isEmpty {
                return nil
            }
            host = String(host[host.index(after: host.startIndex)..<close])
        } else if let colon = host.lastIndex(of: ":") {
            guard let value = UInt16(host[host.index(after: colon)...]) else { return nil }
            port = value
            host = String(host[..<colon])
        }
        guard !host.isEmpty, !host.contains(" ") else { return nil }
        self.init(origin: Origin(scheme: scheme, host: host.lowercased(), port: port), path: path)
    }

    /// Resolves a Location header against this URL (RFC 3986 section 5.2: absolute,
    /// network-path, absolute-path or relative reference, dot segments removed); nil for a URL
    /// this client cannot fetch (another scheme, a bad authority).
    public func resolving(_ location: String) -> TargetURL? {
        let resolved = URIReference.resolve(location, against: path)
        switch (resolved.scheme, resolved.authority) {
        case (let scheme?, let authority?): return TargetURL("\(scheme)://\(authority)\(resolved.path)")
        case (nil, let authority?): return TargetURL("\(origin.scheme)://\(authority)\(resolved.path)")
        case (_?, nil): return nil
        case (nil, nil): return TargetURL(origin: origin, path: resolved.path)
        }
    }

    public var description: String { origin.description + path }
}
