/// Two runs of one scenario side by side, as a nightly job reads them: did the service (or
/// PushSwarm) get worse than the baseline by more than the tolerance?
///
/// What is compared: throughput (answers 1xx–3xx per second), latency percentiles overall and per
/// operation, error and 429 rates, retry amplification, and the ledger. A change counts only past
/// both the relative tolerance and an absolute floor, so that 0.2 ms on a 1 ms p50 or one error in
/// a million does not fail a build.
public struct Comparison: Sendable {
    public enum Direction: Sendable {
        /// Higher is worse (latency, error rates).
        case lowerIsBetter
        /// Lower is worse (throughput).
        case higherIsBetter
    }

    public enum Verdict: String, Sendable {
        case worse, better, same
        /// In one run only.
        case new, gone
        /// Too few samples in either run to read a percentile or a rate from.
        case few
        /// A percentile moved past the tolerance, but by less than its sampling noise: the ranks
        /// either side of it that the samples could as well have put there (`Options.band`)
        /// overlap between the runs. The p99 of 300 answers is the third-slowest, and another
        /// night's third-slowest can be 20 % off with nothing changed.
        case noise
    }

    public struct Row: Sendable {
        public var metric: String
        public var unit: Unit
        public var baseline: Double?
        public var current: Double?
        public var verdict: Verdict
        /// Shown whatever its verdict: the figures a reader wants every night.
        public var isHeadline: Bool

        /// Relative change (0.1 is +10 %); nil without both values or from zero.
        public var change: Double? {
            guard let baseline, let current, baseline != 0 else { return nil }
            return (current - baseline) / abs(baseline)
        }
    }

    public struct Options: Sendable {
        /// A relative change beyond this counts (0.1: 10 %).
        public var tolerance: Double = 0.10
        /// Latency changes of less than this many milliseconds never count.
        public var latencyFloorMilliseconds: Double = 1
        /// Rate changes of less than this share never count (0.001: 0.1 percentage points).
        public var rateFloor: Double = 0.001
        /// Percentiles and rates of fewer samples than this in either run are not judged: the p99
        /// of five answers is one answer.
        public var minimumSamples: UInt64 = 100
        /// How wide a percentile's sampling band is, in standard deviations of its rank: the
        /// p-quantile of n samples lies between the values at ranks np ± z·√(np(1−p)) (the order
        /// statistics' binomial band; z = 2.58 is 99 % each). A percentile is worse only when
        /// the current run's band lies wholly above the baseline's.
        public var band: Double = 2.58

        public init() {}
    }

    public var rows: [Row] = []
    /// What a reader should know: the mismatches, then runs that shed arrivals.
    public private(set) var notes: [Reason] = []
    /// How the runs did not put the same load on (another scenario, scenario load, seed, clock,
    /// fleet or length, or a generator that fell behind); also among the notes.
    public private(set) var mismatches: [Reason] = []
    /// The headline rows without enough samples to judge.
    public private(set) var tooFewSamples: [Reason] = []
    /// Why the pair cannot be judged. A night that cannot be judged is neither "same" nor "worse".
    public var unjudgeable: [Reason] { mismatches + tooFewSamples }
    public let options: Options

    public var regressions: [Row] { rows.filter { $0.verdict == .worse } }
    public var isWorse: Bool { !regressions.isEmpty }

    /// What a nightly job does with the pair.
    public enum Outcome: String, Sendable {
        case same, worse, cannotJudge
    }

    /// Worse where a judged row is worse and the runs put the same load on; cannot judge where
    /// they did not, or where a headline row has too few samples and nothing judged is worse.
    public var outcome: Outcome {
        if !mismatches.isEmpty { return .cannotJudge }
        if isWorse { return .worse }
        return tooFewSamples.isEmpty ? .same : .cannotJudge
    }

