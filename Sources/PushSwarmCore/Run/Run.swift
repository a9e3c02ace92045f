import Foundation
import PushSwarmMetrics
public import PushSwarmSystem
import Synchronization

/// Runs a scenario as P shared-nothing partitions, one per core by default, each on its own
/// thread: whole NAT addresses' worth of devices, its own scheduler, its own share of the built-in
/// mocks, its own transport (`Partition`). They run concurrently and meet only at the end, where
/// their results merge exactly as `pushswarm merge` merges shards. The same code runs both clocks;
/// only the executor and transport differ: a `PartitionThread` and `SimulatedTransport` in simulated
/// time, an event loop and a socket transport in wall time.
///
/// Every draw about a device comes from that device's own streams, so in simulated time the same
/// scenario and seed give the same result for any partition count. State a built-in mock shares
/// across addresses (a limit keyed globally, by endpoint, header or body field) cannot be split
/// that way: such a scenario runs as one partition (`partitionNote` says why).
public final class Run: @unchecked Sendable {
    /// One partition's parts, made by the caller for its clock.
    public struct PartitionSetup {
        public var executor: any PartitionExecutor
        public var transport: any RunTransport
        public var mocks: MockFleet?
        /// Fleet indices: whole source addresses, contiguous.
        public var devices: Range<Int>

        public init(executor: any PartitionExecutor, transport: any RunTransport, mocks: MockFleet?, devices: Range<Int>) {
            self.executor = executor
            self.transport = transport
            self.mocks = mocks
            self.devices = devices
        }
    }

    private let scenario: Scenario
    private let shard: Shard?
    private let setups: [PartitionSetup]
    private let threads: [PartitionThread]
    private let live = Mutex<[(Partition, any LiveTransport)]>([])
    private let interruptRequested = Atomic<Bool>(false)
    /// Set: this run is the warm-up before a measured run (`WarmUpSettings`).
    private let warmUp: WarmUpSettings?
    /// What the warm-up learnt, by fleet index, for the measured run's devices.
    private let memories: [Int: String]?
    /// Pushes the warm-up kept, by partition number.
    private let heldPushes: [Int: [ExternalPush]]

    /// Called about once a second of wall time with the run's progress (the live line, the
    /// metrics endpoint), from whichever partition's thread reports it, one call at a time; set
    /// before `run()`.
    public var onProgress: (@Sendable (RunProgress) -> Void)?

    /// Wall time: called once every partition has made and started its devices and set up its
    /// workloads, before any partition's clock-bound work (`Partition.prepare`), with the number
    /// of devices made; the caller starts the run's clock there (`WallClock.restart`). Set before
    /// `run()`.
    public var beforeStart: (@Sendable (_ devicesMade: Int) -> Void)?

    /// `setups`: one per partition. `threads`: executors the run owns and stops at its end.
    /// `warmUp`: run the warm-up before a run instead of the run; `memories`: what a warm-up
    /// learnt (`RunResult.warmUpMemories`), for this run's devices.
    public init(
        scenario: Scenario, shard: Shard? = nil, partitions setups: [PartitionSetup], ownedThreads threads: [PartitionThread] = [],
        warmUp: WarmUpSettings? = nil, memories: [Int: String]? = nil, heldPushes: [Int: [ExternalPush]] = [:]
    ) {
        self.scenario = scenario
        self.warmUp = warmUp
        self.memories = memories
        self.heldPushes = heldPushes
        self.shard = shard
        self.setups = setups
        self.threads = threads
    }

    /// A simulated-time run against the built-in mocks, in `partitions` partitions (nil: one per
    /// core, or one when the mocks share state across addresses).
    public static func simulated(_ scenario: Scenario, shard: Shard? = nil, partitions: Int? = nil) -> Run {
        let count = partitionCount(for: scenario, requested: partitions).count
        let ranges = Self.ranges(scenario, shard: shard, partitions: count)
        var threads: [PartitionThread] = []
        var setups: [PartitionSetup] = []
        for (number, range) in ranges.enumerated() {
            let thread = PartitionThread(name: "pushswarm-partition-\(number)")
            // Each partition's mocks from its own copy of the scenario: see `String.partitionCopy`.
            let local = scenario.partitionCopy()
            let mocks = MockFleet(scenario: local)
            threads.append(thread)
            setups.append(PartitionSetup(executor: thread, transport: SimulatedTransport(scenario: local, mocks: mocks, devices: range), mocks: mocks, devices: range))
        }
        return Run(scenario: scenario, shard: shard, partitions: setups, ownedThreads: threads)
    }

