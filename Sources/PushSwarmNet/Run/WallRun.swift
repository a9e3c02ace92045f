import Foundation
public import PushSwarmCore
import PushSwarmMetrics
import PushSwarmSystem
import Synchronization

/// A scenario run in wall time over real sockets, against `targets` or, when there are none, the
/// built-in mocks started in-process on a loopback port. The devices and the run loop are the
/// same as in simulated time (`Run`); only the transport differs.
public final class WallRun: @unchecked Sendable {
    public struct Options: Sendable {
        /// Each platform's base URL; empty: start the built-in mocks on loopback.
        public var targets: [String: TargetURL]
        /// Accept any certificate (a self-signed staging host).
        public var insecure: Bool
        /// Extra trusted roots for https targets.
        public var caFile: String?
        /// Run only this part of the fleet.
        public var shard: Shard?
        /// Partitions (event loops) to run on; nil: one per core.
        public var partitions: Int?
        /// Where to receive pushes a real service sends to the devices' tokens, FCM-shaped
        /// (`PushReceiver`); nil: none.
        public var pushListen: SocketAddress?
        /// Against a real target: run this warm-up first (`WarmUpSettings`); nil: none. Ignored
        /// against the built-in mocks, which know the installs from before the run already.
        public var warmUp: WarmUpSettings?

        public init(
            targets: [String: TargetURL] = [:], insecure: Bool = false, caFile: String? = nil, shard: Shard? = nil,
            partitions: Int? = nil
        ) {
            self.targets = targets
            self.insecure = insecure
            self.caFile = caFile
            self.shard = shard
            self.partitions = partitions
        }
    }

    /// How many sockets a run may hold at once, against how many files the process may open.
    public struct SocketPlan: Sendable, Equatable {
        /// HTTP client connections if every device held one at once (at most
        /// `maxConnectionsPerSource` per NAT address).
        public var clientConnections: Int
        /// WebSockets if every device of a platform that keeps one open (Smartico) held it at once.
        public var webSockets: Int
        /// Sockets per connection: 2 when the mock runs in this process (both ends are ours).
        public var socketsPerConnection: Int
        public var fileLimit: Int
        /// Files kept for everything else (listeners, epoll, eventfds, reports, the toolchain,
        /// and the runtime's own: libdispatch stops the process when it cannot open one).
        public var reserved: Int
        /// True when each install holds its own connections (`perDevice`): sharing NAT addresses
        /// then saves none.
        public var perInstall = false

        public var needed: Int { (clientConnections + webSockets) * socketsPerConnection + reserved }
        public var fits: Bool { needed <= fileLimit }
        private var connectionsAllowed: Int { max(2, (fileLimit - reserved) / socketsPerConnection) }
        /// WebSockets allowed open at once: all of them when they fit, else what is left once HTTP
        /// has a share (at least a quarter, as much as it could use).
        public var webSocketBudget: Int {
            guard webSockets > 0 else { return 0 }
            let forHTTP = min(clientConnections, max(1, connectionsAllowed / 4))
            return max(1, min(webSockets, connectionsAllowed - forHTTP))
        }
        /// HTTP client connections allowed open at once.
        public var connectionBudget: Int { max(1, connectionsAllowed - webSocketBudget) }

        /// What to tell the user when the worst case does not fit.
        public var explanation: String {
            let ends = socketsPerConnection == 2 ? " × 2 ends (the mock runs in this process)" : ""
            let sockets = webSockets > 0 ? " and \(webSockets) WebSockets" : ""
            let socketCap = webSockets > 0 ? ", WebSockets at \(webSocketBudget) (a device over it counts a `socketBudget` error and retries as its SDK does)" : ""
            return "this run could hold \(clientConnections) HTTP connections\(sockets) at once\(ends) + \(reserved) other files = \(needed) files; "
                + "this process may open \(fileLimit) (ulimit -n). HTTP connections are capped at \(connectionBudget)\(socketCap): a device "
                + "over the HTTP cap waits for a connection, and that wait counts in its latency. To avoid the caps, run fewer devices, "
                + (perInstall
                    ? "split the run over processes (--workers N on a machine with the cores, --shard I/N on as many machines), "
                    : "share NAT addresses (network.devicesPerSourceIP), ")
                + "or start `pushswarm mock` as its own process and pass --target."
        }
    }

