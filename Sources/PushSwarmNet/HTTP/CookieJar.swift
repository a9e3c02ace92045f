import Foundation
public import PushSwarmCore
import Synchronization

/// One device's cookies (RFC 6265, the parts a mobile SDK's HTTP stack uses): host-only and
/// domain cookies, Path, Max-Age and Expires, Secure. Thread-safe: a device's requests may finish
/// on any event loop.
public final class CookieJar: Sendable {
    struct Cookie: Sendable {
        var name: String
        var value: String
        var domain: String
        var hostOnly: Bool
        var path: String
        var secure: Bool
        /// Monotonic nanoseconds; nil for a session cookie.
        var expires: UInt64?
    }

    private let cookies = Mutex<[Cookie]>([])

    public init() {}

    /// Stores the cookies of a response from `url`.
    public func store(_ headers: [Header], from url: TargetURL) {
        let now = Monotonic.now()
        for header in headers where header.name.lowercased() == "set-cookie" {
            guard let cookie = Self.parse(header.value, from: url, now: now) else { continue }
            cookies.withLock { jar in
                jar.removeAll { $0.name == cookie.name && $0.domain == cookie.domain && $0.path == cookie.path }
                if cookie.expires.map({ $0 > now }) ?? true { jar.append(cookie) }
            }
        }
    }

    /// The Cookie header value for a request to `url`, nil when none applies.
    public func header(for url: TargetURL) -> String? {
        let now = Monotonic.now()
        let host = url.origin.host
        let path = url.path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        let matching = cookies.withLock { jar -> [Cookie] in
            jar.removeAll { $0.expires.map { $0 <= now } ?? false }
            return jar.filter { cookie in
                let domainMatches = cookie.hostOnly ? host == cookie.domain : (host == cookie.domain || host.hasSuffix("." + cookie.domain))
                let pathMatches = path == cookie.path || path.hasPrefix(cookie.path.hasSuffix("/") ? cookie.path : cookie.path + "/")
                return domainMatches && pathMatches && (!cookie.secure || url.origin.isTLS)
            }
        }
        guard !matching.isEmpty else { return nil }
        return matching.sorted { $0.path.count > $1.path.count }.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    /// The value of the cookie called `name`, if the jar holds one.
    public func value(of name: String) -> String? {
        cookies.withLock { jar in jar.first { $0.name == name }?.value }
    }

    static func parse(_ text: String, from url: TargetURL, now: UInt64) -> Cookie? {
        let parts = text.split(separator: ";").map { $0.trimmingSpaces() }
        guard let pair = parts.first, let equals = pair.firstIndex(of: "=") else { return nil }
        let name = pair[..<equals].trimmingSpaces()
        guard !name.isEmpty else { return nil }
        var cookie = Cookie(
            name: name, value: pair[pair.index(after: equals)...].trimmingSpaces(), domain: url.origin.host,
            hostOnly: true, path: defaultPath(url.path), secure: false, expires: nil
        )
        var maxAgeSeen = false
        for attribute in parts.dropFirst() {
            let pieces = attribute.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces() }
            let key = pieces[0].lowercased()
            let value = pieces.count > 1 ? pieces[1] : ""
            switch key {
            case "domain":
                var domain = value.lowercased()
                if domain.hasPrefix(".") { domain.removeFirst() }
                guard !domain.isEmpty else { continue }
                // A cookie for another site is ignored (section 5.3 step 6).
                guard url.origin.host == domain || url.origin.host.hasSuffix("." + domain) else { return nil }
                cookie.domain = domain
                cookie.hostOnly = false
            case "path":
                if value.hasPrefix("/") { cookie.path = value }
            case "secure":
                cookie.secure = true
            case "max-age":
                guard let seconds = Int(value) else { continue }
                maxAgeSeen = true
                cookie.expires = seconds <= 0 ? 0 : now + UInt64(min(Double(seconds), maximumLifetime) * 1e9)
            case "expires":
                guard !maxAgeSeen, let date = httpDate(value) else { continue }
                let remaining = date.timeIntervalSinceNow
                cookie.expires = remaining <= 0 ? 0 : now + UInt64(min(remaining, maximumLifetime) * 1e9)
            default:
                break
            }
        }
        return cookie
    }

    /// RFC 6265bis sections 5.6.1 and 5.6.2: a cookie lives at most 400 days, whatever its
    /// Max-Age or Expires says. A server's `Max-Age=9223372036854775807` or a date in year 9999
    /// once overflowed the expiry's nanoseconds and trapped the run.
    static let maximumLifetime: Double = 400 * 86_400

    private static func defaultPath(_ path: String) -> String {
        let base = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "/"
        guard base.hasPrefix("/"), let last = base.lastIndex(of: "/"), last != base.startIndex else { return "/" }
        return String(base[..<last])
    }

    private static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE, dd-MMM-yyyy HH:mm:ss zzz"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
