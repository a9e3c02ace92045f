/// The outcome of a run as reports show it: summary.json (a contract other tools read: keys may be
/// added, never renamed or removed) and the terminal table.
public struct Summary: Sendable {
    /// What a mock service's ledger holds for one operation.
    public struct LedgerOperation: Sendable, Equatable {
        public var accepted: UInt64
        public var duplicates: UInt64
        /// Most requests of this operation one source address had accepted in one second.
        public var peakAcceptedPerSecondPerSource: UInt32

        public init(accepted: UInt64, duplicates: UInt64, peakAcceptedPerSecondPerSource: UInt32) {
            self.accepted = accepted
            self.duplicates = duplicates
            self.peakAcceptedPerSecondPerSource = peakAcceptedPerSecondPerSource
        }
    }

    /// The warm-up before a wall run against a real target: the installs from before the run
    /// registering with the service. Its requests are counted here and nowhere else, so the
    /// run's own figures are the measured part's alone.
    public struct WarmUp: Sendable, Equatable {
        /// Installs whose warm-up started.
        public var installs: UInt64 = 0
        public var seconds: Double = 0
        /// Whether every install registered before the warm-up's `maxDuration`, and it was not
        /// stopped early (Ctrl-C).
        public var complete = true
        /// Installs that did not register, by why: `notReached` (the warm-up ended before their
        /// turn), `waiting` (a request queued or in flight at its end), `failed` (their last answer
        /// a failure: an error status, a timeout, no connection; retrying or given up). The run's
        /// devices start without what they would have learnt, and register as their SDK does.
        public var notRegistered: [String: UInt64] = [:]
        /// How long the run waited after it for the service's limiter to drain (`warmUp.settle`).
        public var settleSeconds: Double = 0
        public var sent: UInt64 = 0
        public var byStatus: [Int: UInt64] = [:]
        public var transportErrors: UInt64 = 0
        public var timeouts: UInt64 = 0
        public var retries: UInt64 = 0
        /// Requests still waiting in devices when it ended (retries cut short at `maxDuration`).
        public var pendingAtEnd: UInt64 = 0
        /// Requests sent, by operation.
        public var byOperation: [String: UInt64] = [:]
        public var droppedByReason: [String: UInt64] = [:]

        public init() {}

        public init(installs: UInt64, seconds: Double, complete: Bool, metrics: RunMetrics, pendingAtEnd: Int) {
            self.installs = installs
            self.seconds = seconds
            self.complete = complete
            sent = metrics.sent
            byStatus = metrics.byStatus
            transportErrors = metrics.transportErrors
            timeouts = metrics.timeouts
            retries = metrics.retries
            self.pendingAtEnd = UInt64(max(0, pendingAtEnd))
            byOperation = metrics.operations.mapValues(\.sent)
            droppedByReason = metrics.droppedByReason
            for (name, count) in metrics.counters where name.hasPrefix(Self.notRegisteredPrefix) {
                notRegistered[String(name.dropFirst(Self.notRegisteredPrefix.count))] = count
            }
            if notRegistered.values.contains(where: { $0 > 0 }) { self.complete = false }
        }

        /// The counters a warm-up keeps for installs that did not register (`warmUp.notRegistered.failed`).
        public static let notRegisteredPrefix = "warmUp.notRegistered."

        /// Shards of one run warm up their own installs, concurrently.
        public mutating func merge(_ other: WarmUp) {
            installs += other.installs
            seconds = max(seconds, other.seconds)
            complete = complete && other.complete
            notRegistered.merge(other.notRegistered, uniquingKeysWith: +)
            settleSeconds = max(settleSeconds, other.settleSeconds)
            sent += other.sent
            byStatus.merge(other.byStatus, uniquingKeysWith: +)
            transportErrors += other.transportErrors
            timeouts += other.timeouts
            retries += other.retries
            pendingAtEnd += other.pendingAtEnd
            byOperation.merge(other.byOperation, uniquingKeysWith: +)
            droppedByReason.merge(other.droppedByReason, uniquingKeysWith: +)
        }

