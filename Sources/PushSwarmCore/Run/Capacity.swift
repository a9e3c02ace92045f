public import PushSwarmMetrics

/// What "the service held" means for a capacity search: `p99<200ms,errors<1%`.
public struct ServiceLevelObjective: Sendable, Equatable, CustomStringConvertible {
    /// The latency quantile checked (0.99 for `p99`) and its limit, if any.
    public var latencyQuantile = 0.99
    public var latencyLimit: TimeSpan?
    /// Highest share of requests that may end in anything but a 1xx-3xx answer (4xx, 5xx,
    /// transport errors, timeouts), if any.
    public var errorRateLimit: Double?

    public init(latencyQuantile: Double = 0.99, latencyLimit: TimeSpan? = nil, errorRateLimit: Double? = nil) {
        self.latencyQuantile = latencyQuantile
        self.latencyLimit = latencyLimit
        self.errorRateLimit = errorRateLimit
    }

    /// Reads `p99<200ms,errors<1%` (either part may be left out; `p50`…`p999`; errors as a
    /// percentage or a fraction).
    public init(parsing text: String) throws(ScenarioError) {
        let parts = text.split(separator: ",").map { $0.filter { $0 != " " } }
        guard !parts.isEmpty else { throw ScenarioError(path: "--slo", message: "expected something like p99<200ms,errors<1%") }
        for part in parts {
            let pieces = part.split(separator: "<", maxSplits: 1).map(String.init)
            guard pieces.count == 2 else { throw ScenarioError(path: "--slo", message: "\"\(part)\" is not NAME<LIMIT, such as p99<200ms or errors<1%") }
            if pieces[0] == "errors" {
                guard let number = Quantity.share(pieces[1]), number >= 0, number <= 1 else {
                    throw ScenarioError(path: "--slo", message: "errors<\(pieces[1]): expected a percentage such as 1% or a fraction such as 0.01")
                }
                errorRateLimit = number
            } else if let quantile = Quantity.quantile(named: pieces[0]) {
                guard quantile < 1, let limit = TimeSpan(parsing: pieces[1]), limit > .zero else {
                    throw ScenarioError(path: "--slo", message: "\(part): expected a percentile such as p99 and a duration such as 200ms")
                }
                latencyQuantile = quantile
                latencyLimit = limit
            } else {
                throw ScenarioError(path: "--slo", message: "unknown objective \"\(pieces[0])\"; use pNN<duration and errors<percent")
            }
        }
    }

    public var description: String {
        var parts: [String] = []
        if let latencyLimit { parts.append("\(Quantity.name(ofQuantile: latencyQuantile))<\(latencyLimit)") }
        if let errorRateLimit {
            let percent = errorRateLimit * 100
            parts.append("errors<\(percent == percent.rounded() ? String(Int(percent)) : String(percent))%")
        }
        return parts.joined(separator: ",")
    }
}

/// One step of a capacity search: an open load at `rate` for the scenario's duration.
public struct CapacityStep: Sendable, Equatable {
    public var rate: Double
    public var sent: UInt64
    public var latency: UInt64?
    public var errorRate: Double
    public var held: Bool
    /// The thresholds that failed at this rate, as written.
    public var failedThresholds: [String] = []
    /// The step did not put on the load it asked for because PushSwarm, not the service, fell
    /// behind: generator lag p99 over 100 ms, starts missed, the CPU over 90 % of the cores, or
    /// arrivals shed on devices busy with earlier requests while the service's own answers
    /// (service time, errors) met the objective. It cannot vouch for its rate, so it does not
    /// hold; the search runs it again, and a rate that stays so is PushSwarm's limit, not the
    /// service's.
    public var saturated = false
    /// What limited PushSwarm at this step, in words (nil when it was not saturated).
    public var generatorLimit: String?
    /// How PushSwarm itself fared at this step (wall time; nil in simulated time), so that a
    /// reader sees why a step was or was not taken as the service's.
    public var generator: GeneratorHealth?

    public init(
        rate: Double, sent: UInt64, latency: UInt64?, errorRate: Double, held: Bool, failedThresholds: [String] = [], saturated: Bool = false,
        generatorLimit: String? = nil, generator: GeneratorHealth? = nil
    ) {
        self.rate = rate
        self.sent = sent
        self.latency = latency
        self.errorRate = errorRate
        self.held = held
        self.failedThresholds = failedThresholds
        self.saturated = saturated
        self.generatorLimit = generatorLimit
        self.generator = generator
    }
}

