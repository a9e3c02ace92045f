/// One push platform PushSwarm can simulate: its name, and how to read its part of a scenario.
///
/// Adding a platform is adding a folder in PushSwarmPlatforms with a type conforming to this, and
/// registering it; nothing in Core names a platform.
public protocol Platform: Sendable {
    /// The name scenarios use (`smartapppush`).
    var name: String { get }

    /// Reads the scenario's `platforms.<name>` object (nil when absent: defaults).
    func configure(_ settings: JSONReader?) throws -> any PlatformConfiguration

    /// The operation a request is from its method and path alone, as an access log records it
    /// (no body, no headers): the mock's own name where the path decides it
    /// (`smartapppush.events`), the endpoint's where only the body would (`meiro.mobile`). Nil
    /// when the path is not one of this platform's endpoints. `path` has no query and no
    /// `/<platform>` prefix.
    func logOperation(method: String, path: String) -> String?
}

/// A platform as one scenario configured it.
public protocol PlatformConfiguration: Sendable {
    /// Reads a device group's `client` object (nil when absent) for a group of `os` devices.
    func clientProfile(_ options: JSONReader?, os: OperatingSystem) throws -> any ClientProfile

    /// Latency and faults of the built-in mock (generic across platforms).
    var mockBehaviour: MockBehaviour { get }

    /// A fresh mock service for one run.
    func makeMock() -> any MockService

    /// The requests a second one source address may send before the service refuses, as the
    /// scenario describes the service; nil: none known. A warm-up paces each address below it
    /// (`WarmUpSettings.perAddressRate`). Default: the mock's per-address `rateLimits`.
    var perAddressRequestsPerSecond: Double? { get }

    /// An equal configuration for one partition, with storage of its own for what its mock and
    /// its client profiles reference on every request: see `String.partitionCopy`.
    func partitionCopy() -> any PlatformConfiguration
}

extension PlatformConfiguration {
    public var perAddressRequestsPerSecond: Double? {
        mockBehaviour.rateLimits.compactMap(\.perAddressRequestsPerSecond).min()
    }
}

extension RateLimitRule {
    /// What the rule admits a second from one source address, steadily; nil when it does not
    /// count per address.
    public var perAddressRequestsPerSecond: Double? {
        guard key == .sourceIP || key == .sourceIPAndEndpoint, paths.isEmpty else { return nil }
        switch algorithm {
        case .tokenBucket(let perSecond, _), .leakyBucket(let perSecond, _, _): return perSecond
        case .fixedWindow(let limit, let window), .slidingWindow(let limit, let window):
            return window.microseconds > 0 ? Double(limit) / window.seconds : nil
        }
    }
}