    public init(baseline: Summary, current: Summary, options: Options = Options()) {
        self.options = options
        if baseline.scenario != current.scenario {
            mismatches.append(.differentScenarios(baseline: baseline.scenario, current: current.scenario))
        } else if let before = baseline.scenarioText.flatMap(Self.load), let after = current.scenarioText.flatMap(Self.load), before != after {
            mismatches.append(.scenarioLoadChanged)
        }
        if baseline.seed != current.seed { mismatches.append(.differentSeeds(baseline: baseline.seed, current: current.seed)) }
        if baseline.clock != current.clock { mismatches.append(.differentClocks(baseline: baseline.clock, current: current.clock)) }
        if baseline.devices != current.devices {
            mismatches.append(.differentFleets(baselineDevices: baseline.devices, currentDevices: current.devices))
        }
        // A wall run ends a few milliseconds either side of its length; one stopped early did not
        // put the same load on.
        let longer = max(baseline.simulatedSeconds, current.simulatedSeconds)
        if abs(baseline.simulatedSeconds - current.simulatedSeconds) > 0.01 * longer {
            mismatches.append(.differentLengths(baselineSeconds: baseline.simulatedSeconds, currentSeconds: current.simulatedSeconds))
        }
        // A generator that fell behind did not put the load on, and its latencies hold its own delay.
        for (side, summary) in [(Side.baseline, baseline), (.current, current)] where summary.generatorFellBehind {
            mismatches.append(.generatorFellBehind(side, lagP99Milliseconds: summary.lagP99Milliseconds, cpuBusy: summary.cpuBusy, missedStarts: summary.missedStarts))
        }
        notes = mismatches
        for (side, summary) in [(Side.baseline, baseline), (.current, current)] where summary.shedArrivals > 0 && !summary.generatorFellBehind {
            notes.append(.shedArrivals(side, count: summary.shedArrivals))
        }

        func throughput(_ summary: Summary) -> Double {
            summary.simulatedSeconds > 0 ? Double(summary.metrics.answers(in: Quantity.okStatuses)) / summary.simulatedSeconds : 0
        }
        func rate(_ summary: Summary, _ count: UInt64) -> Double {
            summary.metrics.sent > 0 ? Double(count) / Double(summary.metrics.sent) : 0
        }
        add("throughput (answers 1xx-3xx per second)", unit: .perSecond, throughput(baseline), throughput(current), .higherIsBetter, floor: 0, headline: true)
        let (allBefore, allAfter) = (baseline.metrics.allLatencies, current.metrics.allLatencies)
        for quantile in [0.5, 0.9, 0.99] {
            addPercentile("\(Quantity.name(ofQuantile: quantile)) latency, all operations", quantile, allBefore, allAfter, headline: quantile == 0.99)
        }
        let sent = min(baseline.metrics.sent, current.metrics.sent)
        add("error rate", unit: .share, baseline.metrics.errorRate, current.metrics.errorRate, .lowerIsBetter, floor: options.rateFloor, headline: true, samples: sent)
        add("429 rate", unit: .share, rate(baseline, baseline.rateLimited), rate(current, current.rateLimited), .lowerIsBetter, floor: options.rateFloor, headline: true, samples: sent)
        add("retry amplification (attempts per request)", unit: .ratio, baseline.metrics.retryAmplification, current.metrics.retryAmplification, .lowerIsBetter, floor: 0.01, headline: true)
        if baseline.metrics.connections != nil || current.metrics.connections != nil {
            // What the edge saw: new connections for the load (a service that closes them, or a
            // client model that changed, costs the edge handshakes), and openings it failed.
            func perRequest(_ summary: Summary) -> Double? {
                summary.metrics.connections.map { summary.metrics.sent > 0 ? Double($0.opened) / Double(summary.metrics.sent) : 0 }
            }
            func failedOpenings(_ summary: Summary) -> (share: Double, attempts: UInt64)? {
                guard let (opened, _) = summary.metrics.connections else { return nil }
                let failed = [CounterKey.connectionsRefused, .connectionsHandshakesFailed, .connectionsHandshakesTimedOut].reduce(0) { $0 + (summary.metrics[$1] ?? 0) }
                let attempts = opened + failed
                return (attempts > 0 ? Double(failed) / Double(attempts) : 0, attempts)
            }
            add("new connections per request", unit: .ratio, perRequest(baseline), perRequest(current), .lowerIsBetter, floor: 0.01, headline: false)
            // A headline when both runs opened enough to judge: a run of few connections is not
            // judged on them, and cannot be held back by them.
            let (before, after) = (failedOpenings(baseline), failedOpenings(current))
            let attempts = min(before?.attempts ?? 0, after?.attempts ?? 0)
            add("failed connection openings (refused, TLS failed, timed out)", unit: .share, before?.share, after?.share, .lowerIsBetter,
                floor: options.rateFloor, headline: attempts >= options.minimumSamples, samples: attempts)
        }
        let (http2Before, http2After) = (HTTP2Figures(baseline.metrics), HTTP2Figures(current.metrics))
        if http2Before != nil || http2After != nil {
            // Which HTTP the edge spoke (a change of the edge's ALPN, or of the scenario), and the
            // GOAWAYs it sent per request (a deploy, or an edge recycling its connections).
            add("HTTP/2 share of requests", unit: .share, http2Before?.http2Share ?? 0, http2After?.http2Share ?? 0, .higherIsBetter, floor: 0.01, headline: false)
            func goAwaysPerThousand(_ summary: Summary, _ figures: HTTP2Figures?) -> Double {
                summary.metrics.sent > 0 ? Double(figures?.goAwayCount ?? 0) * 1_000 / Double(summary.metrics.sent) : 0
            }
            add("HTTP/2 GOAWAYs per 1,000 requests", unit: .count, goAwaysPerThousand(baseline, http2Before), goAwaysPerThousand(current, http2After), .lowerIsBetter,
                floor: 0.5, headline: false, samples: min(baseline.metrics.sent, current.metrics.sent))
        }
        if baseline.ledger != nil || current.ledger != nil {
            // Any lost item is worse: the floor is below one.
            add("ledger lost", unit: .count, Double(baseline.lost), Double(current.lost), .lowerIsBetter, floor: 0.5, headline: true, relative: false)
            add("ledger duplicates", unit: .count, Double(baseline.ledgerDuplicates), Double(current.ledgerDuplicates), .lowerIsBetter, floor: 0.5, headline: false)
        }
        for name in Set(baseline.metrics.operations.keys).union(current.metrics.operations.keys).sorted() {
            let before = baseline.metrics.operations[name]
            let after = current.metrics.operations[name]
            guard let before, let after else {
                rows.append(Row(metric: "\(name)", unit: .count, baseline: before.map { Double($0.sent) }, current: after.map { Double($0.sent) },
                                verdict: before == nil ? .new : .gone, isHeadline: true))
                continue
            }
            for quantile in [0.5, 0.9, 0.99] {
                addPercentile("\(Quantity.name(ofQuantile: quantile))(\(name))", quantile, before.latency, after.latency, headline: false)
            }
            add("rate(errors) of \(name)", unit: .share, before.errorRate, after.errorRate, .lowerIsBetter, floor: options.rateFloor, headline: false,
                samples: min(before.sent, after.sent))
        }
    }

