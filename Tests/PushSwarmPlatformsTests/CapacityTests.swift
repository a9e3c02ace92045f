import Foundation
import Synchronization
import Testing
@testable import PushSwarmCore
@testable import PushSwarmPlatforms
import PushSwarmMetrics

/// `pushswarm capacity`'s search, in simulated time.
@Suite struct CapacityTests {
    @Test func theObjectiveIsReadAsWritten() throws {
        let objective = try ServiceLevelObjective(parsing: "p99<200ms, errors<1%")
        #expect(objective.latencyQuantile == 0.99 && objective.latencyLimit == .milliseconds(200) && objective.errorRateLimit == 0.01)
        #expect(objective.description == "p99<200ms,errors<1%")
        #expect(try ServiceLevelObjective(parsing: "p999<1s").latencyQuantile == 0.999)
        #expect(try ServiceLevelObjective(parsing: "errors<0.05").errorRateLimit == 0.05)
        #expect(throws: ScenarioError.self) { try ServiceLevelObjective(parsing: "p99>200ms") }
        #expect(throws: ScenarioError.self) { try ServiceLevelObjective(parsing: "errors<150%") }
        #expect(throws: ScenarioError.self) { try ServiceLevelObjective(parsing: "latency<2s") }
    }

    /// capacity.json is written and read by one type: a real search's outcome (a simulated one,
    /// and one with wall steps' generator health and a limit of PushSwarm's own) reads back
    /// equal, and a file that says otherwise is refused with the JSON path.
    @Test func capacityJSONReadsBackAsItWasWritten() async throws {
        let scenario = try loadScenario("capacity-events") { $0["duration"] = "5s" }
        let search = try CapacitySearch(scenario: scenario, objective: ServiceLevelObjective(parsing: "p99<200ms,errors<1%"), startRate: 50, precision: 0.2)
        let found = await search.run { CapacityRun(metrics: await Run.simulated($0).run().metrics) }
        try #require(found.steps.count >= 2)
        var limited = found
        limited.generatorLimit = found.steps.last?.rate
        limited.steps[0].saturated = true
        limited.steps[0].generatorLimit = "generator lag p99 240 ms over 100 ms"
        limited.steps[0].failedThresholds = ["p(99) < 200ms"]
        limited.steps[0].generator = GeneratorHealth(lagP99Milliseconds: 240.5, cpuBusy: 0.912, shedArrivals: 3, missedStarts: 0, pendingAtEnd: 12)
        limited.steps[1].generator = GeneratorHealth(lagP99Milliseconds: nil, cpuBusy: nil, shedArrivals: 0, missedStarts: 1, pendingAtEnd: 0)
        for outcome in [found, limited] {
            let report = CapacityReport(scenario: scenario.name, objective: search.objective.description, thresholds: ["rate(errors) < 1%"], outcome: outcome)
            #expect(try CapacityReport(reading: report.text) == report)
        }
        #expect(throws: CapacityReport.ReadError(path: "$.steps[0].held", message: "expected true or false")) {
            try CapacityReport(reading: #"{"scenario":"s","objective":"","thresholds":[],"capacityPerSecond":null,"heldPerSecond":null,"limitedByPushSwarmAtPerSecond":null,"steps":[{"rate":1,"sent":1,"errorRate":0,"held":"yes","saturated":false,"failedThresholds":[]}]}"#)
        }
        #expect(throws: CapacityReport.ReadError.self) {
            try CapacityReport(reading: #"{"scenario":"s","objective":"","thresholds":[],"capacityPerSecond":5,"heldPerSecond":5,"limitedByPushSwarmAtPerSecond":9,"steps":[]}"#)
        }
    }

