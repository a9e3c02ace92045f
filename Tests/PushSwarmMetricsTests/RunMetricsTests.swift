import Testing
@testable import PushSwarmMetrics

@Suite struct RunMetricsTests {
    /// Issue 53: counters are reached through typed keys, but their names are a contract:
    /// summary archives keep counts by name, `compare` reads last month's baseline with today's
    /// build, shard streams cross builds, thresholds say `counter(NAME)`, dashboards query the
    /// names. A key whose name changes fails here, not silently in a nightly job.
    @Test func theCountersThatReportsReadKeepTheirArchivedNames() {
        let names: [(CounterKey, String)] = [
            (.workloadArrivals, "workload.arrivals"), (.workloadShed, "workload.shed"),
            (.workloadShedAtWaitingCeiling, "workload.shedAtWaitingCeiling"), (.workloadMissedStarts, "workload.missedStarts"),
            (.eventLoopWaits, "eventLoop.waits"), (.eventLoopEvents, "eventLoop.events"), (.runInterrupted, "run.interrupted"),
            (.warmUpInstalls, "warmUp.installs"), (.notificationsSent, "notifications.sent"),
            (.notificationsDisplayed, "notifications.displayed"), (.notificationsTapped, "notifications.tapped"),
            (.socketsOpened, "sockets.opened"), (.socketsClosedByPeer, "sockets.closedByPeer"), (.socketsPeakOpen, "sockets.peakOpen"),
            (.connectionsOpened, "connections.opened"), (.connectionsRefused, "connections.refused"),
            (.connectionsHandshakesTimedOut, "connections.handshakes.timedOut"), (.connectionsClosed("idle"), "connections.closed.idle"),
            (.requestsHTTP2, "requests.http2"), (.http2GoAways("NO_ERROR"), "connections.http2.goAway.NO_ERROR"),
        ]
        for (key, name) in names { #expect(key.name == name) }
        #expect(DurationKey.generatorLag.name == "generatorLag" && DurationKey.rateLimitRecovery.name == "rateLimitRecovery")
        // Counted through a key, read by its name (as an archive or a threshold's counter(NAME)
        // does), and a family's members by theirs.
        var metrics = RunMetrics()
        metrics.increment(.workloadShed, by: 3)
        metrics.increment(.connectionsClosed("idle"), by: 2)
        metrics.increment(.connectionsClosed("background"))
        #expect(metrics.counters["workload.shed"] == 3 && metrics[CounterKey("workload.shed")] == 3 && metrics[.workloadArrivals] == nil)
        #expect(CounterKey.connectionsClosed.members(in: metrics).map(\.member) == ["background", "idle"])
    }

    @Test func everySentRequestEndsInExactlyOneOutcome() {
        var metrics = RunMetrics()
        for _ in 0..<5 { metrics.recordSent(operation: "p.events", retryNumber: 0) }
        metrics.recordSent(operation: "p.events", retryNumber: 1)
        metrics.recordResponse(operation: "p.events", status: 200, latencyMicroseconds: 40_000)
        metrics.recordResponse(operation: "p.events", status: 200, latencyMicroseconds: 50_000)
        metrics.recordResponse(operation: "p.events", status: 429, latencyMicroseconds: 10_000)
        metrics.recordTransportError(operation: "p.events", reason: "networkError")
        metrics.recordTimeout(operation: "p.events")
        #expect(metrics.sent == 6)
        #expect(metrics.operations["p.events"]?.completed == 5)
        metrics.recordResponse(operation: "p.events", status: 503, latencyMicroseconds: 1_000)
        #expect(metrics.sent == metrics.byStatus.values.reduce(0, +) + metrics.transportErrors + metrics.timeouts)
        #expect(metrics.retriesByAttempt == [1: 1])
    }

    @Test func mergingShardsAddsEverything() {
        var left = RunMetrics()
        left.recordSent(operation: "a", retryNumber: 0)
        left.recordResponse(operation: "a", status: 200, latencyMicroseconds: 5)
        left.recordDrop(reason: "http400")
        var right = RunMetrics()
        right.recordSent(operation: "a", retryNumber: 2)
        right.recordResponse(operation: "a", status: 200, latencyMicroseconds: 7)
        right.recordDrop(reason: "http400")
        right.increment(.notificationsTapped)
        left.merge(right)
        #expect(left.sent == 2)
        #expect(left.byStatus == [200: 2])
        #expect(left.droppedByReason == ["http400": 2])
        #expect(left.retriesByAttempt == [2: 1])
        #expect(left.counters == ["notifications.tapped": 1])
        #expect(left.operations["a"]?.latency.totalCount == 2)
    }

    /// Operations and statuses are kept in short arrays found by comparison, not dictionaries;
    /// kept in order, so that two runs that saw the same things in another order are equal (a
    /// run's partitions merge into the same summary whatever their number).
    @Test func theOrderOperationsAndStatusesFirstAppearInChangesNothing() {
        var first = RunMetrics()
        var second = RunMetrics()
        let seen: [(String, Int)] = [("b.open", 429), ("a.events", 200), ("c.token", 503), ("a.events", 400), ("b.open", 200)]
        for (operation, status) in seen {
            first.recordSent(operation: operation, retryNumber: 0)
            first.recordResponse(operation: operation, status: status, latencyMicroseconds: 10)
        }
        for (operation, status) in seen.reversed() {
            second.recordSent(operation: operation, retryNumber: 0)
            second.recordResponse(operation: operation, status: status, latencyMicroseconds: 10)
        }
        #expect(first == second)
        #expect(first.operations["a.events"]?.byStatus == [200: 1, 400: 1])
        #expect(first.byStatus == [200: 2, 400: 1, 429: 1, 503: 1])
        var merged = RunMetrics()
        merged.merge(second)
        merged.merge(first)
        #expect(merged.operations.keys.sorted() == ["a.events", "b.open", "c.token"])
        #expect(merged.operations["b.open"]?.byStatus == [200: 2, 429: 2])
        // Set through the dictionary view, read back the same.
        merged.operations["d.new"] = first.operations["a.events"]
        #expect(merged.operations["d.new"] == first.operations["a.events"])
    }
}

/// When a wall run marks itself saturated: its own lateness, its CPU, or starts it missed.
@Suite struct SaturationTests {
    func summary(lagMicroseconds: UInt64, cpu: Double?, missed: UInt64 = 0) -> Summary {
        var metrics = RunMetrics()
        for _ in 0..<100 { metrics.recordDuration(.generatorLag, microseconds: lagMicroseconds) }
        if missed > 0 { metrics.increment(.workloadMissedStarts, by: missed) }
        var summary = Summary(
            scenario: "s", seed: 1, clock: "wall", devices: 1, simulatedSeconds: 1, wallSeconds: 1, runID: "r", version: "v",
            metrics: metrics, ledger: nil, lost: 0, pendingAtEnd: 0
        )
        summary.cpuBusy = cpu
        return summary
    }

