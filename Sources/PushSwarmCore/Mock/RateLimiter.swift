import PushSwarmMetrics

/// A rate limit a mock service applies before it looks at a request, as a real service's edge
/// would: one of four algorithms, keyed by what the scenario chooses, answering 429 or 503 with or
/// without `Retry-After`.
public struct RateLimitRule: Sendable, Equatable {
    public enum Algorithm: Sendable, Equatable {
        /// Starts full with `burst` tokens and refills at `perSecond`; a request takes one token.
        /// Under a steady overload λ > rate for T seconds it admits burst + rate × T.
        case tokenBucket(perSecond: Double, burst: Int)
        /// nginx's `limit_req`, to the millisecond: excess requests drain at `perSecond`; up to
        /// `burst` of excess is admitted (delayed until it would have drained, unless `nodelay`),
        /// beyond it refused.
        case leakyBucket(perSecond: Double, burst: Int, nodelay: Bool)
        /// At most `limit` per calendar window of the run (counters reset at each boundary).
        case fixedWindow(limit: Int, window: TimeSpan)
        /// At most `limit` in any window of length `window` (a sliding log).
        case slidingWindow(limit: Int, window: TimeSpan)
    }

    /// What one limit counts separately.
    public enum Key: Sendable, Equatable {
        /// Each source address (devices behind one NAT address share it).
        case sourceIP
        /// Each endpoint (path without the query).
        case endpoint
        case sourceIPAndEndpoint
        /// Each value of a request header (a tenant or API key header); requests without it share one.
        case header(String)
        /// Each value of a top-level field of a JSON body (an `api_key` or a `tenant_id`).
        case bodyField(String)
        /// One limit for everything.
        case global
    }

    public var algorithm: Algorithm
    public var key: Key
    /// 429, or 503 as nginx answers by default.
    public var status: Int
    public var sendsRetryAfter: Bool
    /// Path prefixes the limit applies to; empty: every path.
    public var paths: [String]

    public init(algorithm: Algorithm, key: Key = .sourceIP, status: Int = 429, sendsRetryAfter: Bool = true, paths: [String] = []) {
        self.algorithm = algorithm
        self.key = key
        self.status = status
        self.sendsRetryAfter = sendsRetryAfter
        self.paths = paths
    }
}

/// One rule's state: what it has admitted, per key.
public struct RateLimiter: Sendable {
    public enum Verdict: Sendable, Equatable {
        /// Admitted, to be answered after `delay` (nginx's delayed excess; zero otherwise).
        case admit(delay: TimeSpan)
        /// Refused; a request of this key would be admitted after `retryAfter`.
        case refuse(retryAfter: TimeSpan)
    }

    private enum State: Sendable {
        case tokens(available: Double, at: Instant)
        /// nginx's node: excess in thousandths of a request, and the last admit in milliseconds.
        case leaky(excess: Int64, lastMilliseconds: Int64)
        case window(index: Int64, count: Int)
    }

    public let rule: RateLimitRule
    private var states: [String: State] = [:]
    private var sliding: SlidingWindowLimiter<String>?

    public init(rule: RateLimitRule) {
        self.rule = rule
        if case .slidingWindow(let limit, let window) = rule.algorithm { sliding = SlidingWindowLimiter(limit: limit, window: window) }
    }

    /// Whether the rule applies to `path` (without a query).
    public func applies(to path: String) -> Bool {
        rule.paths.isEmpty || rule.paths.contains { path.hasPrefix($0) }
    }

    public func key(for request: Request, path: String, from source: SourceAddress) -> String {
        switch rule.key {
        case .sourceIP: String(source.index)
        case .endpoint: path
        case .sourceIPAndEndpoint: "\(source.index) \(path)"
        case .header(let name): request.header(name) ?? ""
        case .bodyField(let name): Self.field(name, of: request.body)
        case .global: ""
        }
    }

    /// A top-level string (or number) field of a JSON body; empty when there is none.
    static func field(_ name: String, of body: [UInt8]) -> String {
        guard let value = try? JSONParser.parse(body), let field = value[name] else { return "" }
        if let text = field.stringValue { return text }
        return field.numberValue.map { String($0) } ?? ""
    }

