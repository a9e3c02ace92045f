/// Quantities as people write them in objectives and thresholds (`p99`, `1%`), read and written
/// in one place.
public enum Quantity {
    /// The quantile a percentile name stands for: `p99` → 0.99, `p999` → 0.999, `p50` → 0.5.
    /// Nil when `name` is not `p` and a number above zero; the caller decides whether 1 or more is allowed.
    public static func quantile(named name: some StringProtocol) -> Double? {
        guard name.hasPrefix("p"), let digits = Double(name.dropFirst()), digits > 0 else { return nil }
        return name.count > 3 ? digits / 1_000 : digits / 100
    }

    /// The percentile name of a quantile: 0.99 → `p99`, 0.999 → `p999`.
    public static func name(ofQuantile quantile: Double) -> String {
        let perMille = Int((quantile * 1_000).rounded())
        return perMille % 10 == 0 ? "p\(perMille / 10)" : "p\(perMille)"
    }

    /// A latency written with its unit (`200ms`, `1.5s`) in milliseconds; nil without a unit or a
    /// finite number (`1e400ms` is no latency).
    public static func milliseconds(_ text: some StringProtocol) -> Double? {
        let value: Double?
        if text.hasSuffix("ms") {
            value = Double(text.dropLast(2))
        } else if text.hasSuffix("s") {
            value = Double(text.dropLast()).map { $0 * 1_000 }
        } else {
            value = nil
        }
        return value.flatMap { $0.isFinite ? $0 : nil }
    }

    /// A share written as a percentage (`1%`) or a fraction (`0.01`); nil when it is not a finite
    /// number (`1e400%`, `nan`).
    public static func share(_ text: some StringProtocol) -> Double? {
        let value = text.hasSuffix("%") ? Double(text.dropLast()).map { $0 / 100 } : Double(text)
        return value.flatMap { $0.isFinite ? $0 : nil }
    }
}

extension RunMetrics {
    /// Every operation's latency in one histogram.
    public var allLatencies: LatencyHistogram { merged(\.latency) }

    /// Every operation's service time (from the request on the wire to its answer) in one histogram.
    public var allServiceTimes: LatencyHistogram { merged(\.serviceTime) }

    private func merged(_ histogram: KeyPath<OperationMetrics, LatencyHistogram>) -> LatencyHistogram {
        var merged = LatencyHistogram()
        for operation in operations.values { merged.merge(operation[keyPath: histogram]) }
        return merged
    }

    /// The share of requests sent that ended in anything but a 1xx–3xx answer: 4xx, 5xx,
    /// transport errors, timeouts (and requests still in flight).
    public var errorRate: Double { Quantity.errorRate(sent: sent, byStatus: byStatus) }

    /// Answers whose status is in `range`, other than `excluded`.
    public func answers(in range: Range<Int>, excluding excluded: Int? = nil) -> UInt64 {
        Quantity.answers(byStatus, in: range, excluding: excluded)
    }
}

extension OperationMetrics {
    /// As `RunMetrics.errorRate`, for this operation.
    public var errorRate: Double { Quantity.errorRate(sent: sent, byStatus: byStatus) }

    /// Answers whose status is in `range`, other than `excluded`.
    public func answers(in range: Range<Int>, excluding excluded: Int? = nil) -> UInt64 {
        Quantity.answers(byStatus, in: range, excluding: excluded)
    }
}

extension Quantity {
    /// The answers a report calls ok: 1xx–3xx (101 being an opened WebSocket).
    public static let okStatuses = 100..<400

    static func answers(_ byStatus: [Int: UInt64], in range: Range<Int>, excluding excluded: Int?) -> UInt64 {
        byStatus.reduce(0) { range.contains($1.key) && $1.key != excluded ? $0 + $1.value : $0 }
    }

    static func errorRate(sent: UInt64, byStatus: [Int: UInt64]) -> Double {
        let ok = answers(byStatus, in: okStatuses, excluding: nil)
        return sent > 0 ? Double(sent - min(sent, ok)) / Double(sent) : 0
    }
}

extension LatencyHistogram {
    /// The value at `quantile` in milliseconds (the histogram holds microseconds).
    public func milliseconds(atQuantile quantile: Double) -> Double? {
        value(atQuantile: quantile).map { Double($0) / 1_000 }
    }
}

extension SparseHistogram {
    /// The value at `quantile` in milliseconds (the histogram holds microseconds).
    public func milliseconds(atQuantile quantile: Double) -> Double? {
        value(atQuantile: quantile).map { Double($0) / 1_000 }
    }
}
