/// Everything a run measures, as a plain value: recorded by one owner, merged across shards.
public struct RunMetrics: Sendable, Equatable {
    /// Each operation's metrics by its name (kept in a `SmallTable`).
    public var operations: [String: OperationMetrics] {
        get { operationTable.dictionary }
        set { operationTable = SmallTable(newValue) }
    }

    private var operationTable = SmallTable<String, OperationMetrics>()
    /// Retries sent, keyed by retry number (1 is the first retry of a request).
    public var retriesByAttempt: [Int: UInt64] = [:]
    /// Back-off delays chosen before retries, in microseconds.
    public var backoffDelays = LatencyHistogram()
    /// The same delays by retry number (1 is the delay before the first retry), so that a
    /// client's back-off curve can be read from a report; numbers beyond `backoffRetryCap` share
    /// the last entry.
    public var backoffByRetry: [Int: LatencyHistogram] = [:]
    public static let backoffRetryCap = 20
    /// Requests a client gave up on, keyed by reason (`http400`, `http503RetriesExhausted`, …).
    public var droppedByReason: [String: UInt64] = [:]
    /// Transport errors keyed by reason (`networkError`, `connectionReset`, …).
    public var transportErrorsByReason: [String: UInt64] = [:]
    /// Named counts that are not requests: notifications displayed, tapped, campaigns, …, by
    /// their `CounterKey`'s name (what archives and shard streams carry); read and counted
    /// through the keys.
    public internal(set) var counters: [String: UInt64] = [:]
    /// Named spans the run measured (`DurationKey.rateLimitRecovery`: from an item's first 429
    /// until the service accepted it), in microseconds, by their `DurationKey`'s name.
    public internal(set) var durations: [String: LatencyHistogram] = [:]
    /// The same measurements interval by interval, for charts and time series (recorded when the
    /// caller says when: `at` microseconds after the run's start).
    public var timeline = Timeline()
    /// Moments worth pointing at on the timeline (a campaign's launch), in time order: recorded
    /// once per run, by the one partition that counts run-wide events.
    public var marks: [Mark] = []

    public struct Mark: Sendable, Equatable {
        public var name: String
        /// After the run's start.
        public var microseconds: Int64

        public init(name: String, microseconds: Int64) {
            self.name = name
            self.microseconds = microseconds
        }
    }

    public init() {}

    public mutating func mark(_ name: String, at microseconds: Int64) {
        marks.append(Mark(name: name, microseconds: microseconds))
        marks.sort { ($0.microseconds, $0.name) < ($1.microseconds, $1.name) }
    }

    public var sent: UInt64 { operationTable.reduce(0) { $0 + $1.sent } }
    /// Requests sent that had not ended (answered, failed or timed out) when the run ended.
    public var inFlightAtEnd: UInt64 { sent - min(sent, operationTable.reduce(0) { $0 + $1.completed }) }
    public var transportErrors: UInt64 { operationTable.reduce(0) { $0 + $1.transportErrors } }
    public var timeouts: UInt64 { operationTable.reduce(0) { $0 + $1.timeouts } }
    public var retries: UInt64 { retriesByAttempt.values.reduce(0, +) }
    /// Devices' platform sockets (WebSockets) open now: opened, less closed by either end.
    public var socketsOpen: UInt64 {
        let opened = self[.socketsOpened] ?? 0
        let closed = (self[.socketsClosedByClient] ?? 0) + (self[.socketsClosedByPeer] ?? 0)
        return opened - min(opened, closed)
    }

    /// HTTP connections the run opened (wall time), and those closed by why
    /// (`connections.closed.<reason>`); nil when it counted none.
    public var connections: (opened: UInt64, closed: [(reason: String, count: UInt64)])? {
        guard let opened = self[.connectionsOpened] else { return nil }
        return (opened, CounterKey.connectionsClosed.members(in: self).map { (reason: $0.member, count: $0.count) })
    }

    public var byStatus: [Int: UInt64] {
        operationTable.reduce([:]) { $0.merging($1.byStatus, uniquingKeysWith: +) }
    }

    /// An HTTP connection opened `microseconds` into the run: counted, and on the timeline.
    public mutating func recordConnectionOpened(at microseconds: Int64) {
        increment(.connectionsOpened)
        timeline.recordConnectionOpened(at: microseconds)
    }

    /// An HTTP connection closed for `counter`'s reason (`CounterKey.connectionsClosed(reason)`),
    /// `microseconds` into the run: counted, and on the timeline.
    public mutating func recordConnectionClosed(counter: CounterKey, at microseconds: Int64) {
        increment(counter)
        timeline.recordConnectionClosed(at: microseconds)
    }