    @Test func aRunIsSaturatedByLagCPUOrMissedStarts() throws {
        #expect(!summary(lagMicroseconds: 2_000, cpu: 0.4).isSaturated)
        #expect(summary(lagMicroseconds: 250_000, cpu: 0.4).isSaturated, "lag p99 over 100 ms")
        #expect(summary(lagMicroseconds: 2_000, cpu: 0.95).isSaturated, "CPU over 90 % of the cores")
        #expect(summary(lagMicroseconds: 2_000, cpu: 0.4, missed: 3).isSaturated, "starts missed")
        let generator = try #require(summary(lagMicroseconds: 2_000, cpu: 0.95).json["generator"])
        #expect(generator["saturated"] == .bool(true) && generator["cpuBusy"] == .number(0.95))
        #expect(generator["wakeUps"] == nil, "no loop counted: no wake-ups reported")
        // The loops' count of their wake-ups, and the events each brought on average.
        var woken = summary(lagMicroseconds: 2_000, cpu: 0.4)
        woken.metrics[.eventLoopWaits] = 400
        woken.metrics[.eventLoopEvents] = 1_000
        let counted = try #require(woken.json["generator"])
        #expect(counted["wakeUps"] == .number(400) && counted["eventsPerWakeUp"] == .number(2.5))
        #expect(TerminalReport.render(woken, reportPath: nil).contains("400 wake-ups, 2.50 events each"))
        // Simulated runs have no generator section: nothing of theirs is late.
        var simulated = Summary(scenario: "s", seed: 1, clock: "simulated", devices: 1, simulatedSeconds: 1, wallSeconds: 1, runID: "r", version: "v", metrics: RunMetrics(), ledger: nil, lost: 0, pendingAtEnd: 0)
        simulated.cpuBusy = nil
        #expect(simulated.json["generator"] == nil)
    }
}

/// Thresholds as a CI job writes them.
@Suite struct ThresholdTests {
    func summary() -> Summary {
        var metrics = RunMetrics()
        for index in 0..<100 {
            metrics.recordSent(operation: "a.events", retryNumber: 0)
            metrics.recordResponse(operation: "a.events", status: index < 3 ? 429 : 200, latencyMicroseconds: UInt64(1_000 * (index + 1)))
        }
        return Summary(
            scenario: "s", seed: 1, clock: "simulated", devices: 1, simulatedSeconds: 1, wallSeconds: 1, runID: "r", version: "v",
            metrics: metrics, ledger: [:], lost: 2, pendingAtEnd: 0
        )
    }

    @Test func thresholdsAreReadAndJudged() throws {
        let run = summary()
        func holds(_ text: String) throws -> Bool { try Threshold(parsing: text).holds(run) }
        #expect(try holds("p99(a.events) < 200ms"))
        #expect(try !holds("p99(a.events) < 50ms"))
        #expect(try holds("p50 <= 51ms") && !holds("max < 99ms"))
        #expect(try holds("rate(status=429) < 5%") && !holds("rate(status=429) < 1%"))
        #expect(try holds("rate(errors) == 0.03"))
        #expect(try !holds("ledger.lost == 0") && holds("ledger.lost <= 2"))
        #expect(try holds("requests.sent >= 100") && holds("counter(none) == 0"))
        #expect(try !holds("p99(b.unknown) < 1s"), "no data is not a pass")
        #expect(throws: Threshold.ParseError.self) { try Threshold(parsing: "p99(a.events) 200ms") }
        #expect(throws: Threshold.ParseError.self) { try Threshold(parsing: "p99 < 200") }
        #expect(throws: Threshold.ParseError.self) { try Threshold(parsing: "latency < 2s") }
        do {
            _ = try Threshold(parsing: "p99(a.events) <")
            Issue.record("a threshold without a limit was read")
        } catch {
            #expect(error.message.contains("has no limit after <"), "\(error.message)")
        }
    }

    @Test func junitHasOneCasePerThresholdAndFailsTheBrokenOnes() throws {
        let thresholds = try ["p99 < 1s", "ledger.lost == 0"].map { try Threshold(parsing: $0) }
        let xml = Threshold.junit(thresholds, summary: summary())
        #expect(xml.contains("tests=\"2\" failures=\"1\""))
        #expect(xml.contains("<testcase classname=\"s\" name=\"p99 &lt; 1s\"/>"))
        #expect(xml.contains("name=\"ledger.lost == 0\"><failure message=\"measured 2\"/></testcase>"))
    }
}
