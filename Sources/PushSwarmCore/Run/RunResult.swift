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
    /// Each platform's mock ledger, by platform name (empty for a real target).
    public var ledgers: [String: Ledger]
    /// Items devices received a success for.
    public var confirmedKeys: Set<LedgerKey>
    /// Requests still in devices' queues when the run ended (not sent, or sent and unanswered).
    public var pendingAtEnd: Int
    /// Wall time only: the share of the machine's cores this process kept busy over the run.
    public var cpuBusy: Double? = nil

    /// Items devices believe were delivered that no ledger holds.
    public var lost: Int {
        confirmedKeys.reduce(0) { count, key in
            ledgers.values.contains { $0.contains(key) } ? count : count + 1
        }
    }
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
}
