import Foundation
import Testing
@testable import PushSwarmCore
@testable import PushSwarmPlatforms
import PushSwarmMetrics

/// Whole runs in simulated time, through the same decoder and platform the CLI uses.
@Suite struct SimulatedRunTests {
    static func scenario(_ text: String) throws -> Scenario {
        try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array(text.utf8))
    }

    static func small(devices: Int = 400, duration: String = "6h", mock: String = "{}", network: String = "{}", extra: String = "") -> String {
        """
        {"name": "t", "seed": 3, "duration": "\(duration)", "devices": \(devices), "network": \(network),
         "behaviour": {"sessionsPerDay": 6},
         "groups": [{"name": "a", "share": 0.6, "platform": "smartapppush", "os": "android", "client": {"profile": "fcm"}},
                    {"name": "i", "share": 0.4, "platform": "smartapppush", "os": "ios"}],
         "campaigns": [{"name": "c", "at": "2h", "audience": 1, "tapRate": 0.3, "timeToOpen": "2m"}],
         "platforms": {"smartapppush": {"mock": \(mock)}}\(extra)}
        """
    }

    static func run(_ text: String, seed: UInt64? = nil) async throws -> Summary {
        var scenario = try scenario(text)
        if let seed { scenario.seed = seed }
        return await Run.simulated(scenario).run().summary(runID: "test", version: "test")
    }

    static func comparable(_ summary: Summary) -> String {
        guard case .object(var object) = summary.json else { return "" }
        for key in Summary.wallClockKeys { object[key] = nil }
        return JSONWriter.text(of: .object(object))
    }

    @Test func theSameSeedGivesTheSameSummaryByteForByteAndAnotherSeedDoesNot() async throws {
        let first = try await Self.run(Self.small())
        let second = try await Self.run(Self.small())
        let other = try await Self.run(Self.small(), seed: 4)
        #expect(Self.comparable(first) == Self.comparable(second))
        #expect(Self.comparable(first) != Self.comparable(other))
        #expect(first.metrics.sent > 1_000)
    }

    /// `network.rtt` is each exchange's round trip (issue 62): through a network of 150 ms every
    /// request's answer comes 150 ms later than the service's own 1 ms, on kept-alive connections
    /// too, and a retry's delay starts from it.
    @Test func aRoundTripDelaysEveryRequestsAnswer() async throws {
        let near = try await Self.run(Self.small(mock: #"{"latency": "1ms"}"#))
        let far = try await Self.run(Self.small(mock: #"{"latency": "1ms"}"#, network: #"{"rtt": "150ms"}"#))
        let operation = SmartAppPushMessages.Operation.events
        let nearLatency = try #require(near.metrics.operations[operation]?.latency)
        let farLatency = try #require(far.metrics.operations[operation]?.latency)
        #expect(nearLatency.totalCount > 100 && farLatency.totalCount > 100)
        // Microseconds.
        let nearMedian = try #require(nearLatency.value(atQuantile: 0.5)), farMedian = try #require(farLatency.value(atQuantile: 0.5))
        #expect(nearMedian < 10_000, "\(nearMedian)")
        #expect(farMedian >= 150_000 && farMedian < 160_000, "\(farMedian)")
    }

    @Test func withoutFaultsNothingIsLostOrDuplicatedAndEveryRequestIsAccountedFor() async throws {
        let summary = try await Self.run(Self.small())
        let metrics = summary.metrics
        #expect(metrics.sent == metrics.byStatus.values.reduce(0, +) + metrics.transportErrors + metrics.timeouts)
        #expect(summary.lost == 0)
        #expect(summary.ledgerDuplicates == 0)
        #expect(summary.ledgerAccepted == metrics.byStatus[200])
        #expect(metrics.droppedByReason.isEmpty)
        #expect((metrics.counters["notifications.tapped"] ?? 0) > 0)
        #expect((metrics.operations[SmartAppPushMessages.Operation.pushesOpened]?.byStatus[200] ?? 0) == metrics.counters["notifications.tapped"])
    }

    @Test func injected503sAreRetriedAndEveryDroppedEventIsCountedUnderAReason() async throws {
        let summary = try await Self.run(Self.small(mock: #"{"http503Rate": 0.3}"#))
        let metrics = summary.metrics
        let status503 = metrics.byStatus[503] ?? 0
        #expect(status503 > 100)
        #expect(metrics.retries > 0)
        let drops = metrics.droppedByReason["http503RetriesExhausted"] ?? 0
        #expect(drops > 0)
        // Every request ends as accepted, dropped, or still queued at the end: none vanishes.
        let accepted = metrics.byStatus[200] ?? 0
        #expect(metrics.sent == accepted + status503)
        let logical = metrics.sent - metrics.retries
        #expect(logical == accepted + drops + UInt64(summary.pendingAtEnd))
        #expect(summary.lost == 0)
    }

    @Test func networkErrorsAreRetriedOnTheSpecsScheduleAndCountedAsTransportErrors() async throws {
        let summary = try await Self.run(Self.small(network: #"{"errorRate": 0.2}"#))
        let metrics = summary.metrics
        #expect(metrics.transportErrors > 100)
        #expect(metrics.transportErrorsByReason["networkError"] == metrics.transportErrors)
        #expect(metrics.retriesByAttempt[1] ?? 0 > 0)
        // "1s, 2s, 4s, max 60s": no back-off below one second or above a minute.
        #expect(metrics.backoffDelays.minimum >= 1_000_000)
        #expect(metrics.backoffDelays.maximum <= 60_000_000)
        #expect(metrics.droppedByReason.isEmpty, "network errors keep requests queued, never drop them")
        #expect(summary.lost == 0)
    }

    @Test func aServiceThatLosesAcceptedEventsShowsUpAsLost() async throws {
        let summary = try await Self.run(Self.small(mock: #"{"loseAcceptedRate": 0.05}"#))
        let accepted = summary.metrics.byStatus[200] ?? 0
        #expect(summary.lost > 0)
        #expect(Double(summary.lost) > Double(accepted) * 0.02 && Double(summary.lost) < Double(accepted) * 0.08)
    }

    @Test func timeoutsAreCountedAndTheirRetriesAreDuplicatesInTheLedger() async throws {
        let text = Self.small(mock: #"{"latency": {"lognormal": {"median": "2s", "sigma": 1.5}}}"#, extra: "")
            .replacingOccurrences(of: #""mock": {"latency""#, with: #""requestTimeout": "5s", "mock": {"latency""#)
        let summary = try await Self.run(text)
        #expect(summary.metrics.timeouts > 0)
        #expect(summary.ledgerDuplicates > 0, "the service accepted the first try; the retry repeats its fingerprint")
        #expect(summary.lost == 0)
    }

    @Test func theNATBurstScenarioHits429sButTheLedgerNeverExceedsTenPerSecondFromTheIP() async throws {
        let text = try String(contentsOfFile: Self.repositoryRoot + "/Scenarios/smartapppush-nat-burst.json", encoding: .utf8)
        let summary = try await Self.run(text)
        #expect(summary.rateLimited > 100)
        #expect((summary.metrics.droppedByReason["http429RetriesExhausted"] ?? 0) > 0)
        for (operation, entry) in summary.ledger ?? [:] {
            #expect(entry.peakAcceptedPerSecondPerSource <= 10, "\(operation)")
        }
        #expect(summary.ledger?[SmartAppPushMessages.Operation.events]?.peakAcceptedPerSecondPerSource == 10)
    }

    @Test func aDeviceIsTheSameWhateverTheFleetSize() throws {
        let small = Fleet(scenario: try Self.scenario(Self.small(devices: 10)))
        let large = Fleet(scenario: try Self.scenario(Self.small(devices: 10_000)))
        for index in [0, 3, 9] {
            let a = small.profile(at: index)
            let b = large.profile(at: index)
            #expect(a.groupIndex == b.groupIndex && a.locale == b.locale && a.installAt == b.installAt && a.sessionsPerDay == b.sessionsPerDay)
        }
    }

    @Test func aBrokenIntegrationIsRejectedByTheServiceAndCountedNotRetried() async throws {
        let text = Self.small().replacingOccurrences(of: #""os": "ios"}"#, with: #""os": "ios", "client": {"omitFields": ["timezone"]}}"#)
        let summary = try await Self.run(text)
        let dropped = summary.metrics.droppedByReason["http400"] ?? 0
        #expect(dropped > 0)
        #expect(summary.metrics.byStatus[400] == dropped)
    }

    static var repositoryRoot: String {
        "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
    }
}
