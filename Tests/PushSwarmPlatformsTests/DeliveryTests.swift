import Foundation
import Testing
@testable import PushSwarmCore
@testable import PushSwarmPlatforms
import PushSwarmMetrics

/// How campaign pushes reach devices: the provider's hold for unreachable devices and its time to
/// live (data-only messages against force-stopped apps: `DeviceLifecycleTests`).
@Suite struct DeliveryTests {
    /// The Meiro scenario's campaign at 1 h to every consenting install, with delivery changed by `behaviour`.
    func run(behaviour: JSONObject, ttl: String) async throws -> RunResult {
        let scenario = try loadScenario("meiro") { object in
            object["devices"] = 600
            object["behaviour"] = .object(behaviour)
            object["campaigns"] = [["name": "c", "at": "1h", "audience": 1, "ttl": .string(ttl), "deliveryDelay": "5s"]]
        }
        return await Run.simulated(scenario).run()
    }

    @Test func anUnreachableDeviceGetsThePushWhenItReconnectsWithinTheTimeToLive() async throws {
        // Research notes: "~15% of devices not connected to FCM at any moment; FCM keeps messages up to 28 days."
        let held = try await run(behaviour: ["newInstallShare": 0, "unreachableShare": 1, "offlineDuration": "2h"], ttl: "3h").metrics.counters
        let reachable = (held["notifications.sent"] ?? 0) - (held["notifications.undeliverable"] ?? 0)
        #expect(reachable > 100)
        #expect(held["notifications.heldWhileUnreachable"] == reachable)
        #expect(held["notifications.delivered"] == reachable, "delivered 2 h late, within the run")
        let expired = try await run(behaviour: ["newInstallShare": 0, "unreachableShare": 1, "offlineDuration": "2h"], ttl: "1h").metrics.counters
        #expect(expired["notifications.expired"] == reachable)
        #expect(expired["notifications.delivered"] == nil, "offline longer than the time to live: never delivered")
        let online = try await run(behaviour: ["newInstallShare": 0, "unreachableShare": 0], ttl: "1h").metrics.counters
        #expect(online["notifications.heldWhileUnreachable"] == nil && online["notifications.delivered"] == reachable)
    }
}

/// `Scenarios/all-platforms.json`: one fleet, five protocols, five campaigns, one report.
@Suite struct AllPlatformsTests {
    @Test func everyPlatformIsServedAndEveryCampaignDelivered() async throws {
        let result = await Run.simulated(try loadScenario("all-platforms") { $0["devices"] = 2_000 }).run()
        let summary = try JSONParser.parse(result.summary(runID: "test", version: "test").jsonText)
        #expect(summary["ledger"]?["lost"] == .number(0))
        #expect(summary["requests"]?["byStatus"]?["400"] == nil, "no validation failures")
        #expect(summary["requests"]?["transportErrors"] == .number(0))
        let operations = summary["operations"]?.objectValue?.keys ?? []
        for platform in ["smartapppush", "meiro", "pushexpress", "smartico", "flocktory"] {
            #expect(operations.contains { $0.hasPrefix("\(platform).") }, "\(platform) sent requests")
            #expect(result.ledgers[platform].map { $0.accepted > 0 } == true, "\(platform)'s ledger accepted items")
        }
        #expect(result.metrics.counters["campaigns.launched"] == 5)
        #expect((result.metrics.counters["notifications.displayed"] ?? 0) > 0)
        // Each platform's own reaction to its pushes reached its service.
        for operation in ["smartapppush.pushes_opened", "pushexpress.notification_event", "smartico.engagement_impression", "flocktory.push_show"] {
            #expect((result.metrics.operations[operation]?.byStatus.values.reduce(0, +) ?? 0) > 0, "\(operation)")
        }
    }
}

/// `Scenarios/retry-storm.json` against `retry-storm-full-jitter.json`: the same herd of taps on
/// a per-IP limit, retried in lockstep or spread.
@Suite struct RetryStormTests {
    @Test func jitterCutsRetryAmplificationAndTheTimeToRecover() async throws {
        let lockstep = await Run.simulated(try loadScenario("retry-storm")).run()
        let spread = await Run.simulated(try loadScenario("retry-storm-full-jitter")).run()
        #expect(lockstep.metrics.retries > 500, "the limit answered a storm of 429s")
        #expect(spread.metrics.retryAmplification < lockstep.metrics.retryAmplification)
        let slow = try #require(lockstep.metrics.durations["rateLimitRecovery"]?.value(atQuantile: 0.99))
        let fast = try #require(spread.metrics.durations["rateLimitRecovery"]?.value(atQuantile: 0.99))
        #expect(fast * 2 < slow, "p99 from the first 429 to acceptance: \(fast) µs with jitter, \(slow) µs without")
        #expect((lockstep.metrics.droppedByReason["http429RetriesExhausted"] ?? 0) > (spread.metrics.droppedByReason["http429RetriesExhausted"] ?? 0))
        #expect(lockstep.lost == 0 && spread.lost == 0)
    }
}

/// Faults injected by the mock, as a whole run's clients see them in simulated time.
@Suite struct FaultRunTests {
    @Test func everyInjectedFaultIsCountedUnderItsReason() async throws {
        let result = await Run.simulated(try loadScenario("meiro") { object in
            object["devices"] = 1_000
            object["behaviour"] = ["newInstallShare": 0.3]
            object["platforms"] = ["meiro": ["mock": ["faults": [
                ["kind": "reset", "rate": 0.1], ["kind": "truncated", "rate": 0.1], ["kind": "malformed", "rate": 0.1],
                ["kind": "http5xx", "status": 504, "rate": 0.1], ["kind": "stall", "every": "10m", "for": "30s"],
            ]]]]
        }).run()
        let errors = result.metrics.transportErrorsByReason
        for reason in ["connectionReset", "closedBeforeResponse", "malformedResponse"] {
            #expect(errors[reason] ?? 0 > 0, "\(reason)")
        }
        #expect(result.metrics.byStatus[504] ?? 0 > 0)
        // Every request is accounted for, and what the clients saw accepted is in the ledger.
        let completed = result.metrics.operations.values.reduce(0) { $0 + $1.completed }
        #expect(completed == result.metrics.sent)
        #expect(result.lost == 0)
    }
}