    /// How many partitions a run of `scenario` gets: `requested`, else one per core; one when a
    /// built-in mock it uses keeps state across addresses (then `note` says so). Against a real
    /// target (`usesBuiltInMocks` false) the mocks' settings do not count: no mock runs.
    public static func partitionCount(for scenario: Scenario, requested: Int?, usesBuiltInMocks: Bool = true) -> (count: Int, note: String?) {
        let wanted = max(1, requested ?? ProcessInfo.processInfo.activeProcessorCount)
        if wanted > 1, usesBuiltInMocks, let shared = sharedMockState(scenario) {
            return (1, "one partition: \(shared) is one state for every address, which partitions cannot split")
        }
        return (wanted, nil)
    }

    /// What a scenario's built-in mocks keep across source addresses, if anything.
    public static func sharedMockState(_ scenario: Scenario) -> String? {
        sharedMockState(platforms: scenario.platforms)
    }

    public static func sharedMockState(platforms: [String: any PlatformConfiguration]) -> String? {
        for name in platforms.keys.sorted() {
            guard let configuration = platforms[name] else { continue }
            if configuration.mockBehaviour.edge.isLimited { return "\(name)'s edge (its handshakes a second and connections held)" }
            for rule in configuration.mockBehaviour.rateLimits {
                switch rule.key {
                case .sourceIP, .sourceIPAndEndpoint: continue
                case .global: return "\(name)'s rate limit keyed globally"
                case .endpoint: return "\(name)'s rate limit keyed by endpoint"
                case .header(let header): return "\(name)'s rate limit keyed by header \(header)"
                case .bodyField(let field): return "\(name)'s rate limit keyed by body field \(field)"
                }
            }
        }
        return nil
    }

    /// The devices of each partition: the shard's (or the fleet's) cut into `partitions` runs of
    /// whole source addresses, as shards are cut. Empty parts are left out.
    public static func ranges(_ scenario: Scenario, shard: Shard?, partitions: Int) -> [Range<Int>] {
        let perSource = max(1, scenario.network.devicesPerSourceAddress)
        let whole = shard?.devices(of: scenario.devices, devicesPerSource: perSource) ?? 0..<scenario.devices
        let sources = (whole.count + perSource - 1) / perSource
        let parts = max(1, partitions)
        var ranges: [Range<Int>] = []
        for part in 0..<parts {
            let first = whole.lowerBound + sources * part / parts * perSource
            let last = whole.lowerBound + sources * (part + 1) / parts * perSource
            let range = min(whole.upperBound, first)..<min(whole.upperBound, last)
            if !range.isEmpty { ranges.append(range) }
        }
        // An empty shard still runs, as one empty partition (it reports zero devices).
        return ranges.isEmpty ? [whole] : ranges
    }

    /// Runs every partition to its end and merges their results.
    public func run() async -> RunResult {
        let wallStart = Date()
        let cpuStart = clock()
        let board = onProgress.map { report in
            ProgressBoard(partitions: setups.count, duration: scenario.duration, devices: setups.reduce(0) { $0 + $1.devices.count }, report: report)
        }
        let positions = GroupPositions.census(scenario, ranges: setups.map(\.devices))
        let processDevices = (setups.map(\.devices.lowerBound).min() ?? 0)..<(setups.map(\.devices.upperBound).max() ?? 0)
        let partitions = setups.enumerated().map { number, setup in
            // Each partition makes its devices from its own copy of the scenario, so that no
            // object they retain on every event is another partition's (`String.partitionCopy`).
            let local = scenario.partitionCopy()
            return Partition(
                number: number, scenario: local, fleet: Fleet(scenario: local), executor: setup.executor, transport: setup.transport, mocks: setup.mocks,
                devices: setup.devices, positions: positions[number], processDevices: processDevices, countsRunEvents: number == 0 && (shard?.index ?? 1) == 1, progress: warmUp == nil ? board : nil,
                warmUp: warmUp, memories: memories, heldPushes: heldPushes[number] ?? []
            )
        }
        if setups.contains(where: { $0.transport is any LiveTransport }) {
            let made = await withTaskGroup(of: Int.self) { group in
                for partition in partitions {
                    group.addTask {
                        await withCheckedContinuation { (made: CheckedContinuation<Int, Never>) in
                            partition.executor.execute { made.resume(returning: partition.prepare()) }
                        }
                    }
                }
                return await group.reduce(0, +)
            }
            beforeStart?(made)
        }
        let results = await withTaskGroup(of: PartitionResult.self) { group in
            for partition in partitions {
                group.addTask { await self.run(partition) }
            }
            var results: [PartitionResult] = []
            for await result in group { results.append(result) }
            return results
        }
        board?.finish()
        for thread in threads { thread.stop() }
        var result = merge(results)
        result.wallSeconds = Date().timeIntervalSince(wallStart)
        if scenario.clock == .wall {
            let cpuSeconds = Double(clock() - cpuStart) / Double(CLOCKS_PER_SEC)
            if result.wallSeconds > 0 { result.cpuBusy = cpuSeconds / result.wallSeconds / Double(ProcessInfo.processInfo.activeProcessorCount) }
        }
        return result
    }

