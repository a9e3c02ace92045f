extension Comparison {
    /// Which of the pair a reason is about.
    public enum Side: String, Sendable, Equatable {
        case baseline, current
    }

    /// Why a pair of runs cannot be judged, or what else a reader of the comparison should know:
    /// a case for a program, with its values, and a sentence for a person. `compare --json`
    /// carries each as `{"code": …, "text": …}` with the case's values beside them; a CI job or a
    /// test matches the code (or the case), never the sentence, which may be reworded.
    public enum Reason: Sendable, Equatable {
        /// The summaries name different scenarios.
        case differentScenarios(baseline: String, current: String)
        /// One scenario, but its file's load (fleet, groups, workloads, campaigns, clients)
        /// changed between the runs; the mocks' settings stand for the service and do not count.
        case scenarioLoadChanged
        case differentSeeds(baseline: UInt64, current: UInt64)
        case differentClocks(baseline: String, current: String)
        case differentFleets(baselineDevices: Int, currentDevices: Int)
        /// The runs' lengths differ by more than 1 %.
        case differentLengths(baselineSeconds: Double, currentSeconds: Double)
        /// That run's generator did not put the load on, and its latencies hold its own delay.
        case generatorFellBehind(Side, lagP99Milliseconds: Double?, cpuBusy: Double?, missedStarts: UInt64)
        /// A headline row rests on fewer samples than `Options.minimumSamples`.
        case tooFewSamples(metric: String, samples: UInt64, minimum: UInt64)
        /// That run shed arrivals on busy devices: a slow service's doing, so still judged (a note).
        case shedArrivals(Side, count: UInt64)

        /// Its stable name in `compare --json`.
        public var code: String {
            switch self {
            case .differentScenarios: "differentScenarios"
            case .scenarioLoadChanged: "scenarioLoadChanged"
            case .differentSeeds: "differentSeeds"
            case .differentClocks: "differentClocks"
            case .differentFleets: "differentFleets"
            case .differentLengths: "differentLengths"
            case .generatorFellBehind: "generatorFellBehind"
            case .tooFewSamples: "tooFewSamples"
            case .shedArrivals: "shedArrivals"
            }
        }

        /// The sentence a person reads.
        public var text: String {
            switch self {
            case .differentScenarios(let baseline, let current):
                "the runs are of different scenarios (\(baseline) and \(current))"
            case .scenarioLoadChanged:
                "the scenario file's load changed between the runs (its fleet, groups, workloads, campaigns or clients)"
            case .differentSeeds(let baseline, let current):
                "the runs have different seeds (\(baseline) and \(current))"
            case .differentClocks(let baseline, let current):
                "the runs use different clocks (\(baseline) and \(current))"
            case .differentFleets(let baseline, let current):
                "the runs have different fleets (\(baseline) and \(current) devices)"
            case .differentLengths(let baseline, let current):
                "the runs last differently (\(TerminalReport.format2(baseline)) s and \(TerminalReport.format2(current)) s)"
            case .generatorFellBehind(let side, let lag, let cpu, let missed):
                "the \(side.rawValue) run's generator fell behind (lag p99 \(TerminalReport.format2(lag ?? 0)) ms, CPU \(TerminalReport.whole((cpu ?? 0) * 100)) %, \(missed) missed starts): it did not put the load on, and its latencies include PushSwarm's own delay"
            case .tooFewSamples(let metric, let samples, let minimum):
                "too few samples for \(metric) (\(samples); --min-samples \(minimum))"
            case .shedArrivals(let side, let count):
                "the \(side.rawValue) run shed \(count) arrivals on busy devices"
            }
        }

        /// `{"code": …, "text": …}` and the case's values.
        public var json: JSONValue {
            var object: JSONObject = ["code": .string(code), "text": .string(text)]
            func number<N: BinaryInteger>(_ value: N) -> JSONValue { .number(Double(value)) }
            switch self {
            case .differentScenarios(let baseline, let current), .differentClocks(let baseline, let current):
                object["baseline"] = .string(baseline)
                object["current"] = .string(current)
            case .scenarioLoadChanged:
                break
            case .differentSeeds(let baseline, let current):
                object["baseline"] = number(baseline)
                object["current"] = number(current)
            case .differentFleets(let baseline, let current):
                object["baseline"] = number(baseline)
                object["current"] = number(current)
            case .differentLengths(let baseline, let current):
                object["baseline"] = .number(baseline)
                object["current"] = .number(current)
            case .generatorFellBehind(let side, let lag, let cpu, let missed):
                object["run"] = .string(side.rawValue)
                object["lagP99Ms"] = lag.map(JSONValue.number) ?? .null
                object["cpuBusy"] = cpu.map(JSONValue.number) ?? .null
                object["missedStarts"] = number(missed)
            case .tooFewSamples(let metric, let samples, let minimum):
                object["metric"] = .string(metric)
                object["samples"] = number(samples)
                object["minimum"] = number(minimum)
            case .shedArrivals(let side, let count):
                object["run"] = .string(side.rawValue)
                object["count"] = number(count)
            }
            return .object(object)
        }
    }

    /// What a row's figures count, by its stable name in `compare --json`; the terminal shows its
    /// symbol.
    public enum Unit: String, Sendable, Equatable {
        /// Answers a second.
        case perSecond
        case milliseconds
        /// A share of 1 (0.1 is 10 %), shown as a percentage.
        case share
        /// Times as many (retry amplification, connections per request).
        case ratio
        /// A count, or a count per 1,000 (`HTTP/2 GOAWAYs per 1,000 requests` says so in its name).
        case count

        /// As the terminal writes it after a figure.
        public var symbol: String {
            switch self {
            case .perSecond: "/s"
            case .milliseconds: "ms"
            case .share: "%"
            case .ratio: "x"
            case .count: ""
            }
        }

        /// A figure of this unit as a person reads it.
        func format(_ number: Double) -> String {
            switch self {
            case .share: TerminalReport.format2(number * 100) + " %"
            case .count: TerminalReport.group(UInt64(max(0, number)))
            case .ratio: TerminalReport.format2(number)
            case .perSecond, .milliseconds: TerminalReport.format2(number) + " " + symbol
            }
        }
    }
}
