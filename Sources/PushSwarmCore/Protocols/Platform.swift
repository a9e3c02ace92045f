public import PushSwarmMetrics

/// One push platform PushSwarm can simulate: its name, and how to read its part of a scenario.
///
/// Adding a platform is adding a folder in PushSwarmPlatforms with a type conforming to this, and
/// registering it; nothing in Core names a platform.
public protocol Platform: Sendable {
    /// The name scenarios use (`platforms.<name>`, `<name>.events`).
    var name: String { get }

    /// Reads the scenario's `platforms.<name>` object (nil when absent: defaults).
    func configure(_ settings: JSONReader?) throws -> any PlatformConfiguration

    /// The operation a request is from its method and path alone, as an access log records it
    /// (no body, no headers): the mock's own name where the path decides it
    /// (`<name>.events`), the endpoint's where only the body would (`<name>.mobile`). Nil
    /// when the path is not one of this platform's endpoints. `path` has no query and no
    /// `/<platform>` prefix.
    func logOperation(method: String, path: String) -> String?

    /// What a campaign of this platform leaves in an access log, for `fit`. Default: nothing
    /// `fit` can tell a campaign by.
    var campaignTrace: CampaignTrace { get }

    /// The settings (`platforms.<name>`) that make its clients retry a refused request (429) by
    /// `rule`'s back-off, their other retries and their `Retry-After` handling their own, for
    /// `fit`. Nil where its clients retry as their SDK does and a scenario cannot change it
    /// (the default).
    func settings(retryingRefusedBy rule: RetryRule) -> [(String, JSONValue)]?
}

extension Platform {
    public var campaignTrace: CampaignTrace { CampaignTrace() }

    public func settings(retryingRefusedBy rule: RetryRule) -> [(String, JSONValue)]? { nil }
}

/// What a campaign leaves in an access log (paths, no bodies), as a platform's SDK sends it:
/// the operation a tap sends (its open, which marks a campaign), the one a device reports a
/// delivered push with, and the settings a fitted scenario needs for its devices to send them.
public struct CampaignTrace: Sendable {
    /// The operation a tap on a push sends, and nothing else does.
    public var open: String?
    /// The operation a device reports a delivered (displayed) push with.
    public var delivery: String?
    /// Whether `delivery` carries other traffic too (an event endpoint): then a log tells the
    /// reports only as the excess over what the taps and the rest of the load send.
    public var deliveryIsShared: Bool
    /// The platform's settings (`platforms.<name>`) that make its devices report each delivered
    /// push; empty when they always do.
    public var reportingDeliveries: [(String, JSONValue)]
    /// The platform's mock settings a fitted scenario writes so that its mock's own limit (from
    /// its spec) does not stand in for the limit the log showed.
    public var mockWithoutOwnLimit: [(String, JSONValue)]

    public init(open: String? = nil, delivery: String? = nil, deliveryIsShared: Bool = false,
                reportingDeliveries: [(String, JSONValue)] = [], mockWithoutOwnLimit: [(String, JSONValue)] = []) {
        self.open = open
        self.delivery = delivery
        self.deliveryIsShared = deliveryIsShared
        self.reportingDeliveries = reportingDeliveries
        self.mockWithoutOwnLimit = mockWithoutOwnLimit
    }
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

    /// The platform's scenario section (`platforms.<name>`) with every setting spelt out, which
    /// `Platform.configure` reads back to an equal configuration (`ScenarioEncoder`).
    var encoded: JSONObject { get }
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
