import Synchronization

/// Every platform's built-in mock for one run, behind one lock: the same object answers the
/// simulated transport in-process and the loopback server's event loops in wall-clock runs, and
/// launches campaigns and holds the ledgers in both.
///
/// - Important: one mutex for all platforms keeps the services' decisions (a rate limiter's
///   window, a fault's coin) in one order. It is held for microseconds per request; a mock
///   saturating one lock is far beyond what a single loopback process sends.
public final class MockFleet: Sendable {
    private struct State: Sendable {
        /// In an array so that each host is mutated in place (not copied out of a dictionary).
        var hosts: [MockHost]
    }

    /// Platform names, sorted; index `i` is `hosts[i]`.
    public let platforms: [String]
    private let state: Mutex<State>

    public convenience init(scenario: Scenario) {
        self.init(platforms: scenario.platforms, seed: scenario.seed)
    }

    /// Mocks for `platforms` as configured, with randomness from `seed`.
    public init(platforms configurations: [String: any PlatformConfiguration], seed: UInt64) {
        platforms = configurations.keys.sorted()
        var hosts: [MockHost] = []
        for (index, name) in platforms.enumerated() {
            guard let configuration = configurations[name] else { continue }
            hosts.append(MockHost(
                service: configuration.makeMock(), behaviour: configuration.mockBehaviour,
                random: SeededRandom(seed: seed, stream: .mock, index: UInt64(index))
            ))
        }
        state = Mutex(State(hosts: hosts))
    }

    public func index(of platform: String) -> Int? { platforms.firstIndex(of: platform) }

    /// The platform a request path is for: `/<platform>/…` first (the prefix is removed), then the
    /// service that serves the path, then the only platform if there is one.
    public func route(_ path: String) -> (platform: Int, path: String)? {
        for (index, name) in platforms.enumerated() {
            let prefix = "/\(name)"
            if path == prefix || path.hasPrefix(prefix + "/") || path.hasPrefix(prefix + "?") {
                let rest = String(path.dropFirst(prefix.count))
                return (index, rest.hasPrefix("/") ? rest : "/" + rest)
            }
        }
        let served = state.withLock { state in state.hosts.indices.first { state.hosts[$0].service.serves(path: path) } }
        if let served { return (served, path) }
        return platforms.count == 1 ? (0, path) : nil
    }

    /// Answers a request for platform number `platform` and says how long the answer takes.
    public func exchange(platform: Int, _ request: Request, from source: SourceAddress, at now: Instant) -> MockHost.Answer {
        state.withLock { $0.hosts[platform].exchange(request, from: source, at: now) }
    }

    public func knowDevice(platform: Int, _ device: KnownDevice) {
        state.withLock { $0.hosts[platform].knowDevice(device) }
    }

    public func launchCampaign(platform: Int, _ campaign: Campaign, at now: Instant) -> [PushMessage] {
        state.withLock { $0.hosts[platform].launchCampaign(campaign, at: now) }
    }

    /// Each platform's ledger now, by platform name.
    public var ledgers: [String: Ledger] {
        state.withLock { state in
            Dictionary(uniqueKeysWithValues: zip(platforms, state.hosts.map(\.ledger)))
        }
    }
}
