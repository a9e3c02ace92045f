/// The server side of one platform: validates what devices send, rate-limits, and accepts.
///
/// - Important: a value type with no I/O, `(state, request, now) -> response`. The same code answers
///   in-process in simulated time and behind the loopback server in wall-clock runs. Generic
///   concerns (latency, injected faults, the ledger) belong to `MockHost`, which wraps it.
public protocol MockService: Sendable {
    /// Answers one request from `source` at `now`.
    mutating func handle(_ request: Request, from source: SourceAddress, at now: Instant) -> MockReply

    /// Whether `path` (without a query) is one of this service's endpoints; the loopback server
    /// routes requests by it when several platforms share one address.
    func serves(path: String) -> Bool

    /// Learns about an install that existed before the run started, as the real service would have.
    mutating func knowDevice(_ device: KnownDevice)

    /// Chooses the recipients of a campaign and builds each one's push payload.
    mutating func launchCampaign(_ campaign: Campaign, at now: Instant, random: inout SeededRandom) -> [PushMessage]
}

/// A mock's answer: the response, and what it accepted into its ledger, if anything.
public struct MockReply: Sendable {
    public var response: Response
    public var accepted: LedgerKey?
    /// The operation the request was for, as the service classified it by method and path.
    public var operation: String

    public init(response: Response, accepted: LedgerKey? = nil, operation: String) {
        self.response = response
        self.accepted = accepted
        self.operation = operation
    }
}

/// An install the service knew before the run: its push address and consent.
public struct KnownDevice: Sendable {
    public var pushToken: String
    public var userID: String?
    public var os: OperatingSystem
    public var pushPermissionGranted: Bool

    public init(pushToken: String, userID: String?, os: OperatingSystem, pushPermissionGranted: Bool) {
        self.pushToken = pushToken
        self.userID = userID
        self.os = os
        self.pushPermissionGranted = pushPermissionGranted
    }
}

/// A push the service hands to the push provider for one device.
public struct PushMessage: Sendable {
    public var pushToken: String
    /// The platform's own data in the push (`tracking_token` for SmartAppPush).
    public var data: [String: String]

    public init(pushToken: String, data: [String: String]) {
        self.pushToken = pushToken
        self.data = data
    }
}