        public var json: JSONValue {
            [
                "installs": .number(Double(installs)), "seconds": .number((seconds * 1_000).rounded() / 1_000), "complete": .bool(complete),
                "sent": .number(Double(sent)), "byStatus": .object(Summary.statusObject(byStatus)),
                "transportErrors": .number(Double(transportErrors)), "timeouts": .number(Double(timeouts)),
                "retries": .number(Double(retries)), "pendingAtEnd": .number(Double(pendingAtEnd)),
                "byOperation": .object(Summary.countObject(byOperation)), "droppedByReason": .object(Summary.countObject(droppedByReason)),
                "notRegistered": .object(Summary.countObject(notRegistered)), "settleSeconds": .number((settleSeconds * 1_000).rounded() / 1_000),
            ]
        }
    }

    public static let schemaVersion = 1

    public var scenario: String
    public var seed: UInt64
    public var clock: String
    public var devices: Int
    public var simulatedSeconds: Double
    /// Wall-clock fields: differ between otherwise identical runs.
    public var wallSeconds: Double
    /// Wall time only: the share of the machine's cores the run kept busy (1 = all of them).
    public var cpuBusy: Double?
    public var runID: String
    public var version: String
    public var metrics: RunMetrics
    /// Nil when the target was not a built-in mock (no ledger to check).
    public var ledger: [String: LedgerOperation]?
    public var lost: Int
    public var pendingAtEnd: Int
    /// Set on one shard's output: shard `index` (from 1) of `count`.
    public var shard: (index: Int, count: Int)?
    /// Set on a merged summary: how many shard outputs it adds up.
    public var mergedFrom = 0
    /// The run's thresholds as written, so a merge can judge the whole run.
    public var thresholds: [String] = []
    /// The scenario file as the run read it (for the HTML report and for reruns).
    public var scenarioText: String?
    /// The warm-up before the run, when it had one (a wall run against a real target).
    public var warmUp: WarmUp?

    public init(
        scenario: String, seed: UInt64, clock: String, devices: Int, simulatedSeconds: Double, wallSeconds: Double,
        runID: String, version: String, metrics: RunMetrics, ledger: [String: LedgerOperation]?, lost: Int, pendingAtEnd: Int
    ) {
        self.scenario = scenario
        self.seed = seed
        self.clock = clock
        self.devices = devices
        self.simulatedSeconds = simulatedSeconds
        self.wallSeconds = wallSeconds
        self.runID = runID
        self.version = version
        self.metrics = metrics
        self.ledger = ledger
        self.lost = lost
        self.pendingAtEnd = pendingAtEnd
    }

    /// Keys whose values depend on the wall clock or the moment of the run.
    public static let wallClockKeys: Set<String> = ["wallSeconds", "runId"]

    public var rateLimited: UInt64 { metrics.byStatus[429] ?? 0 }
    public var ledgerAccepted: UInt64 { ledger?.values.reduce(0) { $0 + $1.accepted } ?? 0 }
    public var ledgerDuplicates: UInt64 { ledger?.values.reduce(0) { $0 + $1.duplicates } ?? 0 }

    /// Generator lag p99 above this marks a wall run as saturated: its latencies include its own delay.
    public static let saturationThresholdMs = 100.0
    /// CPU use above this share of the cores also marks it saturated: the generator competed with itself.
    public static let saturationCPUShare = 0.9

    public var lagP99Milliseconds: Double? {
        metrics.duration(.generatorLag).map { Double($0.value(atQuantile: 0.99) ?? 0) / 1_000 }
    }