    /// The scenario as run: its calendar is set when the measured part starts.
    public private(set) var scenario: Scenario
    public let shard: Shard?
    public let plan: SocketPlan
    /// One transport per partition, each on its own event loop.
    public let transports: [NetworkTransport]
    public let mockServer: MockServer?
    /// `--push-listen`'s endpoint, when asked for.
    public let pushReceiver: PushReceiver?
    public let client: HTTPClient
    private let group: EventLoopGroup
    private let clock: WallClock
    private let setups: [Run.PartitionSetup]
    private let warmUp: WarmUpSettings?
    /// The engine running now (the warm-up's, then the run's), for Ctrl-C.
    private let current = Mutex<(engine: Run?, interrupted: Bool)>((nil, false))

    /// Sets everything up: starts the in-process mock if there are no targets, makes the TLS
    /// context (a bad CA file is an error here, before any request).
    public init(scenario: Scenario, options: Options) throws(NetError) {
        let clock = WallClock()
        self.clock = clock
        // A wall run happens now: its calendar is the real one (events stamped today), unless the
        // scenario or `--start` set one. Either way a `Retry-After` date is read against today.
        var scenario = scenario
        // Unique per run: two runs of one seed must not send identical events to a real service
        // (SmartAppPush, for one, ignores a repeated event). Only identifiers change, not draws.
        scenario.identifierNonce = UInt64.random(in: 1...UInt64.max)
        Self.setCalendar(of: &scenario, at: clock)
        self.scenario = scenario
        shard = options.shard
        warmUp = options.targets.isEmpty ? nil : options.warmUp
        let devices = options.shard?.devices(of: scenario.devices, devicesPerSource: scenario.network.devicesPerSourceAddress) ?? 0..<scenario.devices
        let count = Run.partitionCount(for: scenario, requested: options.partitions, usesBuiltInMocks: options.targets.isEmpty).count
        let ranges = Run.ranges(scenario, shard: options.shard, partitions: count)
        let group = EventLoopGroup(threads: ranges.count, name: "pushswarm-partition")
        self.group = group
        var targets = options.targets
        var fleets: [MockFleet?] = Array(repeating: nil, count: ranges.count)
        if targets.isEmpty {
            // Each partition's share of the mocks: the state of its own source addresses. A
            // connection from an address is served on its partition's loop (`MockServer`), by
            // mocks made from that partition's own copy of the scenario (`String.partitionCopy`).
            let made = ranges.indices.map { MockFleet(scenario: scenario.partitionCopy(), partition: $0) }
            fleets = made
            let perSource = max(1, scenario.network.devicesPerSourceAddress)
            let firstSources = ranges.map { UInt32($0.lowerBound / perSource) }
            let server = MockServer(mocks: made, group: group, clock: clock) { source in
                // The last partition whose first address is at or below this one.
                var owner = 0
                for (number, first) in firstSources.enumerated() where first <= source.index { owner = number }
                return owner
            }
            try server.start(at: SocketAddress(ip: .loopback, port: 0))
            mockServer = server
            for platform in scenario.platforms.keys {
                targets[platform] = TargetURL("http://127.0.0.1:\(server.port)/\(platform)")
            }
        } else {
            mockServer = nil
        }
        let ownConnections = scenario.network.connections == .perDevice
        plan = Self.plan(for: scenario, devices: devices, inProcessMock: mockServer != nil)
        let tls = targets.values.contains { $0.origin.isTLS } ? try TLSContext(insecure: options.insecure, caFile: options.caFile) : nil
        client = HTTPClient(group: group, configuration: HTTPClient.Configuration(
            maxConnectionsPerPool: scenario.network.connectionsPerSourceAddress, tls: tls, maxOpenConnections: plan.connectionBudget,
            httpVersions: scenario.network.http2
        ))
        let bindSources = NetworkTransport.bindsSourceAddresses(targets)
        let socketBudget = SocketBudget(limit: plan.webSocketBudget)
        var transports: [NetworkTransport] = []
        var setups: [Run.PartitionSetup] = []
        // One fleet answers every partition's devices' groups (it was made once per partition).
        let ownConnectionsFleet = ownConnections ? Fleet(scenario: scenario) : nil
        for (number, range) in ranges.enumerated() {
            let loop = group.loops[number]
            let transport = NetworkTransport(
                client: client, loop: loop, targets: targets, clock: clock, bindSources: bindSources, socketBudget: socketBudget
            )
            transport.maxWebSocketMessageBytes = scenario.network.maxWebSocketMessageBytes
            if let fleet = ownConnectionsFleet {
                transport.ownConnections = (range.lowerBound, range.map { scenario.groups[fleet.groupIndex(at: $0)].os })
            }
            if let server = mockServer { transport.forwardServiceMessages { messages, _ in server.push(messages) } }
            transports.append(transport)
            setups.append(Run.PartitionSetup(executor: loop, transport: transport, mocks: fleets[number], devices: range))
        }
        self.transports = transports
        if let address = options.pushListen {
            let receiver = PushReceiver(group: group, transports: transports)
            try receiver.start(at: address)
            pushReceiver = receiver
        } else {
            pushReceiver = nil
        }
        self.setups = setups
    }

