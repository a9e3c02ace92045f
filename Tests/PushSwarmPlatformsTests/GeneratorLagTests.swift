import Foundation
import Testing
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmPlatforms
import PushSwarmSystem
import Synchronization

/// Generator lag is how late a wall run's loop reached what it had scheduled: the run's own
/// saturation, which `capacity`'s verdict, `compare`'s exit 3, "held" in the benchmarks and the
/// Prometheus histogram all read. Only the loop's own items are samples: an answer is handled as
/// it arrives and has no due time.
@Suite struct GeneratorLagTests {
    /// An open workload of 200 events/s for 20 s on a loop stalled for the first 50 ms of every
    /// second (a garbage collection, a noisy neighbour), on a clock the test moves: 5 % of the
    /// arrivals fall in a stall and wait up to 50 ms, so the top 1 % of the loop's items waited
    /// 40 ms or more, and p99 says so. Counting each answer as lag 0 (half the samples) once put
    /// p99 at about 30 ms.
    @Test func aLoopStalledFiftyMillisecondsEachSecondShowsItInLagP99() async throws {
        let scenario = try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array("""
            {"name": "stalled-loop", "seed": 3, "duration": "20s", "devices": 2000, "clock": "wall",
             "network": {"devicesPerSourceIP": 100}, "warmUp": {"enabled": false},
             "groups": [{"name": "load", "platform": "smartapppush", "os": "android", "workload": {"model": "open", "rate": "200/s"}}],
             "behaviour": {"newInstallShare": 0, "tokenRotationsPerDay": 0},
             "platforms": {"smartapppush": {"mock": {"rateLimitPerSecond": 1000000, "latency": {"constant": "2ms"}}}}}
            """.utf8))
        let thread = PartitionThread(name: "stalled-loop")
        let local = scenario.partitionCopy()
        let mocks = MockFleet(scenario: local)
        let devices = 0..<scenario.devices
        let transport = SteppedTransport(
            inner: SimulatedTransport(scenario: local, mocks: mocks, devices: devices), thread: thread, stallEachSecond: .milliseconds(50)
        )
        let setup = Run.PartitionSetup(executor: thread, transport: transport, mocks: mocks, devices: devices)
        let result = await Run(scenario: scenario, partitions: [setup], ownedThreads: [thread]).run()
        let lag = try #require(result.metrics.durations["generatorLag"])
        let arrivals = result.metrics.counters["workload.arrivals"] ?? 0
        #expect(arrivals > 3_500, "arrivals: \(arrivals)")
        // One sample per item the loop scheduled (arrivals and the devices' own), none per answer.
        #expect(lag.totalCount < UInt64(Double(result.metrics.sent) * 1.5), "lag samples \(lag.totalCount) for \(result.metrics.sent) requests")
        let p99 = lag.value(atQuantile: 0.99) ?? 0
        #expect(p99 >= 38_000 && p99 <= 50_500, "lag p99 \(p99) µs")
        #expect((lag.value(atQuantile: 0.5) ?? 1) == 0, "most items are on time")
    }

    /// A wall run makes and starts every device, and sets up its arrival streams, before its
    /// clock starts: `beforeStart` (where a wall run starts its clock) hears of all of them made
    /// while no partition has yet sent anything or asked to be woken. Making 10,000 devices after
    /// instant zero once held the first arrivals back by 40 ms, the first second's p99.
    @Test func devicesAreMadeBeforeTheRunsClockStarts() async throws {
        let scenario = try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array("""
            {"name": "made-first", "seed": 4, "duration": "2s", "devices": 3000, "clock": "wall",
             "network": {"devicesPerSourceIP": 100}, "warmUp": {"enabled": false},
             "groups": [{"name": "load", "platform": "smartapppush", "os": "android", "workload": {"model": "open", "rate": "100/s"}}],
             "behaviour": {"newInstallShare": 0, "tokenRotationsPerDay": 0}}
            """.utf8))
        var setups: [Run.PartitionSetup] = []
        var threads: [PartitionThread] = []
        var transports: [SteppedTransport] = []
        for (number, devices) in Run.ranges(scenario, shard: nil, partitions: 2).enumerated() {
            let thread = PartitionThread(name: "made-first-\(number)")
            let local = scenario.partitionCopy()
            let mocks = MockFleet(scenario: local)
            let transport = SteppedTransport(inner: SimulatedTransport(scenario: local, mocks: mocks, devices: devices), thread: thread, stallEachSecond: .zero)
            threads.append(thread)
            transports.append(transport)
            setups.append(Run.PartitionSetup(executor: thread, transport: transport, mocks: mocks, devices: devices))
        }
        let run = Run(scenario: scenario, partitions: setups, ownedThreads: threads)
        let seen = Mutex<[(made: Int, touched: Bool)]>([])
        run.beforeStart = { [transports] made in
            seen.withLock { $0.append((made, transports.contains(where: \.touched))) }
        }
        let result = await run.run()
        let calls = seen.withLock { $0 }
        try #require(calls.count == 1, "beforeStart once, not \(calls.count) times")
        #expect(calls[0].made == 3_000, "every device made before the clock starts")
        #expect(!calls[0].touched, "nothing sent and no wake-up asked before the clock starts")
        #expect((result.metrics.counters["workload.arrivals"] ?? 0) > 100, "and the run ran")
    }
}
