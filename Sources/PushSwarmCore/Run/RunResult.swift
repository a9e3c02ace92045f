public import PushSwarmMetrics

/// What one run produced, before it is rendered: the measurements, the services' ledgers and what
/// the devices believe was delivered.
public struct RunResult: Sendable {
    public var scenario: String
    public var seed: UInt64
    public var clock: Scenario.ClockKind
    public var devices: Int
    /// Length of the run on its own timeline.
    public var duration: TimeSpan
    public var wallSeconds: Double
    public var metrics: RunMetrics
    /// Each platform's mock ledger totals (its partitions' ledgers added up, `Ledger.totals`), by
    /// platform name (empty for a real target).
    public var ledgers: [String: Ledger.Totals]
    /// Items devices believe were delivered that no ledger holds: counted when each was
    /// confirmed (a ledger only grows, so what it lacks then it lacks at the end).
    public var lost: Int
    /// Requests still in devices' queues when the run ended (not sent, or sent and unanswered).
    public var pendingAtEnd: Int
    /// Wall time only: the share of the machine's cores this process kept busy over the run.
    public var cpuBusy: Double? = nil
    /// A warm-up's: what each install learnt from the service, by fleet index (for the run after).
    public var warmUpMemories: [Int: String] = [:]
    /// A warm-up's: pushes a real service sent during it, by partition number, for the run after.
    public var heldPushes: [Int: [ExternalPush]] = [:]
    /// The warm-up before this run, when there was one: reported apart from the run's figures.
    public var warmUp: Summary.WarmUp? = nil
}

extension RunResult {
    /// The summary reports are written from.
    public func summary(runID: String, version: String) -> Summary {
        var ledgerOperations: [String: Summary.LedgerOperation]?
        if !ledgers.isEmpty {
            var operations: [String: Summary.LedgerOperation] = [:]
            for ledger in ledgers.values {
                // Every accepted request, duplicate or not, is in the per-second peaks.
                for (operation, peak) in ledger.peakAcceptedPerSecondByOperation {
                    operations[operation] = Summary.LedgerOperation(
                        accepted: ledger.acceptedByOperation[operation] ?? 0,
                        duplicates: ledger.duplicatesByOperation[operation] ?? 0,
                        peakAcceptedPerSecondPerSource: peak
                    )
                }
            }
            ledgerOperations = operations
        }
        var summary = Summary(
            scenario: scenario, seed: seed, clock: clock.rawValue, devices: devices, simulatedSeconds: duration.seconds,
            wallSeconds: wallSeconds, runID: runID, version: version, metrics: metrics, ledger: ledgerOperations,
            lost: lost, pendingAtEnd: pendingAtEnd
        )
        summary.cpuBusy = cpuBusy
        summary.warmUp = warmUp
        return summary
    }
}

/// Where a run is, for the live progress line and the metrics endpoint: reported about once a
/// second of wall time while the run goes.
public struct RunProgress: Sendable {
    /// How far the run is on its own timeline, and how long it is.
    public var elapsed: TimeSpan
    public var duration: TimeSpan
    /// Everything measured so far (a copy).
    public var metrics: RunMetrics
    /// Devices in the run (a shard's, for a shard).
    public var devices: Int
    /// Wall time: HTTP connections open now in the client's pools (nil in simulated time).
    public var openConnections: Int?
    /// A `--workers` parent's shards, by number from 1, as their streams stand (nil for a run
    /// alone). Counts of a shard that stopped are its last, kept (they are what it did), and this
    /// says they no longer grow.
    public var shards: [ShardStanding]?

    public init(elapsed: TimeSpan, duration: TimeSpan, metrics: RunMetrics, devices: Int) {
        self.elapsed = elapsed
        self.duration = duration
        self.metrics = metrics
        self.devices = devices
    }

    /// Devices that sent a request in the latest whole interval. The interval under way has only
    /// begun counting (a line once read "5 of 100,000 devices active" at 958 req/s), so it is
    /// used only before one has ended.
    public var activeDevices: UInt64 {
        let intervals = metrics.timeline.intervals
        let current = Int(max(0, elapsed.microseconds) / max(1, metrics.timeline.intervalMicroseconds))
        let latestWhole = min(current, intervals.count) - 1
        if latestWhole >= 0 { return intervals[latestWhole].activeDevices }
        return intervals.first?.activeDevices ?? 0
    }
}

extension RunProgress {
    /// The live progress line: where the run is, devices active and requests per second since
    /// `previous` (on the run's timeline: simulated or wall), p99 of the latest interval with
    /// answers, and the 429s and errors so far.
    ///
    ///     [ 6h00m of 24h00m  25% ] 1,204 of 10,000 devices active · 14.20 req/s · p99 88.10 ms · 429s 0 · errors 0 · sent 54,321
    public func line(since previous: RunProgress?) -> String {
        let share = duration.microseconds > 0 ? Double(elapsed.microseconds) / Double(duration.microseconds) : 0
        var rate = 0.0
        let span = (elapsed - (previous?.elapsed ?? .zero)).seconds
        if span > 0 { rate = Double(metrics.sent - min(metrics.sent, previous?.metrics.sent ?? 0)) / span }
        let intervals = metrics.timeline.intervals
        let p99 = intervals.last { !$0.latency.isEmpty }?.latency.milliseconds(atQuantile: 0.99).map { "\(TerminalReport.format2($0)) ms" } ?? "-"
        let active = activeDevices
        // Answered with anything but 1xx-3xx, or failed; requests still in flight are not errors.
        let answered = metrics.byStatus.values.reduce(0, +)
        let errors = answered - metrics.answers(in: Quantity.okStatuses) + metrics.transportErrors + metrics.timeouts
        return "[ \(Self.clock(elapsed)) of \(Self.clock(duration))  \(Int((share * 100).rounded(.down)))% ] "
            + "\(TerminalReport.group(active)) of \(TerminalReport.group(UInt64(devices))) devices active · \(TerminalReport.format2(rate)) req/s · p99 \(p99) · "
            + "429s \(TerminalReport.group(metrics.byStatus[429] ?? 0)) · errors \(TerminalReport.group(errors)) · sent \(TerminalReport.group(metrics.sent))"
    }

    /// 1h05m, 3m20s, 42s.
    static func clock(_ span: TimeSpan) -> String {
        let seconds = Int(span.seconds.rounded(.down))
        func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        if seconds >= 3_600 { return "\(seconds / 3_600)h\(twoDigits((seconds % 3_600) / 60))m" }
        if seconds >= 60 { return "\(seconds / 60)m\(twoDigits(seconds % 60))s" }
        return "\(seconds)s"
    }
}

/// Where a `--workers` shard's progress stream stands.
public enum ShardStanding: Sendable, Equatable {
    /// Started; its records arrive (or will).
    case reporting
    /// Its process ended with status 0: its last record is its whole run.
    case finished
    /// Its process ended otherwise (killed, crashed): its counts stopped where its last record
    /// left them; `why` says how it ended.
    case stopped(why: String)

    public var isReporting: Bool { self == .reporting }
}
