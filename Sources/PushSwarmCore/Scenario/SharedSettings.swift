import PushSwarmMetrics

/// Readers for settings every platform's section shares: mock latency and faults, retry tables.
extension ObjectReader {
    /// Reads `latency`, `http503Rate` and `loseAcceptedRate` from this (mock) object.
    public mutating func readMockBehaviour() throws -> MockBehaviour {
        var behaviour = MockBehaviour()
        if let latency = try optional("latency", { try $0.durationDistribution() }) { behaviour.latency = latency }
        if let rate = try optional("http503Rate", { try $0.fraction() }) { behaviour.http503Rate = rate }
        if let rate = try optional("loseAcceptedRate", { try $0.fraction() }) { behaviour.loseAcceptedRate = rate }
        if let rules = try optional("rateLimits", { try $0.array().map { try $0.rateLimitRule() } }) { behaviour.rateLimits = rules }
        if let rules = try optional("faults", { try $0.array().map { try $0.faultRule() } }) { behaviour.faults = rules }
        if let edge = try optional("edge", { reader -> EdgeSettings in
            var object = try reader.object()
            var edge = EdgeSettings()
            edge.tls = try object.optional("tls") { EdgeSettings.TLS(rawValue: try $0.choice(EdgeSettings.TLS.allCases.map(\.rawValue))) ?? .none } ?? .none
            edge.handshakesPerSecond = try object.optional("handshakesPerSecond") { try $0.number(in: 0.001...1e9) }
            edge.maxConnections = try object.optional("maxConnections") { try $0.integer(minimum: 1, maximum: 100_000_000) }
            edge.maxConcurrentStreams = try object.optional("maxConcurrentStreams") { try $0.integer(minimum: 1, maximum: 1_000_000) }
            edge.offersHTTP2 = try object.optional("http2") { try $0.bool() } ?? false
            try object.finish()
            return edge
        }) { behaviour.edge = edge }
        return behaviour
    }
}

extension JSONReader {
    /// `{"algorithm": "tokenBucket", "rate": "10/s", "burst": 20, "key": "sourceIP", "status": 429,
    /// "retryAfter": true, "paths": ["/events"]}`; `leakyBucket` takes `nodelay`, the windows take
    /// `limit` and `window` instead of `rate` and `burst`.
    public func rateLimitRule() throws -> RateLimitRule {
        var object = try object()
        let algorithm = try object.required("algorithm") { try $0.choice(["tokenBucket", "leakyBucket", "fixedWindow", "slidingWindow"]) }
        let made: RateLimitRule.Algorithm
        switch algorithm {
        case "tokenBucket", "leakyBucket":
            let rate = try object.required("rate") { try $0.ratePerSecond() }
            let burst = try object.optional("burst") { try $0.integer(minimum: 0, maximum: 10_000_000) } ?? 0
            if algorithm == "tokenBucket" {
                made = .tokenBucket(perSecond: rate, burst: max(burst, 1))
            } else {
                made = .leakyBucket(perSecond: rate, burst: burst, nodelay: try object.optional("nodelay") { try $0.bool() } ?? false)
            }
        default:
            let limit = try object.required("limit") { try $0.integer(minimum: 1, maximum: 10_000_000) }
            let window = try object.required("window") { try $0.positiveDuration() }
            made = algorithm == "fixedWindow" ? .fixedWindow(limit: limit, window: window) : .slidingWindow(limit: limit, window: window)
        }
        var rule = RateLimitRule(algorithm: made)
        if let key = try object.optional("key", { reader -> RateLimitRule.Key in
            let text = try reader.nonEmptyString()
            switch text {
            case "sourceIP": return .sourceIP
            case "endpoint": return .endpoint
            case "sourceIPAndEndpoint": return .sourceIPAndEndpoint
            case "global": return .global
            default:
                if text.hasPrefix("header:"), text.count > 7 { return .header(String(text.dropFirst(7))) }
                if text.hasPrefix("body:"), text.count > 5 { return .bodyField(String(text.dropFirst(5))) }
                throw reader.fail("must be sourceIP, endpoint, sourceIPAndEndpoint, global, header:<name> or body:<field>")
            }
        }) { rule.key = key }
        if let status = try object.optional("status", { reader -> Int in
            let status = try reader.integer(minimum: 400, maximum: 599)
            guard status == 429 || status == 503 else { throw reader.fail("must be 429 or 503") }
            return status
        }) { rule.status = status }
        if let value = try object.optional("retryAfter", { try $0.bool() }) { rule.sendsRetryAfter = value }
        if let paths = try object.optional("paths", { try $0.array().map { try $0.nonEmptyString() } }) { rule.paths = paths }
        try object.finish()
        return rule
    }