    /// Open-workload arrivals that started; nil when the run had no open workload.
    public var startedArrivals: UInt64? { metrics[.workloadArrivals] }
    /// Open-workload arrivals that never started: shed because their device's queue was already
    /// full (the service or the network did not keep up), or missed because the generator reached
    /// them more than a second late (PushSwarm did not keep up).
    public var shedArrivals: UInt64 { metrics[.workloadShed] ?? 0 }
    public var missedStarts: UInt64 { metrics[.workloadMissedStarts] ?? 0 }
    /// Wall time: how often the event loops woke, and the readiness events a wake-up brought on
    /// average (more a wake-up is cheaper a request); nil when no loop counted (simulated time).
    public var loopWakeUps: (wakeUps: UInt64, eventsPerWakeUp: Double)? {
        guard let waits = metrics[.eventLoopWaits], waits > 0 else { return nil }
        return (waits, Double(metrics[.eventLoopEvents] ?? 0) / Double(waits))
    }
    /// Every open-workload arrival: started, shed or missed.
    public var offeredArrivals: UInt64 { (startedArrivals ?? 0) + shedArrivals + missedStarts }

    /// A run that did not put on the load it was asked for: its generator fell behind or pegged
    /// the CPU, or arrivals were missed or shed.
    public var isSaturated: Bool { generatorFellBehind || shedArrivals > 0 }

    /// The generator itself did not keep up: it started what was due late, pegged the CPU, or
    /// reached arrivals over a second late. (Arrivals shed on busy devices are left out: a slow
    /// service makes devices busy too.)
    public var generatorFellBehind: Bool {
        (lagP99Milliseconds ?? 0) > Self.saturationThresholdMs || (cpuBusy ?? 0) > Self.saturationCPUShare || missedStarts > 0
    }