    @Test func theSearchFindsTheConfiguredLimitWithinFivePercent() async throws {
        // capacity-events.json: a token bucket admitting 200 events/s in all.
        let scenario = try loadScenario("capacity-events") { $0["duration"] = "20s" }
        let search = try CapacitySearch(scenario: scenario, objective: ServiceLevelObjective(parsing: "p99<200ms,errors<1%"), startRate: 10)
        let (steps, capacity) = await search.run { CapacityRun(metrics: await Run.simulated($0).run().metrics) }.pair
        let found = try #require(capacity)
        #expect(abs(found - 200) <= 10, "capacity \(found)/s")
        #expect(steps.contains { !$0.held } && steps.contains { $0.held })
        // Every step ran at its rate: sent ≈ rate × duration.
        for step in steps { #expect(abs(Double(step.sent) - step.rate * 20) <= 2) }
    }

    @Test func aLatencyObjectiveBreaksWhenTheServiceQueues() async throws {
        // A leaky bucket without nodelay delays the excess instead of refusing it: past 100/s the
        // answers queue, and p99 < 200 ms is what breaks.
        let scenario = try loadScenario("capacity-events") { object in
            object["duration"] = "20s"
            object["platforms"] = ["smartapppush": ["retry": ["rateLimited": ["maxRetries": 0]], "mock": [
                "latency": "10ms", "rateLimitPerSecond": 1_000_000,
                "rateLimits": [["algorithm": "leakyBucket", "rate": "100/s", "burst": 100_000, "key": "global"]],
            ]]]
        }
        let search = try CapacitySearch(scenario: scenario, objective: ServiceLevelObjective(parsing: "p99<200ms"), startRate: 10)
        let (steps, capacity) = await search.run { CapacityRun(metrics: await Run.simulated($0).run().metrics) }.pair
        let found = try #require(capacity)
        #expect(found >= 95 && found <= 115, "capacity \(found)/s")
        // Just above capacity nothing is refused or timed out: latency is what broke.
        let nearest = try #require(steps.filter { !$0.held }.min { $0.rate < $1.rate })
        #expect(nearest.errorRate == 0 && (nearest.latency ?? 0) > 200_000)
    }

    @Test func thresholdsAreObjectivesPerStatusAndPerOperation() async throws {
        // The same 200/s edge, found by its 429s alone, and a per-operation latency that holds.
        let scenario = try loadScenario("capacity-events") { $0["duration"] = "20s" }
        var search = try CapacitySearch(scenario: scenario, objective: ServiceLevelObjective(), startRate: 10)
        search.thresholds = [try Threshold(parsing: "rate(status=429) < 1%"), try Threshold(parsing: "p99(smartapppush.events) < 1s")]
        let (steps, capacity) = await search.run { CapacityRun(metrics: await Run.simulated($0).run().metrics) }.pair
        let found = try #require(capacity)
        #expect(abs(found - 200) <= 10, "capacity \(found)/s")
        let broken = steps.filter { !$0.held }
        #expect(!broken.isEmpty && broken.allSatisfy { $0.failedThresholds == ["rate(status=429) < 1%"] })
        #expect(steps.filter(\.held).allSatisfy { $0.failedThresholds.isEmpty })
    }

    /// A step whose generator fell behind did not put its load on, so it cannot hold (a loaded
    /// machine once "held" 278/s against a limit of 200/s). The search runs such a step again;
    /// a generator that never keeps up bounds what the search can claim.
    @Test func aStepWhoseGeneratorFellBehindDoesNotHoldAndIsRunAgain() async throws {
        let scenario = try loadScenario("capacity-events") { $0["duration"] = "20s" }
        let search = try CapacitySearch(scenario: scenario, objective: ServiceLevelObjective(parsing: "p99<200ms,errors<1%"), startRate: 10)
        func rate(of stepped: Scenario) -> Double {
            stepped.groups.reduce(0) { total, group in
                if case .open(let open) = group.workload { total + open.segments[0].fromRate } else { total }
            }
        }
        // Once per rate, the generator misses starts (another process took the CPU): that step
        // is saturated, not held, and run again; the rerun decides.
        let firstRuns = Mutex(Set<Int>())
        let (steps, capacity) = await search.run { stepped in
            var metrics = await Run.simulated(stepped).run().metrics
            if firstRuns.withLock({ $0.insert(Int(rate(of: stepped) * 100)).inserted }) { metrics.increment(.workloadMissedStarts) }
            return CapacityRun(metrics: metrics)
        }.pair
        #expect(abs((capacity ?? 0) - 200) <= 10, "capacity \(String(describing: capacity))/s")
        let saturated = steps.filter(\.saturated)
        #expect(!saturated.isEmpty && saturated.allSatisfy { !$0.held })
        for step in saturated { #expect(steps.contains { !$0.saturated && $0.rate == step.rate }, "rerun at \(step.rate)/s") }

        // A generator that cannot go past 150/s: the search ends at PushSwarm's limit, never
        // claims a capacity for the service, and what held stays below that limit.
        let bounded = await search.run { stepped in
            var metrics = await Run.simulated(stepped).run().metrics
            if rate(of: stepped) > 150 { metrics.increment(.workloadMissedStarts) }
            return CapacityRun(metrics: metrics)
        }
        #expect(bounded.capacity == nil, "no capacity claimed for the service")
        let limit = try #require(bounded.generatorLimit)
        #expect(limit > 150 && (bounded.held ?? 0) <= 150, "limited at \(limit)/s, held \(String(describing: bounded.held))/s")
        #expect(bounded.steps.last { $0.rate == limit }?.generatorLimit?.contains("starts missed") == true)
        #expect(bounded.steps.allSatisfy { $0.generator == nil }, "simulated time has no generator of its own to report")

        // In wall time each step carries the generator's health its verdict read: lag, CPU,
        // shed and missed arrivals, and what was still queued or in flight at the end.
        var wall = search
        wall.scenario.clock = .wall
        var metrics = RunMetrics()
        for _ in 0..<100 { metrics.recordDuration(.generatorLag, microseconds: 150_000) }
        metrics.increment(.workloadShed, by: 3)
        metrics.increment(.workloadMissedStarts, by: 2)
        let judged = wall.judge(CapacityRun(metrics: metrics, cpuBusy: 0.5, pendingAtEnd: 7), rate: 100)
        let health = try #require(judged.generator)
        #expect(health.shedArrivals == 3 && health.missedStarts == 2 && health.pendingAtEnd == 7 && health.cpuBusy == 0.5)
        #expect((health.lagP99Milliseconds ?? 0) >= 140, "lag p99 \(String(describing: health.lagP99Milliseconds)) ms")
        #expect(judged.saturated && !judged.held)
    }

    /// Issue 34: arrivals shed on busy devices while the service answered within the objective
    /// are PushSwarm's limit (too few devices), not the service's. 20 devices, a 100 ms service:
    /// 20 devices × 8 waiting / 0.1 s is about 1,600/s at most, whatever the service could take.
    @Test func arrivalsShedOnBusyDevicesWhileTheServiceAnswersInTimeAreTheGeneratorsLimit() async throws {
        let scenario = try loadScenario("capacity-events") { object in
            object["duration"] = "10s"
            object["devices"] = 20
            object["platforms"] = ["smartapppush": ["retry": ["rateLimited": ["maxRetries": 0]], "mock": ["latency": "100ms", "rateLimitPerSecond": 100000]]]
        }
        let search = try CapacitySearch(scenario: scenario, objective: ServiceLevelObjective(parsing: "p99<2s,errors<1%"), startRate: 50)
        let outcome = await search.run { CapacityRun(metrics: await Run.simulated($0).run().metrics) }
        #expect(outcome.capacity == nil)
        let limit = try #require(outcome.generatorLimit, "\(outcome.steps.map { ($0.rate, $0.held, $0.generatorLimit) })")
        #expect(limit <= 1_600 && (outcome.held ?? 0) >= 100)
        #expect(outcome.steps.contains { $0.generatorLimit?.contains("shed on busy devices") == true })
        // The same devices against a service slower than the objective: the service's limit.
        let strict = try CapacitySearch(scenario: scenario, objective: ServiceLevelObjective(parsing: "p99<50ms"), startRate: 50)
        let slow = await strict.run { CapacityRun(metrics: await Run.simulated($0).run().metrics) }
        #expect(slow.generatorLimit == nil)
    }

    @Test func aScenarioWithoutAnOpenWorkloadIsRefused() throws {
        #expect(throws: ScenarioError.self) { try CapacitySearch(scenario: try loadScenario("quickstart"), objective: ServiceLevelObjective(), startRate: 10) }
    }
}

extension CapacityOutcome {
    /// The steps and the service's capacity, as the tests above read them.
    var pair: ([CapacityStep], Double?) { (steps, capacity) }
}