    /// What of a scenario file shapes the load it puts on: all of it but its description and the
    /// built-in mocks' settings (the mock stands for the service, which is what is compared).
    static func load(_ text: String) -> JSONValue? {
        guard case .object(var root)? = try? JSONParser.parse(text) else { return nil }
        root["description"] = nil
        root["$schema"] = nil
        if case .object(var platforms)? = root["platforms"] {
            for name in platforms.keys {
                guard case .object(var platform)? = platforms[name] else { continue }
                platform["mock"] = nil
                platforms[name] = .object(platform)
            }
            root["platforms"] = .object(platforms)
        }
        return .object(root)
    }

    /// A latency percentile's row: judged as any row, then a change is taken for noise where the
    /// runs' sampling bands overlap.
    private mutating func addPercentile(_ metric: String, _ quantile: Double, _ baseline: LatencyHistogram, _ current: LatencyHistogram, headline: Bool) {
        add(metric, unit: .milliseconds, baseline.milliseconds(atQuantile: quantile), current.milliseconds(atQuantile: quantile),
            .lowerIsBetter, floor: options.latencyFloorMilliseconds, headline: headline,
            samples: min(baseline.totalCount, current.totalCount))
        guard let last = rows.indices.last, rows[last].verdict == .worse || rows[last].verdict == .better,
              let before = Self.band(baseline, quantile, options.band), let after = Self.band(current, quantile, options.band)
        else { return }
        let separated = rows[last].verdict == .worse ? after.lowerBound > before.upperBound : after.upperBound < before.lowerBound
        if !separated { rows[last].verdict = .noise }
    }

    /// The values, in milliseconds, between which `histogram`'s `quantile` could as well have
    /// fallen: those at the ranks `z` standard deviations either side of its own.
    static func band(_ histogram: LatencyHistogram, _ quantile: Double, _ z: Double) -> ClosedRange<Double>? {
        let count = Double(histogram.totalCount)
        guard count > 0 else { return nil }
        let spread = z * (count * quantile * (1 - quantile)).squareRoot() / count
        guard let low = histogram.milliseconds(atQuantile: max(0, quantile - spread)),
              let high = histogram.milliseconds(atQuantile: min(1, quantile + spread)) else { return nil }
        return low...max(low, high)
    }

