import Foundation
import Testing
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmPlatforms
import PushSwarmSystem

/// A wall run waits past its end for the answers in flight, but not for ever: every exchange has
/// its own timeout, so an answer that never comes is a bug somewhere, and the run must still end,
/// report and say so ("never a hang"). On a clock the test moves: a transport that answers nothing.
@Suite struct DrainBoundTests {
    @Test(.timeLimit(.minutes(1)))
    func aRunWhoseAnswersNeverComeEndsAtTheDrainBoundAndSaysSo() async throws {
        let scenario = try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array("""
            {"name": "silent", "seed": 3, "duration": "5s", "devices": 50, "clock": "wall", "warmUp": {"enabled": false},
             "groups": [{"name": "load", "platform": "smartapppush", "os": "android", "workload": {"model": "open", "rate": "10/s"}}],
             "behaviour": {"newInstallShare": 0, "tokenRotationsPerDay": 0}}
            """.utf8))
        let thread = PartitionThread(name: "silent")
        let local = scenario.partitionCopy()
        let mocks = MockFleet(scenario: local)
        let transport = SilentTransport(inner: SimulatedTransport(scenario: local, mocks: mocks, devices: 0..<50), thread: thread)
        let setup = Run.PartitionSetup(executor: thread, transport: transport, mocks: mocks, devices: 0..<50)
        let result = await Run(scenario: scenario, partitions: [setup], ownedThreads: [thread]).run()
        #expect(result.metrics.sent > 10, "sent \(result.metrics.sent)")
        #expect(result.metrics.counters["run.drainCutOff"] == 1)
        #expect(result.metrics.operations.values.reduce(0) { $0 + $1.completed } == 0, "nothing answered")
        #expect(transport.ended == Instant.start + .seconds(5) + .minutes(2), "it waited the drain's bound past its end: \(transport.ended)")
        #expect(transport.wakeUps < 1_000, "past the end it sleeps until the bound or the next report, not every turn: \(transport.wakeUps) wake-ups")
    }

    /// A transport outlives its partitions: a wall run's warm-up and the run proper share it, and
    /// the warm-up's sockets and connections still end after its partitions are released. What
    /// arrives then is dropped; it reached the released partition before (CI's nightly run
    /// crashed reading it while the run proper made its devices).
    @Test func whatArrivesAfterARunEndsReachesNoReleasedPartition() async throws {
        let scenario = try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array("""
            {"name": "late", "seed": 3, "duration": "1s", "devices": 5, "clock": "wall", "warmUp": {"enabled": false},
             "groups": [{"name": "idle", "platform": "smartapppush", "os": "android"}],
             "behaviour": {"newInstallShare": 0, "tokenRotationsPerDay": 0}}
            """.utf8))
        let thread = PartitionThread(name: "late")
        let local = scenario.partitionCopy()
        let mocks = MockFleet(scenario: local)
        let transport = SilentTransport(inner: SimulatedTransport(scenario: local, mocks: mocks, devices: 0..<5), thread: thread)
        do {
            let setup = Run.PartitionSetup(executor: thread, transport: transport, mocks: mocks, devices: 0..<5)
            _ = await Run(scenario: scenario, partitions: [setup], ownedThreads: [thread]).run()
        }
        #expect(transport.handlers == 2, "the run's handler, then the one that drops what comes after it")
        let late = Arrival(device: 0, payload: .connection(.closed(.serverClosed)), at: transport.ended)
        let handler = try #require(transport.handler)
        handler(late)
    }

    /// The last answer, arriving past the end, ends a run while its wake-up for the drain's bound
    /// is still to come: the run withdraws it. Left with the event loop, it once ran on a
    /// released partition (CI's test run crashed reading it) and here it would have moved the
    /// clock to the bound, two minutes past the end.
    @Test func theWakeUpStillToComeWhenARunEndsIsWithdrawn() async throws {
        let scenario = try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array("""
            {"name": "withdrawn", "seed": 3, "duration": "2s", "devices": 100, "clock": "wall", "warmUp": {"enabled": false},
             "groups": [{"name": "load", "platform": "smartapppush", "os": "android", "workload": {"model": "open", "rate": "50/s"}}],
             "behaviour": {"newInstallShare": 0, "tokenRotationsPerDay": 0},
             "platforms": {"smartapppush": {"mock": {"rateLimitPerSecond": 1000000, "latency": {"constant": "300ms"}}}}}
            """.utf8))
        let thread = PartitionThread(name: "withdrawn")
        let local = scenario.partitionCopy()
        let mocks = MockFleet(scenario: local)
        let transport = SteppedTransport(inner: SimulatedTransport(scenario: local, mocks: mocks, devices: 0..<100), thread: thread, stallEachSecond: .zero)
        let setup = Run.PartitionSetup(executor: thread, transport: transport, mocks: mocks, devices: 0..<100)
        let result = await Run(scenario: scenario, partitions: [setup], ownedThreads: [thread]).run()
        #expect(result.metrics.operations.values.reduce(0) { $0 + $1.completed } == result.metrics.sent, "every request answered")
        #expect(result.metrics.inFlightAtEnd == 0)
        let end = Instant.start + .seconds(2)
        #expect(transport.now > end && transport.now <= end + .milliseconds(300), "it ended with the last answer, not at the bound: \(transport.now)")
    }
}

/// A live transport on a clock the test moves, answering nothing: each wake-up jumps the clock
/// to its time, on the partition's thread.
private final class SilentTransport: ForwardingTransport, LiveTransport, @unchecked Sendable {
    private let thread: PartitionThread
    private var now = Instant.start
    private var pending: (at: Instant, tick: () -> Void)?
    private var driving = false
    private(set) var wakeUps = 0
    var ended: Instant { now }

    init(inner: SimulatedTransport, thread: PartitionThread) {
        self.thread = thread
        super.init(inner: inner)
    }

    override var currentTime: Instant { now }

    private(set) var handler: ((Arrival) -> Void)?
    private(set) var handlers = 0

    func onArrival(_ handler: @escaping (Arrival) -> Void) {
        self.handler = handler
        handlers += 1
    }

    func stopWaking() { pending = nil }

    func wake(at instant: Instant, _ tick: @escaping () -> Void) {
        pending = (instant, tick)
        guard !driving else { return }
        driving = true
        thread.execute { [self] in
            while let (at, tick) = pending {
                pending = nil
                wakeUps += 1
                now = max(now, at)
                tick()
            }
            driving = false
        }
    }

    /// Sent, and never answered.
    override func send(_ outgoing: OutgoingRequest, device: Int, platform: String, source: SourceAddress, at now: Instant) -> (ExchangeCompletion, Instant)? {
        nil
    }

    override func takeArrived() -> [Arrival] { [] }
}
