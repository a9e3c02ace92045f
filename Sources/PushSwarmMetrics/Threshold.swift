/// A pass/fail condition on a run's results, as a CI job writes it:
/// `p99(smartapppush.events) < 200ms`, `rate(status=429) < 1%`, `rate(errors) < 0.5%`,
/// `ledger.lost == 0`, `retries.amplification <= 1.2`, `counter(notifications.tapped) > 0`.
public struct Threshold: Sendable, Equatable, CustomStringConvertible {
    public enum Metric: Sendable, Equatable {
        /// A latency quantile (0.5 … 0.999, or 1 for the maximum) in ms, of one operation or all.
        case latency(quantile: Double, operation: String?)
        /// The share of requests answered `status`.
        case statusRate(Int)
        /// The share of requests that ended in anything but a 1xx–3xx answer.
        case errorRate
        case ledgerLost
        case ledgerDuplicates
        case requestsSent
        case retryAmplification
        /// How long the run's worst storm of 429s took to drain, from its first 429 to its last
        /// retry (the story's `storm.drainedSeconds`), in milliseconds; 0 without a storm, and
        /// infinite when it had not drained by the run's end.
        case stormDrained
        case counter(String)
    }

    public enum Comparison: String, Sendable, CaseIterable {
        case lessOrEqual = "<=", greaterOrEqual = ">=", equal = "==", notEqual = "!=", less = "<", greater = ">"
    }

    public struct ParseError: Error, Sendable, Equatable {
        public var message: String
    }

    public var text: String
    public var metric: Metric
    public var comparison: Comparison
    /// In the metric's unit: milliseconds for latencies, a fraction for rates.
    public var limit: Double

    public var description: String { text }

    public init(parsing text: String) throws(ParseError) {
        self.text = text.trimmingSpaces
        // Two-character operators first, so that "<=" is not read as "<".
        var found: (Comparison, String.Index, String.Index)?
        search: for index in text.indices {
            for candidate in Comparison.allCases where text[index...].hasPrefix(candidate.rawValue) {
                found = (candidate, index, text.index(index, offsetBy: candidate.rawValue.count))
                break search
            }
        }
        guard let (comparison, start, end) = found else {
            throw ParseError(message: "\"\(text)\" has no comparison: expected METRIC < VALUE (<, <=, >, >=, ==, !=)")
        }
        self.comparison = comparison
        let name = String(text[..<start]).trimmingSpaces
        let value = String(text[end...]).trimmingSpaces
        metric = try Self.metric(name)
        guard !value.isEmpty else { throw ParseError(message: "\"\(text)\" has no limit after \(comparison.rawValue)") }
        limit = try Self.value(value, for: metric)
    }

    private static func metric(_ name: String) throws(ParseError) -> Metric {
        switch name {
        case "ledger.lost": return .ledgerLost
        case "ledger.duplicates": return .ledgerDuplicates
        case "requests.sent": return .requestsSent
        case "retries.amplification": return .retryAmplification
        case "storm.drained": return .stormDrained
        case "rate(errors)": return .errorRate
        default: break
        }
        if name.hasPrefix("rate(status="), name.hasSuffix(")"), let status = Int(name.dropFirst(12).dropLast()) { return .statusRate(status) }
        if name.hasPrefix("counter("), name.hasSuffix(")"), name.count > 9 { return .counter(String(name.dropFirst(8).dropLast())) }
        // p99, p99(operation), max, max(operation).
        var head = name
        var operation: String?
        if let open = name.firstIndex(of: "("), name.hasSuffix(")") {
            head = String(name[..<open])
            operation = String(name[name.index(after: open)..<name.index(before: name.endIndex)])
            if operation?.isEmpty == true { operation = nil }
        }
        if head == "max" { return .latency(quantile: 1, operation: operation) }
        if let quantile = Quantity.quantile(named: head), quantile < 1 { return .latency(quantile: quantile, operation: operation) }
        throw ParseError(message: "unknown metric \"\(name)\": use pNN(operation), max(operation), rate(status=NNN), rate(errors), ledger.lost, ledger.duplicates, requests.sent, retries.amplification, storm.drained or counter(name)")
    }