    public mutating func check(_ key: String, at now: Instant) -> Verdict {
        switch rule.algorithm {
        case .tokenBucket(let rate, let burst):
            var available = Double(burst)
            if case .tokens(let stored, let at)? = states[key] {
                available = min(Double(burst), stored + rate * (now - at).seconds)
            }
            guard available >= 1 else {
                states[key] = .tokens(available: available, at: now)
                return .refuse(retryAfter: .seconds((1 - available) / rate))
            }
            states[key] = .tokens(available: available - 1, at: now)
            return .admit(delay: .zero)

        case .leakyBucket(let rate, let burst, let nodelay):
            // ngx_http_limit_req_module: rate and burst in thousandths, time in milliseconds.
            let perSecond = Int64((rate * 1_000).rounded())
            let limit = Int64(burst) * 1_000
            let nowMilliseconds = now.microseconds / 1_000
            guard case .leaky(let stored, let last)? = states[key] else {
                states[key] = .leaky(excess: 0, lastMilliseconds: nowMilliseconds)
                return .admit(delay: .zero)
            }
            let step = Self.leakyStep(excess: stored, lastMilliseconds: last, nowMilliseconds: nowMilliseconds, perSecond: perSecond, limit: limit)
            guard step.admitted else {
                return .refuse(retryAfter: .milliseconds(Double((step.excess - limit) * 1_000 / max(perSecond, 1))))
            }
            states[key] = .leaky(excess: step.excess, lastMilliseconds: step.lastMilliseconds)
            return .admit(delay: nodelay ? .zero : .milliseconds(Double(step.excess * 1_000 / max(perSecond, 1))))

        case .fixedWindow(let limit, let window):
            let index = now.microseconds >= 0 ? now.microseconds / window.microseconds : (now.microseconds + 1) / window.microseconds - 1
            var count = 0
            if case .window(let stored, let storedCount)? = states[key], stored == index { count = storedCount }
            guard count < limit else {
                return .refuse(retryAfter: TimeSpan(microseconds: (index + 1) * window.microseconds - now.microseconds))
            }
            states[key] = .window(index: index, count: count + 1)
            return .admit(delay: .zero)

        case .slidingWindow:
            switch sliding?.admit(key, at: now) ?? .admitted {
            case .admitted: return .admit(delay: .zero)
            case .limited(let retryAfter): return .refuse(retryAfter: retryAfter)
            }
        }
    }

    /// The answer to a refused request: the rule's status, a JSON reason, and `Retry-After` in
    /// whole seconds (rounded up, at least 1) when the rule sends it.
    /// One request for a key with state through `ngx_http_limit_req_module`'s arithmetic (rate
    /// and excess in thousandths of a request, time in milliseconds): the excess it makes and
    /// whether that is within `limit` (burst × 1,000); an admitted request's excess and time are
    /// the key's new state, a refused one leaves the state as it was. `fit` replays logs through
    /// the same steps.
    @inline(__always)
    public static func leakyStep(excess stored: Int64, lastMilliseconds last: Int64, nowMilliseconds now: Int64, perSecond: Int64, limit: Int64)
        -> (admitted: Bool, excess: Int64, lastMilliseconds: Int64)
    {
        var elapsed = now - last
        if elapsed < -60_000 { elapsed = 1 } else if elapsed < 0 { elapsed = 0 }
        // Times from a log may lie years apart: a product past Int64 has drained any bucket.
        let (product, overflow) = perSecond.multipliedReportingOverflow(by: elapsed)
        let drained = overflow ? Int64.max / 2 : product / 1_000
        let excess = max(0, stored - drained + 1_000)
        return (excess <= limit, excess, elapsed != 0 ? now : last)
    }

    public func refusal(retryAfter: TimeSpan) -> Response {
        var headers = [Header("Content-Type", "application/json")]
        if rule.sendsRetryAfter {
            headers.append(Header("Retry-After", String(max(1, Int((retryAfter.seconds).rounded(.up))))))
        }
        let reason = rule.status == 429 ? "rate limit exceeded" : "service temporarily unavailable (rate limit)"
        return Response(status: rule.status, headers: headers, body: Array("{\"error\":\"\(reason)\"}".utf8))
    }
}