    /// Each transport error reason seen in any partition, with the first detail
    /// (`certificate verification failed: self-signed certificate`); read after the run.
    public var errorDetails: [String: String] {
        transports.reduce(into: [:]) { details, transport in details.merge(transport.errorDetails) { first, _ in first } }
    }

    /// The socket plan for a scenario's `devices` (a shard's, or all): installs with connections
    /// of their own (`perDevice`) hold about one each at a time (an SDK sends one request after
    /// another); the budget still caps them at the file limit.
    public static func plan(for scenario: Scenario, devices: Range<Int>, inProcessMock: Bool) -> SocketPlan {
        let ownConnections = scenario.network.connections == .perDevice
        var plan = plan(
            devices: devices.count, devicesPerSource: ownConnections ? 1 : scenario.network.devicesPerSourceAddress, inProcessMock: inProcessMock,
            maxConnectionsPerSource: ownConnections ? 1 : scenario.network.connectionsPerSourceAddress,
            webSockets: webSocketDevices(scenario, among: devices)
        )
        plan.perInstall = ownConnections
        return plan
    }

    public static func plan(for scenario: Scenario, devices: Int, inProcessMock: Bool) -> SocketPlan {
        plan(for: scenario, devices: 0..<devices, inProcessMock: inProcessMock)
    }

    /// The socket plan for a fleet: devices share a pool per NAT address
    /// (`index / devicesPerSourceIP`), each pool holds at most `maxConnectionsPerSource`.
    public static func plan(
        devices: Int, devicesPerSource perSource: Int, inProcessMock: Bool, maxConnectionsPerSource: Int, webSockets: Int = 0,
        fileLimit: Int = FileLimit.raiseAndRead()
    ) -> SocketPlan {
        let fullSources = devices / perSource
        let remainder = devices % perSource
        let connections = fullSources * min(perSource, maxConnectionsPerSource) + min(remainder, maxConnectionsPerSource)
        return SocketPlan(
            clientConnections: connections, webSockets: webSockets, socketsPerConnection: inProcessMock ? 2 : 1, fileLimit: fileLimit, reserved: 256
        )
    }

    /// Devices of groups whose client keeps a WebSocket open, among the fleet indices the run builds.
    public static func webSocketDevices(_ scenario: Scenario, among devices: Range<Int>? = nil) -> Int {
        let holding = scenario.groups.map(\.client.holdsWebSocket)
        guard holding.contains(true) else { return 0 }
        let fleet = Fleet(scenario: scenario)
        return (devices ?? 0..<scenario.devices).reduce(0) { $0 + (holding[fleet.groupIndex(at: $1)] ? 1 : 0) }
    }

