import Synchronization

/// Every platform's built-in mock for one partition's source addresses, behind one mutex: the
/// same object answers its partition's simulated transport in-process and, in wall-clock runs,
/// the loopback server's event loops for requests from those addresses (`MockServer` picks the
/// fleet by source address); it launches campaigns and holds the ledgers in both. A run has one
/// fleet per partition, and reports merge their ledgers.
///
/// - Important: one mutex for all of a partition's platforms keeps the services' decisions (a
///   rate limiter's window, a fault's coin) for one address in one order, whatever the loop
///   that reads its socket. It is held for microseconds per request, and each partition's
///   fleet has its own, so the lock is not shared across partitions.
public final class MockFleet: Sendable {
    private struct State: Sendable {
        /// In an array so that each host is mutated in place (not copied out of a dictionary).
        var hosts: [MockHost]
        var nextSession: UInt64 = 0
        /// Draws for callers without a stream of their own (the loopback server), one stream per
        /// source address.
        var sourceRandom: [SourceAddress: SeededRandom] = [:]
        let seed: UInt64

        mutating func withSourceRandom<Result>(_ source: SourceAddress, _ body: (inout MockHost, inout SeededRandom) -> Result, host: Int) -> Result {
            var random = sourceRandom[source] ?? SeededRandom(seed: seed, stream: .mock, index: UInt64(source.index))
            defer { sourceRandom[source] = random }
            return body(&hosts[host], &random)
        }
    }

    /// Platform names, sorted; index `i` is `hosts[i]`.
    public let platforms: [String]
    /// The HTTP/2 streams a connection may have open at the mocks' edge (`mock.edge.maxConcurrentStreams`,
    /// the least any platform asks for: they share one server); nil: the server's default.
    public let maxConcurrentStreams: Int?
    private let state: Mutex<State>

    /// `partition`: the number of the partition whose addresses these mocks serve; its session
    /// numbers are its own (`partition << 40` up), so that sessions of several partitions' mocks
    /// behind one server stay distinct.
    public convenience init(scenario: Scenario, partition: Int = 0) {
        self.init(
            platforms: scenario.platforms, seed: scenario.seed, partition: partition, calendarStartUnixSeconds: scenario.startUnixSeconds,
            identifierNonce: scenario.identifierNonce
        )
    }

    /// Mocks for `platforms` as configured, with randomness from `seed`; instant zero is
    /// `calendarStartUnixSeconds` on the calendar (for answers that tell the time).
    /// `identifierNonce`: mixed into the identifiers the services make (`Scenario.identifierNonce`).
    public init(
        platforms configurations: [String: any PlatformConfiguration], seed: UInt64, partition: Int = 0, calendarStartUnixSeconds: Int64 = 0,
        identifierNonce: UInt64 = 0
    ) {
        platforms = configurations.keys.sorted()
        maxConcurrentStreams = configurations.values.compactMap { $0.mockBehaviour.edge.maxConcurrentStreams }.min()
        var hosts: [MockHost] = []
        for name in platforms {
            guard let configuration = configurations[name] else { continue }
            var host = MockHost(service: configuration.makeMock(), behaviour: configuration.mockBehaviour, seed: seed, identifierNonce: identifierNonce)
            host.setCalendar(startUnixSeconds: calendarStartUnixSeconds)
            hosts.append(host)
        }
        state = Mutex(State(hosts: hosts, nextSession: UInt64(partition) << 40, seed: seed))
    }

    public func index(of platform: String) -> Int? { platforms.firstIndex(of: platform) }

    /// The platform a request path is for: `/<platform>/…` first (the prefix is removed), then the
    /// service that serves the path (as a WebSocket endpoint when `socket`), then the only
    /// platform if there is one.
    public func route(_ path: String, socket: Bool = false) -> (platform: Int, path: String)? {
        for (index, name) in platforms.enumerated() {
            let prefix = "/\(name)"
            if path == prefix || path.hasPrefix(prefix + "/") || path.hasPrefix(prefix + "?") {
                let rest = String(path.dropFirst(prefix.count))
                return (index, rest.hasPrefix("/") ? rest : "/" + rest)
            }
        }
        let bare = path.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? path
        let served = state.withLock { state in
            state.hosts.indices.first { socket ? state.hosts[$0].service.servesSocket(path: bare) : state.hosts[$0].service.serves(path: bare) }
        }
        if let served { return (served, path) }
        return platforms.count == 1 ? (0, path) : nil
    }

