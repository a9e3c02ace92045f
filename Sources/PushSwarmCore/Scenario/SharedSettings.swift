/// Readers for settings every platform's section shares: mock latency and faults, retry tables.
extension ObjectReader {
    /// Reads `latency`, `http503Rate` and `loseAcceptedRate` from this (mock) object.
    public mutating func readMockBehaviour() throws -> MockBehaviour {
        var behaviour = MockBehaviour()
        if let latency = try optional("latency", { try $0.durationDistribution() }) { behaviour.latency = latency }
        if let rate = try optional("http503Rate", { try $0.fraction() }) { behaviour.http503Rate = rate }
        if let rate = try optional("loseAcceptedRate", { try $0.fraction() }) { behaviour.loseAcceptedRate = rate }
        return behaviour
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
        if let row = try object.optional("networkError", { try $0.retryRule(base: base.networkError) }) { table.networkError = row }
        if let row = try object.optional("serverError", { try $0.retryRule(base: base.serverError) }) { table.serverError = row }
        if let row = try object.optional("rateLimited", { try $0.retryRule(base: base.rateLimited) }) { table.rateLimited = row }
        try object.finish()
        return table
    }

    /// Reads one retry rule over `base`: `initialDelay`, `multiplier`, `maxDelay`, `maxRetries`, `whenExhausted`.
    public func retryRule(base: RetryRule) throws -> RetryRule {
        var object = try object()
        var rule = base
        if let delay = try object.optional("initialDelay", { try $0.duration() }) { rule.initialDelay = delay }
        if let multiplier = try object.optional("multiplier", { try $0.number(in: 1...100) }) { rule.multiplier = multiplier }
        if let delay = try object.optional("maxDelay", { try $0.duration() }) { rule.maximumDelay = delay }
        if let retries = try object.optional("maxRetries", { try $0.integer(minimum: 0, maximum: 1_000) }) { rule.maximumRetries = retries }
        if let exhausted = try object.optional("whenExhausted", { try $0.choice(["drop", "keepForNextLaunch"]) }) {
            rule.whenExhausted = RetryRule.WhenExhausted(rawValue: exhausted) ?? .drop
        }
        try object.finish()
        return rule
    }
}
