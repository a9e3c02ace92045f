public import PushSwarmCore
import PushSwarmMetrics

/// PushExpress as a PushSwarm platform (`platforms.pushexpress` in a scenario).
public struct PushExpressPlatform: Platform {
    public init() {}

    public var name: String { PushExpressMessages.platformName }

    public func configure(_ section: JSONReader?) throws -> any PlatformConfiguration {
        var settings = PushExpressSettings()
        guard let section else { return PushExpressConfiguration(settings: settings) }
        var object = try section.object()
        if let value = try object.optional("appId", { try $0.nonEmptyString() }) { settings.appID = value }
        if let value = try object.optional("requestTimeout", { try $0.positiveDuration() }) { settings.requestTimeout = value }
        if let value = try object.optional("updateInterval", { reader -> TimeSpan in
            let interval = try reader.duration()
            guard interval >= .seconds(1) else { throw reader.fail("must be at least 1s") }
            return interval
        }) { settings.updateInterval = value }
        if let value = try object.optional("maximumLoops", { try $0.integer(minimum: 1, maximum: 4_096) }) { settings.maximumLoops = value }
        if let value = try object.optional("eventBufferCapacity", { try $0.integer(minimum: 1, maximum: 100_000) }) { settings.eventBufferCapacity = value }
        if let value = try object.optional(MockBehaviour.scenarioKey, { try $0.mockBehaviour() }) { settings.mockBehaviour = value }
        try object.finish()
        return PushExpressConfiguration(settings: settings)
    }

    public func logOperation(method: String, path: String) -> String? {
        PushExpressMessages.route(forPath: path)?.operation
    }
}

struct PushExpressConfiguration: PlatformConfiguration {
    /// Fields a deliberately broken client may leave out, to reproduce the service's 400s.
    static let omittableFields = ["ic_token", "transport_type", "platform_type", "msg_id"]

    let settings: PushExpressSettings

    var mockBehaviour: MockBehaviour { settings.mockBehaviour }

    func makeMock() -> any MockService {
        PushExpressMock(appID: settings.appID, updateIntervalSeconds: Int(settings.updateInterval.seconds.rounded()))
    }

    func partitionCopy() -> any PlatformConfiguration { PushExpressConfiguration(settings: settings.partitionCopy()) }

    /// What `PushExpressPlatform.configure` reads, every setting spelt out.
    var encoded: JSONObject {
        JSONObject([
            ("appId", .string(settings.appID)), ("requestTimeout", ScenarioEncoder.duration(settings.requestTimeout)),
            ("updateInterval", ScenarioEncoder.duration(settings.updateInterval)), ("maximumLoops", .number(Double(settings.maximumLoops))),
            ("eventBufferCapacity", .number(Double(settings.eventBufferCapacity))),
            (MockBehaviour.scenarioKey, .object(JSONObject(ScenarioEncoder.mockBehaviour(settings.mockBehaviour)))),
        ])
    }

    /// A group's `client`: `profile` (`spec`, `swift`, `android`) and `omitFields`.
    func clientProfile(_ options: JSONReader?, os: OperatingSystem) throws -> any ClientProfile {
        var profile = PushExpressClientProfile(settings: settings, kind: .spec, omittedFields: [])
        guard let options else { return profile }
        var object = try options.object()
        if let kind = try object.optional("profile", { try $0.choice(PushExpressClientKind.allCases.map(\.rawValue)) }) {
            profile.kind = PushExpressClientKind(rawValue: kind) ?? .spec
        }
        if let fields = try object.optional("omitFields", { reader in try reader.array().map { try $0.choice(Self.omittableFields) } }) {
            profile.omittedFields = Set(fields)
        }
        try object.finish()
        return profile
    }
}

/// One group's PushExpress integration: FCM tokens, and the chosen back-off behaviour.
struct PushExpressClientProfile: ClientProfile {
    var settings: PushExpressSettings
    var kind: PushExpressClientKind
    var omittedFields: Set<String>

    var pushToken: PushTokenStyle { .fcm }

    func makeClient(for profile: DeviceProfile) -> any PlatformClient {
        PushExpressClient(settings: settings, kind: kind, omittedFields: omittedFields)
    }

    var encodedOptions: JSONObject? {
        JSONObject([("profile", .string(kind.rawValue)), ("omitFields", .array(omittedFields.sorted().map(JSONValue.string)))])
    }

    func partitionCopy() -> any ClientProfile {
        PushExpressClientProfile(settings: settings.partitionCopy(), kind: kind, omittedFields: Set(omittedFields.map { $0.partitionCopy() }))
    }
}
