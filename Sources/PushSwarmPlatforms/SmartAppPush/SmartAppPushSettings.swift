public import PushSwarmCore

/// A scenario's `platforms.smartapppush` section: the app's credentials as devices send them, the
/// client's retry table, and the built-in mock's settings.
public struct SmartAppPushSettings: Sendable {
    public var tenantID = "demo-tenant"
    public var apiKey = "sap_demo_api_key"
    /// The app the api_key belongs to (part of the fingerprint).
    public var appID = "demo-app"
    public var requestTimeout = TimeSpan.seconds(10)
    public var queueCapacity = 1_000
    /// Whether apps send a `push_received` event when a push is displayed (many do not).
    public var sendsPushReceived = false
    public var retryTable = SmartAppPushSettings.specRetryTable
    public var mock = SmartAppPushMockSettings()

    public init() {}

    /// The spec's "Retry Strategy" table. It has no row for 429 (the limit table says clients
    /// "will only hit them if you accidentally send in a tight loop"); PushSwarm treats a 429 as the
    /// spec treats a 503, "Server overloaded. Retry with exponential backoff (1s, 2s, 4s). Max 3
    /// retries", and a scenario can change that row.
    public static let specRetryTable = RetryTable(
        networkError: RetryRule(initialDelay: .seconds(1), maximumDelay: .seconds(60), maximumRetries: 5, whenExhausted: .keepForNextLaunch),
        serverError: RetryRule(initialDelay: .seconds(1), maximumDelay: .seconds(4), maximumRetries: 3, whenExhausted: .drop),
        rateLimited: RetryRule(initialDelay: .seconds(1), maximumDelay: .seconds(4), maximumRetries: 3, whenExhausted: .drop)
    )
}

/// The built-in SmartAppPush mock's settings (`platforms.smartapppush.mock`).
public struct SmartAppPushMockSettings: Sendable {
    public var behaviour = MockBehaviour()
    /// The spec's "10 requests/second per IP", for each of `/events` and `/pushes/opened`.
    public var rateLimitPerSecond = 10
    /// The credentials the service knows; by default, the ones the devices are configured with.
    public var tenants: [SmartAppPushTenant]?

    public init() {}
}

extension SmartAppPushSettings {
    /// Equal settings with storage of their own, for one partition (`String.partitionCopy`).
    func partitionCopy() -> SmartAppPushSettings {
        var copy = self
        copy.tenantID = tenantID.partitionCopy()
        copy.apiKey = apiKey.partitionCopy()
        copy.appID = appID.partitionCopy()
        copy.mock.behaviour = mock.behaviour.partitionCopy()
        copy.mock.tenants = mock.tenants?.map { SmartAppPushTenant(tenantID: $0.tenantID.partitionCopy(), apiKey: $0.apiKey.partitionCopy(), appID: $0.appID.partitionCopy()) }
        return copy
    }
}

public struct SmartAppPushTenant: Sendable, Equatable {
    public var tenantID: String
    public var apiKey: String
    public var appID: String

    public init(tenantID: String, apiKey: String, appID: String) {
        self.tenantID = tenantID
        self.apiKey = apiKey
        self.appID = appID
    }
}