    private static func value(_ text: String, for metric: Metric) throws(ParseError) -> Double {
        func number(_ part: Substring) throws(ParseError) -> Double {
            guard let value = Double(part) else { throw ParseError(message: "\"\(text)\" is not a number") }
            return value
        }
        switch metric {
        case .latency, .stormDrained:
            if let milliseconds = Quantity.milliseconds(text) { return milliseconds }
            if text.hasSuffix("s") { throw ParseError(message: "\"\(text)\" is not a number") }
            throw ParseError(message: "a time limit needs a unit: \"\(text)\" should be like 200ms or 30s")
        case .statusRate, .errorRate:
            guard let share = Quantity.share(text) else { throw ParseError(message: "\"\(text)\" is not a number") }
            return share
        default:
            return try number(Substring(text))
        }
    }

    /// The metric's value in a summary, nil when the run has none (no requests of that operation).
    public func measure(_ summary: Summary) -> Double? {
        let metrics = summary.metrics
        switch metric {
        case .latency(let quantile, let operation):
            let histogram: LatencyHistogram
            if let operation {
                guard let entry = metrics.operations[operation] else { return nil }
                histogram = entry.latency
            } else {
                histogram = metrics.allLatencies
            }
            guard !histogram.isEmpty else { return nil }
            let micros = quantile >= 1 ? histogram.maximum : (histogram.value(atQuantile: quantile) ?? 0)
            return Double(micros) / 1_000
        case .statusRate(let status):
            return metrics.sent > 0 ? Double(metrics.byStatus[status] ?? 0) / Double(metrics.sent) : 0
        case .errorRate:
            return metrics.errorRate
        case .ledgerLost: return summary.ledger == nil ? nil : Double(summary.lost)
        case .ledgerDuplicates: return summary.ledger == nil ? nil : Double(summary.ledgerDuplicates)
        case .requestsSent: return Double(metrics.sent)
        case .retryAmplification: return metrics.retryAmplification
        case .stormDrained:
            let story = Story(summary)
            guard story.storm != nil else { return 0 }
            return story.drainedSeconds.map { ($0 * 1_000).rounded() } ?? .infinity
        case .counter(let name): return Double(metrics[CounterKey(name)] ?? 0)
        }
    }

    /// Whether the run meets it; a metric the run does not have fails (nothing to judge is not a pass).
    public func holds(_ summary: Summary) -> Bool {
        guard let value = measure(summary) else { return false }
        switch comparison {
        case .less: return value < limit
        case .lessOrEqual: return value <= limit
        case .greater: return value > limit
        case .greaterOrEqual: return value >= limit
        case .equal: return value == limit
        case .notEqual: return value != limit
        }
    }

    /// A human form of the measured value, in the threshold's units.
    public func format(_ value: Double?) -> String {
        guard let value else { return "no data" }
        switch metric {
        case .latency: return String(format2: value) + " ms"
        case .stormDrained: return value.isInfinite ? "not drained by the run's end" : String(format2: value / 1_000) + " s"
        case .statusRate, .errorRate: return String(format2: value * 100) + " %"
        default: return value == value.rounded() ? String(Int(value)) : String(format2: value)
        }
    }

    /// JUnit XML, one test case per threshold: what CI systems show as test results.
    public static func junit(_ thresholds: [Threshold], summary: Summary) -> String {
        JUnit.xml(suite: "pushswarm thresholds: \(summary.scenario)", thresholds.map { threshold in
            JUnit.TestCase(
                className: summary.scenario, name: threshold.text,
                failure: threshold.holds(summary) ? nil : "measured \(threshold.format(threshold.measure(summary)))"
            )
        })
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }

    fileprivate init(format2 value: Double) {
        let scaled = (value * 100).rounded() / 100
        self = String(scaled)
    }
}