    /// The warm-up, if any (`onWarmUp` is told before it starts), then the run.
    public func run(onProgress: (@Sendable (RunProgress) -> Void)? = nil, onWarmUp: ((WarmUpSettings) -> Void)? = nil) async -> RunResult {
        var memories: [Int: String]?
        var held: [Int: [ExternalPush]] = [:]
        var warmedUp: Summary.WarmUp?
        if let warmUp {
            onWarmUp?(warmUp)
            let result = await run(Run(scenario: scenario, shard: shard, partitions: setups, warmUp: warmUp))
            memories = result.warmUpMemories
            held = result.heldPushes
            warmedUp = Summary.WarmUp(
                installs: result.metrics[.warmUpInstalls] ?? 0, seconds: result.wallSeconds,
                complete: result.duration < warmUp.maxDuration && result.pendingAtEnd == 0 && (result.metrics[.runInterrupted] ?? 0) == 0,
                metrics: result.metrics, pendingAtEnd: result.pendingAtEnd
            )
            // The settle: until `settle` has passed since the warm-up's last 429, so that the run
            // starts with the service's limiter drained rather than shaped by the warm-up.
            let ticks = result.metrics.timeline.ticks
            if let last = ticks.lastIndex(where: { $0.rateLimited > 0 }) {
                let lastSeconds = Double(last + 1) * Double(result.metrics.timeline.tickMicroseconds) / 1_000_000
                let wait = min(warmUp.settle.seconds, max(0, lastSeconds + warmUp.settle.seconds - result.wallSeconds))
                if wait > 0 { try? await Task.sleep(nanoseconds: UInt64(wait * 1_000_000_000)) }
                warmedUp?.settleSeconds = wait
            }
            // The run proper starts now, on its own timeline and (unless set) today's calendar.
            clock.restart()
            Self.setCalendar(of: &scenario, at: clock)
        }
        let engine = Run(scenario: scenario, shard: shard, partitions: setups, memories: memories, heldPushes: held)
        // Instant zero once the devices are made: the first second measures the service.
        engine.beforeStart = { [clock] _ in clock.restart(keepingCalendar: true) }
        // Connections open now is the client's gauge, not a count the partitions add up.
        engine.onProgress = onProgress.map { report in
            { @Sendable [client] progress in
                var progress = progress
                progress.openConnections = client.openConnections
                report(progress)
            }
        }
        let before = await loopStatistics()
        var result = await run(engine)
        let loops = await loopStatistics()
        // The run's own waits, not the warm-up's: how the loops woke (Benchmarks/ divides them by
        // the requests, beside wrk's own).
        result.metrics.increment(.eventLoopWaits, by: loops.waits &- before.waits)
        result.metrics.increment(.eventLoopEvents, by: loops.events &- before.events)
        result.metrics.increment(.eventLoopEmptyWaits, by: loops.emptyWaits &- before.emptyWaits)
        result.warmUp = warmedUp
        client.shutdown()
        mockServer?.stop()
        pushReceiver?.stop()
        group.shutdown()
        return result
    }

    /// Every loop's waits and events so far, added up.
    private func loopStatistics() async -> EventLoop.Statistics {
        var sum = EventLoop.Statistics()
        for loop in group.loops { sum = sum + (await loop.statistics()) }
        return sum
    }

    /// A wall run's calendar: the real one from the clock's instant zero, unless the scenario or
    /// `--start` set one, which then keeps its offset from the real time (for reading HTTP-dates).
    private static func setCalendar(of scenario: inout Scenario, at clock: WallClock) {
        if scenario.startIsExplicit {
            scenario.realClockOffsetSeconds = clock.originUnixSeconds - scenario.startUnixSeconds
        } else {
            scenario.startUnixSeconds = clock.originUnixSeconds
        }
    }

    private func run(_ engine: Run) async -> RunResult {
        let interrupted = current.withLock { current in
            current.engine = engine
            return current.interrupted
        }
        if interrupted { engine.interrupt() }
        return await engine.run()
    }

    /// Stops starting requests (in the warm-up, and in the run after it); what is in flight
    /// finishes and the run reports.
    public func interrupt() {
        let engine = current.withLock { current in
            current.interrupted = true
            return current.engine
        }
        engine?.interrupt()
    }
}