/// A wall run's own health: how late it started what was due, the CPU it took, and the work it
/// could not put on or finish.
public struct GeneratorHealth: Sendable, Equatable {
    /// Generator lag p99, in milliseconds (nil when the run scheduled nothing).
    public var lagP99Milliseconds: Double?
    /// The share of the machine's cores the run kept busy.
    public var cpuBusy: Double?
    /// Open-model arrivals shed on devices busy with earlier requests.
    public var shedArrivals: UInt64
    /// Open-model arrivals reached over a second late.
    public var missedStarts: UInt64
    /// Requests still queued in devices or in flight at the end.
    public var pendingAtEnd: UInt64

    public init(lagP99Milliseconds: Double?, cpuBusy: Double?, shedArrivals: UInt64, missedStarts: UInt64, pendingAtEnd: UInt64) {
        self.lagP99Milliseconds = lagP99Milliseconds
        self.cpuBusy = cpuBusy
        self.shedArrivals = shedArrivals
        self.missedStarts = missedStarts
        self.pendingAtEnd = pendingAtEnd
    }
}

/// What one step's run gives the search: its metrics, and in wall time its CPU share and the
/// requests still queued in its devices at the end.
public struct CapacityRun: Sendable {
    public var metrics: RunMetrics
    public var cpuBusy: Double?
    public var pendingAtEnd: Int

    public init(metrics: RunMetrics, cpuBusy: Double? = nil, pendingAtEnd: Int = 0) {
        self.metrics = metrics
        self.cpuBusy = cpuBusy
        self.pendingAtEnd = pendingAtEnd
    }
}

/// What a capacity search found.
public struct CapacityOutcome: Sendable, Equatable {
    public var steps: [CapacityStep]
    /// The highest rate that held.
    public var held: Double?
    /// Set when the search stopped at PushSwarm's own limit: the lowest rate it could not put
    /// on (the service held every rate below it that was tried). The service's capacity is then
    /// unknown, at least `held`.
    public var generatorLimit: Double?

    public init(steps: [CapacityStep], held: Double?, generatorLimit: Double?) {
        self.steps = steps
        self.held = held
        self.generatorLimit = generatorLimit
    }

    /// The service's capacity: the highest rate that held, when the service (not PushSwarm) broke above it.
    public var capacity: Double? { generatorLimit == nil ? held : nil }
}

/// Steps a scenario's open load up until the objective breaks, then narrows the gap: the highest
/// rate that held, with every step run.
public struct CapacitySearch: Sendable {
    public var scenario: Scenario
    public var objective: ServiceLevelObjective
    /// Further conditions every step must meet, in the thresholds' language: per operation
    /// (`p99(<platform>.events) < 200ms`), per status (`rate(status=429) < 1%`), the ledger….
    public var thresholds: [Threshold] = []
    public var startRate: Double
    /// Stop narrowing once the gap between the best rate that held and the lowest that broke is
    /// within this share of the former.
    public var precision: Double
    public var maximumSteps: Int

    public init(scenario: Scenario, objective: ServiceLevelObjective, startRate: Double, precision: Double = 0.02, maximumSteps: Int = 24) throws(ScenarioError) {
        guard scenario.groups.contains(where: { if case .open = $0.workload { true } else { false } }) else {
            throw ScenarioError(path: "$.groups", message: "a capacity search needs a group with an open workload ({\"model\": \"open\", \"rate\": …}) whose rate it can step")
        }
        self.scenario = scenario
        self.objective = objective
        self.startRate = startRate
        self.precision = precision
        self.maximumSteps = maximumSteps
    }

    /// The scenario with its open groups sharing `rate` per second, constant.
    public func scenario(at rate: Double) -> Scenario {
        var stepped = scenario
        let open = stepped.groups.indices.filter { if case .open = stepped.groups[$0].workload { true } else { false } }
        for index in open {
            guard case .open(var workload) = stepped.groups[index].workload else { continue }
            let share = rate / Double(open.count)
            workload.segments = [OpenWorkload.Segment(length: scenario.duration, fromRate: share, toRate: share)]
            stepped.groups[index].workload = .open(workload)
        }
        return stepped
    }