    /// Answers a request for platform number `platform` and says how long the answer takes.
    /// Latency and faults are drawn from the source address's stream.
    public func exchange(platform: Int, _ request: Request, from source: SourceAddress, at now: Instant) -> MockHost.Answer {
        state.withLock { $0.withSourceRandom(source, { $0.exchange(request, from: source, at: now, random: &$1) }, host: platform) }
    }

    /// The same, drawing latency and faults from the caller's `random`: the simulated run passes
    /// the device's own stream, so a device's answers do not depend on which other devices share
    /// the mock (a shard's run answers each device as the whole fleet's run does).
    public func exchange(platform: Int, _ request: Request, from source: SourceAddress, at now: Instant, random: inout SeededRandom) -> MockHost.Answer {
        state.withLock { $0.hosts[platform].exchange(request, from: source, at: now, random: &random) }
    }

    public func knowDevice(platform: Int, _ device: KnownDevice) {
        state.withLock { $0.hosts[platform].knowDevice(device) }
    }

    /// A campaign's pushes for the push provider, and its messages on open sessions.
    public func launchCampaign(platform: Int, _ campaign: Campaign, at now: Instant) -> (pushes: [PushMessage], sessionMessages: [SessionMessage]) {
        state.withLock { $0.hosts[platform].launchCampaign(campaign, at: now) }
    }

    /// Opens a WebSocket session on platform number `platform`: its number (unique in the fleet)
    /// and the service's answer.
    public func openSocket(platform: Int, path: String, from source: SourceAddress, at now: Instant) -> (session: UInt64, answer: MockHost.SocketAnswer) {
        state.withLock { state in
            state.nextSession += 1
            let session = state.nextSession
            return (session, state.withSourceRandom(source, { $0.openSocket(session: session, path: path, from: source, at: now, random: &$1) }, host: platform))
        }
    }

    public func openSocket(platform: Int, path: String, from source: SourceAddress, at now: Instant, random: inout SeededRandom) -> (session: UInt64, answer: MockHost.SocketAnswer) {
        state.withLock { state in
            state.nextSession += 1
            let session = state.nextSession
            return (session, state.hosts[platform].openSocket(session: session, path: path, from: source, at: now, random: &random))
        }
    }

    public func socketMessage(platform: Int, session: UInt64, text: String, from source: SourceAddress, at now: Instant) -> MockHost.SocketAnswer {
        state.withLock { $0.withSourceRandom(source, { $0.socketMessage(session: session, text: text, from: source, at: now, random: &$1) }, host: platform) }
    }

    public func socketMessage(platform: Int, session: UInt64, text: String, from source: SourceAddress, at now: Instant, random: inout SeededRandom) -> MockHost.SocketAnswer {
        state.withLock { $0.hosts[platform].socketMessage(session: session, text: text, from: source, at: now, random: &random) }
    }

    public func socketTimer(platform: Int, session: UInt64, at now: Instant) -> SocketReply {
        state.withLock { $0.hosts[platform].socketTimer(session: session, at: now) }
    }

    public func socketClosed(platform: Int, session: UInt64, at now: Instant) {
        state.withLock { $0.hosts[platform].socketClosed(session: session, at: now) }
    }

    /// A device's confirmation of `key`'s item: whether any platform's ledger holds it (if none
    /// does, the item was lost). See `Ledger.confirm`.
    public func confirm(_ key: LedgerKey, at now: Instant) -> Bool {
        state.withLock { state in
            for index in state.hosts.indices where state.hosts[index].confirm(key, at: now) { return true }
            return false
        }
    }

    /// Each platform's ledger now, by platform name.
    public var ledgers: [String: Ledger] {
        state.withLock { state in
            Dictionary(uniqueKeysWithValues: zip(platforms, state.hosts.map(\.ledger)))
        }
    }
}