    public var json: JSONValue {
        var root = JSONObject()
        root["schema"] = .number(Double(Self.schemaVersion))
        root["scenario"] = .string(scenario)
        root["seed"] = .number(Double(seed))
        root["clock"] = .string(clock)
        root["devices"] = .number(Double(devices))
        root["simulatedSeconds"] = .number(simulatedSeconds)
        root["wallSeconds"] = .number((wallSeconds * 1_000).rounded() / 1_000)
        root["runId"] = .string(runID)
        root["version"] = .string(version)
        if let shard { root["shard"] = ["index": .number(Double(shard.index)), "count": .number(Double(shard.count))] }
        if mergedFrom > 0 { root["mergedFrom"] = .number(Double(mergedFrom)) }

        var requests = JSONObject()
        requests["sent"] = count(metrics.sent)
        requests["byStatus"] = .object(Self.statusObject(metrics.byStatus))
        requests["transportErrors"] = count(metrics.transportErrors)
        requests["timeouts"] = count(metrics.timeouts)
        requests["transportErrorsByReason"] = .object(Self.countObject(metrics.transportErrorsByReason))
        requests["inFlightAtEnd"] = count(metrics.inFlightAtEnd)
        root["requests"] = .object(requests)

        var retries = JSONObject()
        retries["total"] = count(metrics.retries)
        retries["byAttempt"] = .object(JSONObject(metrics.retriesByAttempt.sorted { $0.key < $1.key }.map { (key: String($0.key), value: count($0.value)) }))
        retries["amplification"] = .number((metrics.retryAmplification * 1_000).rounded() / 1_000)
        retries["backoffMs"] = percentiles(metrics.backoffDelays)
        var byRetry = JSONObject()
        for (retry, histogram) in metrics.backoffByRetry.sorted(by: { $0.key < $1.key }) {
            let key = retry == RunMetrics.backoffRetryCap ? "\(retry)+" : String(retry)
            byRetry[key] = [
                "count": count(histogram.totalCount),
                "minMs": .number(Double(histogram.minimum) / 1_000),
                "p50Ms": .number(Double(histogram.value(atQuantile: 0.5) ?? 0) / 1_000),
                "maxMs": .number(Double(histogram.maximum) / 1_000),
            ]
        }
        retries["backoffByRetry"] = .object(byRetry)
        root["retries"] = .object(retries)

        root["dropped"] = .object(["total": count(metrics.droppedByReason.values.reduce(0, +)), "byReason": .object(Self.countObject(metrics.droppedByReason))])
        root["rateLimited"] = count(rateLimited)
        var durations = JSONObject()
        for (name, histogram) in metrics.durations.sorted(by: { $0.key < $1.key }) {
            var entry = percentiles(histogram).objectValue ?? [:]
            entry["count"] = count(histogram.totalCount)
            durations[name + "Ms"] = .object(entry)
        }
        root["durations"] = .object(durations)
        if let lagP99 = lagP99Milliseconds {
            // A generator that starts work late measures its own lateness, not the service's.
            var generator: JSONObject = ["lagP99Ms": .number(lagP99), "saturatedThresholdMs": .number(Self.saturationThresholdMs)]
            if let cpuBusy { generator["cpuBusy"] = .number((cpuBusy * 1_000).rounded() / 1_000) }
            if let loops = loopWakeUps {
                generator["wakeUps"] = count(loops.wakeUps)
                generator["eventsPerWakeUp"] = .number((loops.eventsPerWakeUp * 100).rounded() / 100)
            }
            generator["missedStarts"] = count(missedStarts)
            generator["shedArrivals"] = count(shedArrivals)
            generator["saturated"] = .bool(isSaturated)
            root["generator"] = .object(generator)
        }
        if let started = startedArrivals {
            // Every arrival of an open workload: started, shed or missed.
            root["workload"] = .object([
                "arrivals": count(offeredArrivals), "started": count(started),
                "shed": count(shedArrivals), "missedStarts": count(missedStarts),
            ])
        }

        var operations = JSONObject()
        for (name, operation) in metrics.operations.sorted(by: { $0.key < $1.key }) {
            var entry = JSONObject()
            entry["count"] = count(operation.sent)
            entry["retries"] = count(operation.retries)
            entry["retryAmplification"] = .number((min(operation.retryAmplification, 1e9) * 1_000).rounded() / 1_000)
            entry["byStatus"] = .object(Self.statusObject(operation.byStatus))
            entry["transportErrors"] = count(operation.transportErrors)
            entry["timeouts"] = count(operation.timeouts)
            entry["latencyMs"] = percentiles(operation.latency)
            entry["serviceTimeMs"] = percentiles(operation.serviceTime)
            // New connections' TCP and TLS times (k6's http_req_connecting and
            // http_req_tls_handshaking): real sockets', or simulated time's with each install's
            // own connections (network.rtt and the edge).
            entry["connectMs"] = percentiles(operation.connectTime)
            entry["tlsHandshakeMs"] = percentiles(operation.tlsHandshakeTime)
            entry["connections"] = count(operation.connectTime.totalCount)
            entry["firstByteMs"] = percentiles(operation.timeToFirstByte)
            operations[name] = .object(entry)
        }
        root["operations"] = .object(operations)

        var ledgerObject = JSONObject()
        ledgerObject["checked"] = .bool(ledger != nil)
        ledgerObject["accepted"] = count(ledgerAccepted)
        ledgerObject["duplicates"] = count(ledgerDuplicates)
        ledgerObject["lost"] = .number(Double(lost))
        var byOperation = JSONObject()
        for (name, entry) in (ledger ?? [:]).sorted(by: { $0.key < $1.key }) {
            byOperation[name] = [
                "accepted": count(entry.accepted), "duplicates": count(entry.duplicates),
                "peakAcceptedPerSecondPerSource": .number(Double(entry.peakAcceptedPerSecondPerSource)),
            ]
        }
        ledgerObject["byOperation"] = .object(byOperation)
        root["ledger"] = .object(ledgerObject)

        root["queue"] = ["pendingAtEnd": .number(Double(pendingAtEnd))]
        if let warmUp { root["warmUp"] = warmUp.json }
        root["counters"] = .object(Self.countObject(metrics.counters))
        if let connections = connectionsJSON { root["connections"] = connections }
        if let http2 = HTTP2Figures(metrics) { root["http2"] = http2.json }
        root["story"] = Story(self).json
        return .object(root)
    }

