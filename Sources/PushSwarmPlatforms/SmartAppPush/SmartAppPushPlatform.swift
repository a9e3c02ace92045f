public import PushSwarmCore
public import PushSwarmMetrics

/// SmartAppPush as a PushSwarm platform: reads its scenario section and makes clients and mocks.
public struct SmartAppPushPlatform: Platform {
    public init() {}

    public var name: String { SmartAppPushMessages.platformName }

    public func configure(_ section: JSONReader?) throws -> any PlatformConfiguration {
        var settings = SmartAppPushSettings()
        guard let section else { return SmartAppPushConfiguration(settings: settings) }
        var object = try section.object()
        if let value = try object.optional("tenantId", { try $0.nonEmptyString() }) { settings.tenantID = value }
        if let value = try object.optional("apiKey", { try $0.nonEmptyString() }) { settings.apiKey = value }
        if let value = try object.optional("appId", { try $0.nonEmptyString() }) { settings.appID = value }
        if let value = try object.optional("requestTimeout", { try $0.positiveDuration() }) { settings.requestTimeout = value }
        if let value = try object.optional("queueCapacity", { try $0.integer(minimum: 1, maximum: 1_000_000) }) { settings.queueCapacity = value }
        if let value = try object.optional("sendPushReceived", { try $0.bool() }) { settings.sendsPushReceived = value }
        if let value = try object.optional(Self.retrySetting, { try $0.retryTable(base: settings.retryTable) }) { settings.retryTable = value }
        if let value = try object.optional(MockBehaviour.scenarioKey, { try decodeMock($0) }) { settings.mock = value }
        try object.finish()
        return SmartAppPushConfiguration(settings: settings)
    }

    private func decodeMock(_ reader: JSONReader) throws -> SmartAppPushMockSettings {
        var object = try reader.object()
        var mock = SmartAppPushMockSettings()
        mock.behaviour = try object.readMockBehaviour()
        if let value = try object.optional("rateLimitPerSecond", { try $0.integer(minimum: 1, maximum: 10_000_000) }) { mock.rateLimitPerSecond = value }
        mock.tenants = try object.optional("tenants") { reader in
            try reader.array().map { element in
                var tenant = try element.object()
                let made = SmartAppPushTenant(
                    tenantID: try tenant.required("tenantId") { try $0.nonEmptyString() },
                    apiKey: try tenant.required("apiKey") { try $0.nonEmptyString() },
                    appID: try tenant.required("appId") { try $0.nonEmptyString() }
                )
                try tenant.finish()
                return made
            }
        }
        try object.finish()
        return mock
    }

    /// The client's retry table (`retry`: each row over the spec's).
    static let retrySetting = "retry"

    /// The spec's table with its 429 row's back-off set to `rule`'s.
    public func settings(retryingRefusedBy rule: RetryRule) -> [(String, JSONValue)]? {
        [(Self.retrySetting, ScenarioEncoder.retryTable(setting: .rateLimited, to: rule, keys: RetryRule.Key.backOff))]
    }

    public func logOperation(method: String, path: String) -> String? {
        SmartAppPushMessages.operation(forPath: path)
    }

    /// A tap sends `POST /pushes/opened` ("only when the user **taps**"); a delivered push is a
    /// `push_received` event on `/events`, beside every other event, from apps that send it
    /// (`sendPushReceived`). The mock's 10 requests/s per IP is the spec's, set aside for the
    /// log's own limit.
    public var campaignTrace: CampaignTrace {
        CampaignTrace(open: "smartapppush.pushes_opened", delivery: "smartapppush.events", deliveryIsShared: true,
                      reportingDeliveries: [("sendPushReceived", true)], mockWithoutOwnLimit: [("rateLimitPerSecond", 1_000_000)])
    }
}

/// SmartAppPush as one scenario configured it.
struct SmartAppPushConfiguration: PlatformConfiguration {
    let settings: SmartAppPushSettings

    var mockBehaviour: MockBehaviour { settings.mock.behaviour }

    func makeMock() -> any MockService {
        let tenants = settings.mock.tenants
            ?? [SmartAppPushTenant(tenantID: settings.tenantID, apiKey: settings.apiKey, appID: settings.appID)]
        return SmartAppPushMock(tenants: tenants, rateLimitPerSecond: settings.mock.rateLimitPerSecond)
    }

    func partitionCopy() -> any PlatformConfiguration { SmartAppPushConfiguration(settings: settings.partitionCopy()) }

    /// What `SmartAppPushPlatform.configure` reads, every setting spelt out.
    var encoded: JSONObject {
        var mock = ScenarioEncoder.mockBehaviour(settings.mock.behaviour)
        mock.append(("rateLimitPerSecond", .number(Double(settings.mock.rateLimitPerSecond))))
        if let tenants = settings.mock.tenants {
            mock.append(("tenants", .array(tenants.map { ["tenantId": .string($0.tenantID), "apiKey": .string($0.apiKey), "appId": .string($0.appID)] })))
        }
        return JSONObject([
            ("tenantId", .string(settings.tenantID)), ("apiKey", .string(settings.apiKey)), ("appId", .string(settings.appID)),
            ("requestTimeout", ScenarioEncoder.duration(settings.requestTimeout)), ("queueCapacity", .number(Double(settings.queueCapacity))),
            ("sendPushReceived", .bool(settings.sendsPushReceived)), (SmartAppPushPlatform.retrySetting, ScenarioEncoder.retryTable(settings.retryTable)),
            (MockBehaviour.scenarioKey, .object(JSONObject(mock))),
        ])
    }

