import Testing
@testable import PushSwarmCore
import PushSwarmMetrics
import PushSwarmPlatforms

/// `--shard i/N`: each shard runs exactly the devices the whole run has at its indices, so the
/// shards' metrics merged equal the whole run's.
@Suite struct ShardTests {
    @Test func shardsCoverTheFleetOnceInWholeSourceAddresses() {
        for (devices, perSource, count) in [(10_000, 1, 4), (2_000, 20, 3), (7, 3, 4), (1, 1, 2), (1_001, 10, 7)] {
            var covered: [Int] = []
            for index in 1...count {
                let range = Shard(index: index, count: count)!.devices(of: devices, devicesPerSource: perSource)
                covered += Array(range)
                if !range.isEmpty {
                    #expect(range.lowerBound % perSource == 0, "a shard starts at an address's first device")
                }
            }
            #expect(covered == Array(0..<devices), "\(devices) devices, \(perSource) per address, \(count) shards")
        }
        #expect(Shard(parsing: "2/4") == Shard(index: 2, count: 4))
        #expect(Shard(parsing: "0/4") == nil && Shard(parsing: "5/4") == nil && Shard(parsing: "2") == nil && Shard(parsing: "a/b") == nil)
    }

    /// The whole run and its shards merged; `sockets.peakOpen` is left out of the comparison: a
    /// merge adds the shards' peaks, which can exceed the run's single peak.
    func wholeAndMerged(_ scenario: Scenario, shards: Int) async -> (whole: RunResult, merged: RunMetrics, ledgers: [String: Ledger.Totals], lost: Int) {
        let whole = await Run.simulated(scenario).run()
        var merged = RunMetrics()
        var lost = 0
        var accepted: [String: Ledger.Totals] = [:]
        for index in 1...shards {
            let part = await Run.simulated(scenario, shard: Shard(index: index, count: shards)).run()
            merged.merge(part.metrics)
            lost += part.lost
            for (platform, ledger) in part.ledgers { accepted[platform + "#\(index)"] = ledger }
        }
        return (whole, merged, accepted, lost)
    }

    func withoutPeaks(_ metrics: RunMetrics) -> RunMetrics {
        var copy = metrics
        copy[.socketsPeakOpen] = nil
        return copy
    }

    @Test(arguments: ["quickstart", "all-platforms", "retry-storm", "capacity-events"])
    func fourShardsMergedEqualTheWholeRun(name: String) async throws {
        let scenario = try loadScenario(name) { object in
            // Small enough for a test, with every scenario's campaign and workload kept.
            if name == "quickstart" { object["devices"] = 2_000 }
            if name == "all-platforms" {
                object["devices"] = 2_000
                object["duration"] = "6h"
            }
        }
        let (whole, merged, ledgers, lost) = await wholeAndMerged(scenario, shards: 4)
        #expect(whole.metrics.sent > 1_000)
        #expect(whole.metrics.operations == merged.operations, "request counts and latency histograms")
        #expect(withoutPeaks(whole.metrics) == withoutPeaks(merged), "everything else too: retries, counters, time series")
        #expect(whole.lost == lost)
        let accepted = ledgers.values.reduce(0) { $0 + $1.acceptedByOperation.values.reduce(0, +) }
        #expect(whole.ledgers.values.reduce(0) { $0 + $1.acceptedByOperation.values.reduce(0, +) } == accepted)
    }

    /// Issue 34: a shard computes only its own devices' arrivals, and the merge is the whole run.
    @Test func openAndClosedWorkloadsInThreeShardsMergedEqualTheWholeRun() async throws {
        let scenario = try PartitionTests.mixedWorkloads()
        let (whole, merged, _, lost) = await wholeAndMerged(scenario, shards: 3)
        #expect((whole.metrics.counters["workload.arrivals"] ?? 0) > 10_000)
        #expect(withoutPeaks(whole.metrics) == withoutPeaks(merged))
        #expect(whole.lost == lost)
    }

    @Test func aShardHoldsOnlyItsDevices() async throws {
        // Eight NAT addresses of 125 devices: a shard of four holds two whole addresses.
        let scenario = try loadScenario("quickstart") { object in
            object["devices"] = 1_000
            object["network"] = ["devicesPerSourceIP": 125]
        }
        let part = await Run.simulated(scenario, shard: Shard(index: 2, count: 4)).run()
        #expect(part.devices == 250)
        let whole = await Run.simulated(scenario).run()
        #expect(part.metrics.sent < whole.metrics.sent / 2)
    }
}
