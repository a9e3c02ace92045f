import Foundation
public import PushSwarmCore

/// A scenario run in wall time over real sockets, against `targets` or, when there are none, the
/// built-in mocks started in-process on a loopback port. The devices and the run loop are the
/// same as in simulated time (`Run`); only the transport differs.
public final class WallRun {
    public struct Options: Sendable {
        /// Each platform's base URL; empty: start the built-in mocks on loopback.
        public var targets: [String: TargetURL]
        /// Accept any certificate (a self-signed staging host).
        public var insecure: Bool
        /// Extra trusted roots for https targets.
        public var caFile: String?
        /// Connections a NAT address may hold to one origin at once.
        public var maxConnectionsPerSource: Int

        public init(targets: [String: TargetURL] = [:], insecure: Bool = false, caFile: String? = nil, maxConnectionsPerSource: Int = 64) {
            self.targets = targets
            self.insecure = insecure
            self.caFile = caFile
            self.maxConnectionsPerSource = maxConnectionsPerSource
        }
    }

    /// How many sockets a run may hold at once, against how many files the process may open.
    public struct SocketPlan: Sendable, Equatable {
        /// Client connections if every device held one at once (at most `maxConnectionsPerSource`
        /// per NAT address).
        public var clientConnections: Int
        /// Sockets per connection: 2 when the mock runs in this process (both ends are ours).
        public var socketsPerConnection: Int
        public var fileLimit: Int
        /// Files kept for everything else (listeners, epoll, eventfds, reports, the toolchain).
        public var reserved: Int

        public var needed: Int { clientConnections * socketsPerConnection + reserved }
        /// Client connections allowed open at once.
        public var connectionBudget: Int { max(1, (fileLimit - reserved) / socketsPerConnection) }
        public var fits: Bool { needed <= fileLimit }

        /// What to tell the user when the worst case does not fit.
        public var explanation: String {
            let ends = socketsPerConnection == 2 ? " × 2 ends (the mock runs in this process)" : ""
            return "this run could hold \(clientConnections) connections at once\(ends) + \(reserved) other files = \(needed) files; "
                + "this process may open \(fileLimit) (ulimit -n). Connections are capped at \(connectionBudget): a device "
                + "over the cap waits for one, and that wait counts in its latency. To avoid the cap, run fewer devices, "
                + "share NAT addresses (network.devicesPerSourceIP), or start `pushswarm mock` as its own process and pass --target."
        }
    }

    public let scenario: Scenario
    public let plan: SocketPlan
    public let transport: NetworkTransport
    public let mockServer: MockServer?
    private let group: EventLoopGroup

    /// Sets everything up: starts the in-process mock if there are no targets, makes the TLS
    /// context (a bad CA file is an error here, before any request).
    public init(scenario: Scenario, options: Options) throws(NetError) {
        self.scenario = scenario
        let group = EventLoopGroup()
        self.group = group
        let clock = WallClock()
        var targets = options.targets
        if targets.isEmpty {
            let server = MockServer(mocks: MockFleet(scenario: scenario), group: group, clock: clock)
            try server.start(at: SocketAddress(ip: .loopback, port: 0))
            mockServer = server
            for platform in scenario.platforms.keys {
                targets[platform] = TargetURL("http://127.0.0.1:\(server.port)/\(platform)")
            }
        } else {
            mockServer = nil
        }
        plan = Self.plan(
            devices: scenario.devices, devicesPerSource: scenario.network.devicesPerSourceAddress, inProcessMock: mockServer != nil,
            maxConnectionsPerSource: options.maxConnectionsPerSource
        )
        let tls = targets.values.contains { $0.origin.isTLS } ? try TLSContext(insecure: options.insecure, caFile: options.caFile) : nil
        let client = HTTPClient(group: group, configuration: HTTPClient.Configuration(
            maxConnectionsPerPool: options.maxConnectionsPerSource, tls: tls, maxOpenConnections: plan.connectionBudget
        ))
        transport = NetworkTransport(client: client, targets: targets, clock: clock)
    }

    /// The socket plan for a fleet: devices share a pool per NAT address
    /// (`index / devicesPerSourceIP`), each pool holds at most `maxConnectionsPerSource`.
    public static func plan(
        devices: Int, devicesPerSource perSource: Int, inProcessMock: Bool, maxConnectionsPerSource: Int,
        fileLimit: Int = FileLimit.raiseAndRead()
    ) -> SocketPlan {
        let fullSources = devices / perSource
        let remainder = devices % perSource
        let connections = fullSources * min(perSource, maxConnectionsPerSource) + min(remainder, maxConnectionsPerSource)
        return SocketPlan(
            clientConnections: connections, socketsPerConnection: inProcessMock ? 2 : 1, fileLimit: fileLimit, reserved: 128
        )
    }

    public func run() async -> RunResult {
        let result = await Run(scenario: scenario, transport: transport, mocks: mockServer?.mocks).run()
        transport.client.shutdown()
        mockServer?.stop()
        group.shutdown()
        return result
    }

    /// Stops starting requests; the run finishes those in flight and reports.
    public func interrupt() { transport.interrupt() }
}