    public mutating func recordSent(operation: String, retryNumber: Int, at microseconds: Int64? = nil) {
        if let microseconds { timeline.recordSent(at: microseconds, isRetry: retryNumber > 0) }
        if retryNumber > 0 { retriesByAttempt[retryNumber, default: 0] += 1 }
        update(operation) { metrics in
            metrics.sent += 1
            if retryNumber > 0 { metrics.retries += 1 }
        }
    }

    /// Changes one operation's metrics in place, adding the operation if it is new.
    private mutating func update(_ operation: String, _ change: (inout OperationMetrics) -> Void) {
        operationTable.update(operation, default: OperationMetrics(), change)
    }

    /// A response; `serviceMicroseconds` nil means the same as the latency. Connect and first-byte
    /// times come from real sockets only.
    public mutating func recordResponse(
        operation: String, status: Int, latencyMicroseconds: UInt64, serviceMicroseconds: UInt64? = nil,
        connectMicroseconds: UInt64? = nil, tlsMicroseconds: UInt64? = nil, firstByteMicroseconds: UInt64? = nil, at microseconds: Int64? = nil
    ) {
        if let microseconds { timeline.recordResponse(at: microseconds, status: status, latencyMicroseconds: latencyMicroseconds) }
        update(operation) { metrics in
            metrics.countResponse(status: status)
            metrics.latency.record(latencyMicroseconds)
            metrics.serviceTime.record(serviceMicroseconds ?? latencyMicroseconds)
            if let connectMicroseconds { metrics.connectTime.record(connectMicroseconds) }
            if let tlsMicroseconds { metrics.tlsHandshakeTime.record(tlsMicroseconds) }
            if let firstByteMicroseconds { metrics.timeToFirstByte.record(firstByteMicroseconds) }
        }
    }

    public mutating func recordTransportError(operation: String, reason: String, at microseconds: Int64? = nil) {
        if let microseconds { timeline.recordTransportError(at: microseconds) }
        update(operation) { $0.transportErrors += 1 }
        transportErrorsByReason[reason, default: 0] += 1
    }

    public mutating func recordTimeout(operation: String, at microseconds: Int64? = nil) {
        if let microseconds { timeline.recordTimeout(at: microseconds) }
        update(operation) { $0.timeouts += 1 }
    }

    public mutating func recordBackoff(microseconds: UInt64, retryNumber: Int) {
        backoffDelays.record(microseconds)
        backoffByRetry[min(max(retryNumber, 1), Self.backoffRetryCap), default: LatencyHistogram()].record(microseconds)
    }

    public mutating func recordDrop(reason: String, count: UInt64 = 1) {
        droppedByReason[reason, default: 0] += count
    }

    public mutating func recordDuration(_ key: DurationKey, microseconds: UInt64) {
        durations[key.name, default: LatencyHistogram()].record(microseconds)
    }

    /// The spans measured as `key`; nil when none was.
    public func duration(_ key: DurationKey) -> LatencyHistogram? { durations[key.name] }

    /// Attempts per logical request over every operation.
    public var retryAmplification: Double {
        let first = sent - min(sent, retries)
        return first > 0 ? Double(sent) / Double(first) : 1
    }

    public mutating func increment(_ counter: CounterKey, by amount: UInt64 = 1) {
        counters[counter.name, default: 0] += amount
    }

    /// A counter's count; nil when the run never counted it. Set for a figure that is not a
    /// count (`CounterKey.socketsPeakOpen`).
    public subscript(_ counter: CounterKey) -> UInt64? {
        get { counters[counter.name] }
        set { counters[counter.name] = newValue }
    }

    /// Adds `other` into this value; exact, including histograms.
    public mutating func merge(_ other: RunMetrics) {
        other.operationTable.forEach { name, metrics in update(name) { $0.merge(metrics) } }
        retriesByAttempt.merge(other.retriesByAttempt, uniquingKeysWith: +)
        backoffDelays.merge(other.backoffDelays)
        backoffByRetry.merge(other.backoffByRetry) { mine, theirs in
            var merged = mine
            merged.merge(theirs)
            return merged
        }
        droppedByReason.merge(other.droppedByReason, uniquingKeysWith: +)
        transportErrorsByReason.merge(other.transportErrorsByReason, uniquingKeysWith: +)
        counters.merge(other.counters, uniquingKeysWith: +)
        durations.merge(other.durations) { mine, theirs in
            var merged = mine
            merged.merge(theirs)
            return merged
        }
        timeline.merge(other.timeline)
        for mark in other.marks { self.mark(mark.name, at: mark.microseconds) }
    }
}
