public import PushSwarmCore
public import PushSwarmMetrics

/// Meiro as a PushSwarm platform (`platforms.meiro` in a scenario).
public struct MeiroPlatform: Platform {
    public init() {}

    public var name: String { MeiroMessages.platformName }

    public func configure(_ section: JSONReader?) throws -> any PlatformConfiguration {
        var settings = MeiroSettings()
        guard let section else { return MeiroConfiguration(settings: settings) }
        var object = try section.object()
        if let value = try object.optional("appId", { try $0.nonEmptyString() }) { settings.appID = value }
        if let value = try object.optional("appName", { try $0.nonEmptyString() }) { settings.appName = value }
        if let value = try object.optional("projectId", { try $0.nonEmptyString() }) { settings.projectID = value }
        if let value = try object.optional("requestTimeout", { try $0.positiveDuration() }) { settings.requestTimeout = value }
        if let value = try object.optional("refreshInterval", { reader -> TimeSpan in
            let interval = try reader.duration()
            guard interval >= .minutes(1) else { throw reader.fail("must be at least 1m") }
            return interval
        }) { settings.refreshInterval = value }
        if let value = try object.optional("queueCapacity", { try $0.integer(minimum: 1, maximum: 1_000_000) }) { settings.queueCapacity = value }
        if let value = try object.optional(Self.retrySetting, { try $0.retryTable(base: settings.retryTable) }) { settings.retryTable = value }
        if let value = try object.optional(MockBehaviour.scenarioKey, { try $0.mockBehaviour() }) { settings.mockBehaviour = value }
        try object.finish()
        return MeiroConfiguration(settings: settings)
    }

    /// The client's retry table (`retry`: each row over the spec's).
    static let retrySetting = "retry"

    /// The spec's table with its 429 row's back-off set to `rule`'s.
    public func settings(retryingRefusedBy rule: RetryRule) -> [(String, JSONValue)]? {
        [(Self.retrySetting, ScenarioEncoder.retryTable(setting: .rateLimited, to: rule, keys: RetryRule.Key.backOff))]
    }

    /// Registrations and refreshes share the one endpoint; the body tells them apart.
    public func logOperation(method: String, path: String) -> String? {
        path == MeiroMessages.path ? MeiroMessages.Operation.endpoint : nil
    }
}

struct MeiroConfiguration: PlatformConfiguration {
    let settings: MeiroSettings

    var mockBehaviour: MockBehaviour { settings.mockBehaviour }

    func makeMock() -> any MockService { MeiroMock() }

    func partitionCopy() -> any PlatformConfiguration { MeiroConfiguration(settings: settings.partitionCopy()) }

    /// What `MeiroPlatform.configure` reads, every setting spelt out.
    var encoded: JSONObject {
        JSONObject([
            ("appId", .string(settings.appID)), ("appName", .string(settings.appName)), ("projectId", .string(settings.projectID)),
            ("requestTimeout", ScenarioEncoder.duration(settings.requestTimeout)), ("refreshInterval", ScenarioEncoder.duration(settings.refreshInterval)),
            ("queueCapacity", .number(Double(settings.queueCapacity))), (MeiroPlatform.retrySetting, ScenarioEncoder.retryTable(settings.retryTable)),
            (MockBehaviour.scenarioKey, .object(JSONObject(ScenarioEncoder.mockBehaviour(settings.mockBehaviour)))),
        ])
    }

    /// Fields a deliberately broken client may leave out, to reproduce the service's 400s.
    static let omittableFields = ["user_id", "event_type", "event_timestamp", "version", "app", "os", "firebase", "project_id", "registration_token"]

    /// A group's `client`: `omitFields` only.
    func clientProfile(_ options: JSONReader?, os: OperatingSystem) throws -> any ClientProfile {
        var omitted: Set<String> = []
        if let options {
            var object = try options.object()
            if let fields = try object.optional("omitFields", { reader in try reader.array().map { try $0.choice(Self.omittableFields) } }) {
                omitted = Set(fields)
            }
            try object.finish()
        }
        return MeiroClientProfile(settings: settings, omittedFields: omitted)
    }
}

/// Every Meiro install: FCM tokens on both systems (the spec's `firebase.registration_token`).
struct MeiroClientProfile: ClientProfile {
    let settings: MeiroSettings
    let omittedFields: Set<String>
    /// The offline queue's settings, held once for every client of the profile.
    let queuePolicy: OfflineQueue.Policy

    init(settings: MeiroSettings, omittedFields: Set<String>) {
        self.settings = settings
        self.omittedFields = omittedFields
        queuePolicy = settings.makeQueuePolicy()
    }

    var encodedOptions: JSONObject? { ["omitFields": .array(omittedFields.sorted().map(JSONValue.string))] }

    var pushToken: PushTokenStyle { .fcm }

    func makeClient(for profile: DeviceProfile) -> any PlatformClient {
        MeiroClient(settings: settings, omittedFields: omittedFields, queuePolicy: queuePolicy)
    }

    /// With settings, and so a queue policy, of its own.
    func partitionCopy() -> any ClientProfile {
        MeiroClientProfile(settings: settings.partitionCopy(), omittedFields: Set(omittedFields.map { $0.partitionCopy() }))
    }
}