    /// Whether a run's results meet the objective, and the figures checked; `cpuBusy` is the
    /// run's CPU use as a share of the cores (wall time).
    public func judge(_ run: CapacityRun, rate: Double) -> CapacityStep {
        let metrics = run.metrics
        let cpuBusy = run.cpuBusy
        let sent = metrics.sent
        let errorRate = metrics.errorRate
        let value = metrics.allLatencies.value(atQuantile: objective.latencyQuantile)
        var held = sent > 0
        if let limit = objective.latencyLimit, let value, value > UInt64(max(0, limit.microseconds)) { held = false }
        if let limit = objective.errorRateLimit, errorRate > limit { held = false }
        var summary = Summary(
            scenario: scenario.name, seed: scenario.seed, clock: scenario.clock.rawValue, devices: scenario.devices,
            simulatedSeconds: scenario.duration.seconds, wallSeconds: 0, runID: "", version: "", metrics: metrics,
            ledger: nil, lost: 0, pendingAtEnd: 0
        )
        summary.cpuBusy = cpuBusy
        let failed = thresholds.filter { !$0.holds(summary) }.map(\.text)
        // Once a step "held" at 278/s against a limit of 200/s: on a loaded machine its generator
        // had put on far less than it asked for.
        var limits: [String] = []
        if let lag = summary.lagP99Milliseconds, lag > Summary.saturationThresholdMs { limits.append("generator lag p99 \(Int(lag.rounded())) ms") }
        if summary.missedStarts > 0 { limits.append("\(summary.missedStarts) starts missed") }
        if let cpuBusy, cpuBusy > Summary.saturationCPUShare { limits.append("CPU \(Int((cpuBusy * 100).rounded())) % of the cores") }
        // Arrivals shed found their device busy with earlier requests. When the service's own
        // answers met the objective (its service time, its errors), the devices were too few or
        // too slow to put the load on: PushSwarm's limit. Otherwise the service did not keep up.
        let shed = summary.shedArrivals > 0
        if shed {
            var serviceHeld = objective.errorRateLimit.map { errorRate <= $0 } ?? true
            if let limit = objective.latencyLimit, let p = metrics.allServiceTimes.value(atQuantile: objective.latencyQuantile), p > UInt64(max(0, limit.microseconds)) { serviceHeld = false }
            if serviceHeld { limits.append("\(summary.shedArrivals) arrivals shed on busy devices") }
        }
        let saturated = !limits.isEmpty
        var step = CapacityStep(
            rate: rate, sent: sent, latency: value, errorRate: errorRate, held: held && failed.isEmpty && !saturated && !shed, failedThresholds: failed
        )
        step.saturated = saturated
        step.generatorLimit = saturated ? limits.joined(separator: ", ") : nil
        if scenario.clock == .wall {
            step.generator = GeneratorHealth(
                lagP99Milliseconds: summary.lagP99Milliseconds, cpuBusy: cpuBusy, shedArrivals: summary.shedArrivals,
                missedStarts: summary.missedStarts, pendingAtEnd: UInt64(max(0, run.pendingAtEnd)) + metrics.inFlightAtEnd
            )
        }
        return step
    }

    /// Times a saturated step is run again before the search takes it as PushSwarm's limit.
    public static let saturatedRetries = 2

    /// Runs the search; `execute` runs one stepped scenario (in either clock) and gives what it
    /// did (`CapacityRun`).
    public func run(_ execute: (Scenario) async -> CapacityRun, progress: (CapacityStep) -> Void = { _ in }) async -> CapacityOutcome {
        var steps: [CapacityStep] = []
        var good: Double?
        var bad: Double?
        var badIsGenerator = false
        var rate = startRate
        var retries = 0
        func outcome() -> CapacityOutcome {
            CapacityOutcome(steps: steps, held: good, generatorLimit: badIsGenerator ? bad : nil)
        }
        while steps.count < maximumSteps {
            let step = judge(await execute(scenario(at: rate)), rate: rate)
            steps.append(step)
            progress(step)
            if step.saturated && retries < Self.saturatedRetries {
                // PushSwarm, not the service, fell behind (another process, a slow start): the
                // step says nothing about the service yet. Run it again.
                retries += 1
                continue
            }
            retries = 0
            if step.held {
                good = max(good ?? 0, rate)
            } else if rate < (bad ?? .infinity) {
                // The lowest rate that did not hold bounds the search; whether it was the
                // service's limit or PushSwarm's decides what the search reports.
                bad = rate
                badIsGenerator = step.saturated
            }
            switch (good, bad) {
            case (let held?, nil):
                rate = held * 2
            case (nil, let broke?):
                // Even the first step broke: halve until one holds.
                rate = broke / 2
                if rate < 0.01 { return outcome() }
            case (let held?, let broke?):
                if (broke - held) / held <= precision { return outcome() }
                rate = (held + broke) / 2
            case (nil, nil):
                return outcome()
            }
        }
        return outcome()
    }
}