    /// Adds another shard's summary of the same scenario: metrics exactly (histograms bucket by
    /// bucket), ledgers and counts by sum; the CPU share is the busiest shard's (shards on one
    /// machine add theirs instead: `run --workers` does). A ledger's per-source peak takes the larger of the two:
    /// shards hold whole source addresses, so one address's peak is in one shard.
    public mutating func merge(_ other: Summary) {
        metrics.merge(other.metrics)
        devices += other.devices
        simulatedSeconds = max(simulatedSeconds, other.simulatedSeconds)
        wallSeconds = max(wallSeconds, other.wallSeconds)
        if let theirs = other.cpuBusy { cpuBusy = max(cpuBusy ?? 0, theirs) }
        lost += other.lost
        pendingAtEnd += other.pendingAtEnd
        if let theirs = other.ledger {
            var merged = ledger ?? [:]
            for (name, entry) in theirs {
                var mine = merged[name] ?? LedgerOperation(accepted: 0, duplicates: 0, peakAcceptedPerSecondPerSource: 0)
                mine.accepted += entry.accepted
                mine.duplicates += entry.duplicates
                mine.peakAcceptedPerSecondPerSource = max(mine.peakAcceptedPerSecondPerSource, entry.peakAcceptedPerSecondPerSource)
                merged[name] = mine
            }
            ledger = merged
        }
        for threshold in other.thresholds where !thresholds.contains(threshold) { thresholds.append(threshold) }
        if scenarioText == nil { scenarioText = other.scenarioText }
        if let theirs = other.warmUp {
            if warmUp == nil { warmUp = theirs } else { warmUp?.merge(theirs) }
        }
    }

    /// summary.json's text: pretty, deterministic, ending in a newline.
    public var jsonText: String { JSONWriter.text(of: json, indent: 2) + "\n" }

    private func count(_ value: UInt64) -> JSONValue { .number(Double(value)) }

    private static func statusObject(_ statuses: [Int: UInt64]) -> JSONObject {
        JSONObject(statuses.sorted { $0.key < $1.key }.map { (key: String($0.key), value: .number(Double($0.value))) })
    }

    private static func countObject(_ counts: [String: UInt64]) -> JSONObject {
        JSONObject(counts.sorted { $0.key < $1.key }.map { (key: $0.key, value: .number(Double($0.value))) })
    }

    /// p50, p90, p99, p999 and max in milliseconds (3 decimals) from a microsecond histogram.
    private func percentiles(_ histogram: LatencyHistogram) -> JSONValue {
        func milliseconds(_ micros: UInt64?) -> JSONValue { .number(Double(micros ?? 0) / 1_000) }
        return [
            "p50": milliseconds(histogram.value(atQuantile: 0.5)),
            "p90": milliseconds(histogram.value(atQuantile: 0.9)),
            "p99": milliseconds(histogram.value(atQuantile: 0.99)),
            "p999": milliseconds(histogram.value(atQuantile: 0.999)),
            "max": milliseconds(histogram.isEmpty ? 0 : histogram.maximum),
        ]
    }
}

extension Summary {
    /// summary.json's `connections`: what the service's edge saw of the run's HTTP connections
    /// (the counters `connections.*`, gathered), with those open at the end and at the peak (at a
    /// tick's end: `Timeline.connectionsOpenPeak`); nil when the run counted none.
    var connectionsJSON: JSONValue? {
        guard let (opened, closed) = metrics.connections else { return nil }
        let counter = { (key: CounterKey) in JSONValue.number(Double(metrics[key] ?? 0)) }
        let total = closed.reduce(0) { $0 + $1.count }
        var object: JSONObject = [
            "opened": .number(Double(opened)),
            "closed": .object(JSONObject(closed.map { (key: $0.reason, value: JSONValue.number(Double($0.count))) })),
            "refused": counter(.connectionsRefused),
            "handshakes": ["full": counter(.connectionsHandshakesFull), "resumed": counter(.connectionsHandshakesResumed),
                           "failed": counter(.connectionsHandshakesFailed), "timedOut": counter(.connectionsHandshakesTimedOut)],
            "openAtEnd": .number(Double(opened - min(opened, total))),
        ]
        object["openPeak"] = metrics.timeline.connectionsOpenPeak.map { .number(Double($0)) } ?? .null
        return .object(object)
    }
}