    private mutating func add(
        _ metric: String, unit: Unit, _ baseline: Double?, _ current: Double?, _ direction: Direction,
        floor: Double, headline: Bool, relative: Bool = true, samples: UInt64? = nil
    ) {
        var verdict = Verdict.same
        if let samples, samples < options.minimumSamples {
            verdict = .few
        } else if let baseline, let current {
            let difference = current - baseline
            let beyondFloor = abs(difference) > floor
            let beyondTolerance = !relative || abs(difference) > options.tolerance * abs(baseline)
            if beyondFloor && beyondTolerance {
                let higher = difference > 0
                verdict = (higher == (direction == .lowerIsBetter)) ? .worse : .better
            }
        } else if baseline == nil && current != nil {
            verdict = .new
        } else if baseline != nil && current == nil {
            verdict = .gone
        }
        rows.append(Row(metric: metric, unit: unit, baseline: baseline, current: current, verdict: verdict, isHeadline: headline))
        if verdict == .few && headline {
            tooFewSamples.append(.tooFewSamples(metric: metric, samples: samples ?? 0, minimum: options.minimumSamples))
        }
    }

    /// The table a person reads: headline rows always, other rows when they changed (all with `everything`).
    public func render(everything: Bool = false) -> String {
        var table: [[String]] = [["metric", "baseline", "current", "change", "verdict"]]
        for row in rows where everything || row.isHeadline || (row.verdict != .same && row.verdict != .few) {
            func value(_ number: Double?) -> String { number.map(row.unit.format) ?? "-" }
            let change = row.change.map { ($0 >= 0 ? "+" : "") + TerminalReport.format2($0 * 100) + " %" }
                ?? (row.baseline == row.current ? "" : row.baseline == 0 ? "from 0" : "")
            let verdict = switch row.verdict {
            case .worse: "WORSE"
            case .few: "too few samples"
            case .noise: "same (within noise)"
            default: row.verdict.rawValue
            }
            table.append([row.metric, value(row.baseline), value(row.current), change, verdict])
        }
        var lines = TerminalReport.formatTable(table)
        for note in notes { lines.append("note: \(note.text)") }
        let tolerance = TerminalReport.format2(options.tolerance * 100)
        switch outcome {
        case .cannotJudge:
            for reason in tooFewSamples { lines.append("note: \(reason.text)") }
            lines.append("cannot judge: the runs do not put the same load on, or a headline figure rests on too few samples (exit 3)")
        case .worse:
            lines.append("\(regressions.count) worse beyond \(tolerance) % (and the floors: \(TerminalReport.format2(options.latencyFloorMilliseconds)) ms, \(TerminalReport.format2(options.rateFloor * 100)) percentage points)")
        case .same:
            lines.append("no change worse than \(tolerance) %")
        }
        return lines.joined(separator: "\n")
    }

    /// JUnit XML for a CI job: a test case per judged row, failed when the row is worse.
    public func junit(scenario: String) -> String {
        JUnit.xml(suite: "pushswarm compare: \(scenario)", rows.filter { $0.verdict != .few }.map { row in
            let change = row.change.map { " (\($0 >= 0 ? "+" : "")\(TerminalReport.format2($0 * 100)) %)" } ?? ""
            return JUnit.TestCase(
                className: scenario, name: row.metric,
                failure: row.verdict == .worse ? "worse than the baseline beyond \(TerminalReport.format2(options.tolerance * 100)) %: \(row.baseline.map { TerminalReport.format2($0) } ?? "-") -> \(row.current.map { TerminalReport.format2($0) } ?? "-") \(row.unit.symbol)\(change)" : nil
            )
        })
    }

    /// The comparison for a CI job: every row with its verdict.
    public var json: JSONValue {
        [
            "tolerance": .number(options.tolerance),
            "worse": .bool(isWorse),
            "outcome": .string(outcome.rawValue),
            "cannotJudge": .array(unjudgeable.map(\.json)),
            "notes": .array(notes.map(\.json)),
            "rows": .array(rows.map { row in
                [
                    "metric": .string(row.metric), "unit": .string(row.unit.rawValue),
                    "baseline": row.baseline.map(JSONValue.number) ?? .null, "current": row.current.map(JSONValue.number) ?? .null,
                    "change": row.change.map(JSONValue.number) ?? .null, "verdict": .string(row.verdict.rawValue),
                ]
            }),
        ]
    }
}