    /// `{"kind": "stall", "every": "10s", "for": "1s"}`, `{"kind": "http5xx", "status": 502, "rate": 0.01}`,
    /// `{"kind": "slowBody", "bytesPerSecond": 200, "rate": 0.05}`; `reset`, `truncated` and
    /// `malformed` take a `rate` or a window the same way; `{"kind": "goAway", "every": "5m", "for": "1s"}`
    /// is a deploy every 5 minutes.
    public func faultRule() throws -> FaultRule {
        var object = try object()
        let kindName = try object.required("kind") { try $0.choice(["http5xx", "stall", "reset", "truncated", "malformed", "slowBody", "goAway"]) }
        let kind: FaultRule.Kind
        switch kindName {
        case "http5xx":
            kind = .serverError(status: try object.optional("status") { try $0.integer(minimum: 500, maximum: 599) } ?? 503)
        case "stall": kind = .stall
        case "reset": kind = .reset
        case "truncated": kind = .truncated
        case "malformed": kind = .malformed
        case "goAway": kind = .goAway
        default: kind = .slowBody(bytesPerSecond: try object.required("bytesPerSecond") { try $0.integer(minimum: 1, maximum: 1_000_000_000) })
        }
        let rate = try object.optional("rate") { try $0.fraction() }
        let every = try object.optional("every") { try $0.positiveDuration() }
        let length = try object.optional("for") { try $0.positiveDuration() }
        let offset = try object.optional("offset") { try $0.duration() } ?? .zero
        let when: FaultRule.When
        switch (rate, every, length) {
        case (let rate?, nil, nil):
            guard kindName != "stall" else { throw fail("a stall needs a window: \"every\" and \"for\", not \"rate\"") }
            when = .rate(rate)
        case (nil, let every?, let length?):
            guard length <= every else { throw fail("\"for\" must not be longer than \"every\"") }
            when = .periodic(period: every, length: length, offset: offset)
        default:
            throw fail("a fault needs either \"rate\" (a chance per request) or \"every\" and \"for\" (a window)")
        }
        let paths = try object.optional("paths") { try $0.array().map { try $0.nonEmptyString() } } ?? []
        try object.finish()
        return FaultRule(kind: kind, when: when, paths: paths)
    }

    /// A rate: a number per second, or `"10/s"`, `"600/m"`, `"3600/h"`; zero only when
    /// `allowingZero` (a ramp from nothing, a step with no traffic).
    /// An open workload's rate: zero (a pause) up to `OpenWorkload.maximumRate`.
    public func arrivalRate() throws -> Double {
        let rate = try ratePerSecond(allowingZero: true)
        guard rate <= OpenWorkload.maximumRate else {
            throw fail("must be at most \(Int(OpenWorkload.maximumRate))/s in one process (about ten times what 16 cores send through devices); split a bigger load with --shard or --workers")
        }
        return rate
    }

    public func ratePerSecond(allowingZero: Bool = false) throws -> Double {
        let rate: Double
        switch value {
        case .number(let number):
            rate = number
        case .string(let text):
            let parts = text.split(separator: "/")
            guard parts.count == 2, let count = Double(parts[0].filter { $0 != " " }) else {
                throw fail("expected a rate such as \"10/s\", \"600/m\" or a number per second")
            }
            switch parts[1].filter({ $0 != " " }) {
            case "s": rate = count
            case "m": rate = count / 60
            case "h": rate = count / 3_600
            default: throw fail("the unit of a rate is s, m or h")
            }
        default:
            throw fail("expected a rate such as \"10/s\", found \(value.kindName)")
        }
        guard rate.isFinite, rate > 0 || (allowingZero && rate == 0) else { throw fail(allowingZero ? "must not be negative" : "must be above zero") }
        return rate
    }
}

extension JSONReader {
    /// Reads a `mock` object that holds only the shared mock behaviour.
    public func mockBehaviour() throws -> MockBehaviour {
        var object = try object()
        let behaviour = try object.readMockBehaviour()
        try object.finish()
        return behaviour
    }

    /// Reads a retry table over `base`: `{"networkError": {…}, "serverError": {…}, "rateLimited": {…}}`,
    /// each row partial.
    public func retryTable(base: RetryTable) throws -> RetryTable {
        var object = try object()
        var table = base
        for row in RetryTable.Row.allCases {
            guard let rule = try object.optional(row, { try $0.retryRule(base: table[row]) }) else { continue }
            table[row] = rule
        }
        if let budget = try object.optional("budget", { try $0.number(in: 0...100) }) { table.retryBudget = budget }
        try object.finish()
        return table
    }

    /// Reads one retry rule over `base`, only the keys present changing (`RetryRule.Key`).
    public func retryRule(base: RetryRule) throws -> RetryRule {
        var object = try object()
        var rule = base
        for key in RetryRule.Key.allCases {
            switch key {
            case .initialDelay: if let delay = try object.optional(key, { try $0.duration() }) { rule.initialDelay = delay }
            case .multiplier: if let multiplier = try object.optional(key, { try $0.number(in: 1...100) }) { rule.multiplier = multiplier }
            case .maxDelay: if let delay = try object.optional(key, { try $0.duration() }) { rule.maximumDelay = delay }
            case .maxRetries: if let retries = try object.optional(key, { try $0.integer(minimum: 0, maximum: 1_000) }) { rule.maximumRetries = retries }
            case .whenExhausted:
                if let exhausted = try object.optional(key, { try $0.choice(RetryRule.WhenExhausted.allCases.map(\.rawValue)) }) {
                    rule.whenExhausted = RetryRule.WhenExhausted(rawValue: exhausted) ?? .drop
                }
            case .jitter:
                if let jitter = try object.optional(key, { try $0.choice(RetryRule.Jitter.allCases.map(\.rawValue)) }) {
                    rule.jitter = RetryRule.Jitter(rawValue: jitter) ?? .none
                }
            case .honourRetryAfter: if let honours = try object.optional(key, { try $0.bool() }) { rule.honoursRetryAfter = honours }
            case .maxRetryAfter: if let ceiling = try object.optional(key, { try $0.duration() }) { rule.maximumRetryAfter = ceiling }
            }
        }
        try object.finish()
        return rule
    }
}