    /// Runs one partition on its executor; the only hand-offs are its start and its result.
    private func run(_ partition: Partition) async -> PartitionResult {
        await withCheckedContinuation { (continuation: CheckedContinuation<PartitionResult, Never>) in
            if let live = partition.transport as? any LiveTransport {
                self.live.withLock { $0.append((partition, live)) }
                partition.executor.execute {
                    partition.startWall(live) { continuation.resume(returning: $0) }
                    if self.interruptRequested.load(ordering: .acquiring) { partition.interrupt(live) }
                }
            } else {
                Task { continuation.resume(returning: await PartitionJob(on: partition.executor).runSimulated(partition)) }
            }
        }
    }

    /// Wall time: stops starting requests in every partition (Ctrl-C); those in flight finish and
    /// the run reports.
    public func interrupt() {
        interruptRequested.store(true, ordering: .releasing)
        for (partition, live) in live.withLock({ $0 }) {
            partition.executor.execute { partition.interrupt(live) }
        }
    }

    private func merge(_ results: [PartitionResult]) -> RunResult {
        var metrics = RunMetrics()
        var ledgers: [String: [Ledger]] = [:]
        var lost = 0
        var pending = 0
        var devices = 0
        var changes: [Int64] = []
        var end = Instant.start
        var memories: [Int: String] = [:]
        var held: [Int: [ExternalPush]] = [:]
        for part in results {
            memories.merge(part.memories) { first, _ in first }
            if !part.heldPushes.isEmpty { held[part.number] = part.heldPushes }
            metrics.merge(part.metrics)
            for (platform, ledger) in part.ledgers { ledgers[platform, default: []].append(ledger) }
            lost += part.lost
            pending += part.pending
            devices += part.devices
            changes += part.socketChanges
            end = max(end, part.end)
        }
        let interval = metrics.timeline.intervalMicroseconds
        metrics.timeline.fit(to: Int(max(1, ((end - .start).microseconds + interval - 1) / interval)))
        if let peak = Self.peakOpen(changes) { metrics[.socketsPeakOpen] = UInt64(peak) }
        var result = RunResult(
            scenario: scenario.name, seed: scenario.seed, clock: scenario.clock, devices: devices,
            duration: end - .start, wallSeconds: 0, metrics: metrics,
            ledgers: ledgers.mapValues(Ledger.totals), lost: lost, pendingAtEnd: pending
        )
        result.warmUpMemories = memories
        result.heldPushes = held
        return result
    }

    /// The most sockets open at once, from every partition's opens and closes
    /// (`microseconds * 2 + 1` for a close): within one microsecond, opens count before closes.
    /// Nil when no socket opened.
    static func peakOpen(_ changes: [Int64]) -> Int? {
        guard !changes.isEmpty else { return nil }
        var open = 0
        var peak = 0
        for change in changes.sorted() {
            open += change & 1 == 0 ? 1 : -1
            peak = max(peak, open)
        }
        return peak > 0 ? peak : nil
    }
}

/// A partition's simulated run as a job of its executor (an actor on it), not a bare closure:
/// while it runs, the executor is the current one, so each device's `assumeIsolated` is answered
/// by one comparison. From a closure the runtime asked the executor, for every event, whether it
/// is the main one (a dynamic cast) and then `isIsolatingCurrentContext`.
private actor PartitionJob {
    private nonisolated let executor: ActorExecutor

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.unowned }

    init(on executor: any PartitionExecutor) {
        self.executor = ActorExecutor(executor)
    }

    func runSimulated(_ partition: Partition) -> PartitionResult {
        partition.runSimulated()
    }
}