    /// The spec's per-IP limit (`mock.rateLimitPerSecond`), or a lower one of `mock.rateLimits`.
    var perAddressRequestsPerSecond: Double? {
        ([Double(settings.mock.rateLimitPerSecond)] + mockBehaviour.rateLimits.compactMap(\.perAddressRequestsPerSecond)).min()
    }

    /// A group's `client`: `profile` (`fcm` or `onesignal`), credential overrides, and `omitFields`
    /// (event fields a faulty integration leaves out, to reproduce its errors).
    func clientProfile(_ options: JSONReader?, os: OperatingSystem) throws -> any ClientProfile {
        var profile = SmartAppPushClientProfile(settings: settings, variant: .oneSignal, omittedFields: [])
        guard let options else { return profile }
        var object = try options.object()
        if let variant = try object.optional("profile", { try $0.choice(["onesignal", "fcm"]) }) {
            profile.variant = variant == "fcm" ? .fcm : .oneSignal
        }
        if let value = try object.optional("tenantId", { try $0.nonEmptyString() }) { profile.settings.tenantID = value }
        if let value = try object.optional("apiKey", { try $0.nonEmptyString() }) { profile.settings.apiKey = value }
        if let fields = try object.optional("omitFields", { reader in
            try reader.array().map { element -> SmartAppPushMessages.EventField in
                let name = try element.choice(SmartAppPushMessages.EventField.allCases.map(\.rawValue))
                return SmartAppPushMessages.EventField(rawValue: name) ?? .context
            }
        }) { profile.omittedFields = Set(fields) }
        try object.finish()
        return profile
    }
}

/// How one group of devices integrates SmartAppPush.
struct SmartAppPushClientProfile: ClientProfile {
    enum Variant: Sendable {
        /// The spec's integration: `device_token` is the OneSignal subscription ID, stable; "The
        /// `POST /devices/refresh-token` endpoint is **not needed**".
        case oneSignal
        /// Direct FCM: the registration token rotates and the app reports it.
        case fcm
    }

    var settings: SmartAppPushSettings { didSet { sharedSettings = SharedSettings(settings) } }
    var variant: Variant
    var omittedFields: Set<SmartAppPushMessages.EventField>
    /// The settings, held once for every client of the profile.
    private(set) var sharedSettings: SharedSettings

    init(settings: SmartAppPushSettings, variant: Variant, omittedFields: Set<SmartAppPushMessages.EventField>) {
        self.settings = settings
        self.variant = variant
        self.omittedFields = omittedFields
        sharedSettings = SharedSettings(settings)
    }

    var pushToken: PushTokenStyle { variant == .fcm ? .fcm : .stableID }

    var encodedOptions: JSONObject? {
        JSONObject([
            ("profile", .string(variant == .fcm ? "fcm" : "onesignal")), ("tenantId", .string(settings.tenantID)), ("apiKey", .string(settings.apiKey)),
            ("omitFields", .array(omittedFields.map(\.rawValue).sorted().map(JSONValue.string))),
        ])
    }

    func makeClient(for profile: DeviceProfile) -> any PlatformClient {
        SmartAppPushClient(settings: sharedSettings, variant: variant, omittedFields: omittedFields)
    }

    /// With settings of its own, and so `SharedSettings` of its own (`didSet`).
    func partitionCopy() -> any ClientProfile {
        var copy = self
        copy.settings = settings.partitionCopy()
        return copy
    }
}

/// A client profile's settings by reference, so that each device's client holds 8 bytes of them.
final class SharedSettings: Sendable {
    let value: SmartAppPushSettings
    /// The offline queue's retry table, timeout and capacity, shared by the profile's queues.
    let queuePolicy: OfflineQueue.Policy
    /// The tenant and API key in JSON form, written into every event as they stand.
    let quotedTenantID: JSONWriter.Quoted
    let quotedAPIKey: JSONWriter.Quoted
    /// The event's field names in JSON form, in the spec's order (`EventField.ordered`), and the
    /// context's member names (in their byte order): here, not in a `static let`, so that each
    /// partition's devices write their own copies (see `String.partitionCopy`).
    let quotedFieldNames: [JSONWriter.Name]
    let quotedContextMembers: (appVersion: JSONWriter.Name, osVersion: JSONWriter.Name, screen: JSONWriter.Name)

    init(_ value: SmartAppPushSettings) {
        self.value = value
        quotedTenantID = JSONWriter.Quoted(value.tenantID)
        quotedAPIKey = JSONWriter.Quoted(value.apiKey)
        quotedFieldNames = SmartAppPushMessages.EventField.ordered.map { JSONWriter.Name($0.rawValue) }
        quotedContextMembers = (JSONWriter.Name("app_version"), JSONWriter.Name("os_version"), JSONWriter.Name("screen"))
        queuePolicy = OfflineQueue.Policy(retryTable: value.retryTable, timeout: value.requestTimeout, capacity: value.queueCapacity)
    }
}
