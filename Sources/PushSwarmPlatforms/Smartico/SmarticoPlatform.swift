public import PushSwarmCore
import PushSwarmMetrics

/// Smartico as a PushSwarm platform (`platforms.smartico` in a scenario).
public struct SmarticoPlatform: Platform {
    public init() {}

    public var name: String { SmarticoMessages.platformName }

    public func configure(_ section: JSONReader?) throws -> any PlatformConfiguration {
        var settings = SmarticoSettings()
        guard let section else { return SmarticoConfiguration(settings: settings) }
        var object = try section.object()
        if let value = try object.optional("labelKey", { try $0.nonEmptyString() }) { settings.labelKey = value }
        if let value = try object.optional("brandKey", { reader -> String? in
            if case .null = reader.value { return nil }
            return try reader.nonEmptyString()
        }) { settings.brandKey = value }
        if let value = try object.optional("appId", { try $0.nonEmptyString() }) { settings.appID = value }
        if let value = try object.optional("trackerVersion", { reader -> String in
            let text = try reader.nonEmptyString()
            let parts = text.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) }) else { throw reader.fail("must be X.Y.Z") }
            return text
        }) { settings.trackerVersion = value }
        if let value = try object.optional("requestTimeout", { try $0.positiveDuration() }) { settings.requestTimeout = value }
        if let value = try object.optional("silenceBeforePing", { try $0.positiveDuration() }) { settings.silenceBeforePing = value }
        if let value = try object.optional("reconnectDelay", { try $0.positiveDuration() }) { settings.reconnectDelay = value }
        if let value = try object.optional("backgroundSocketClose", { reader -> PerOS<TimeSpan> in
            var perOS = try reader.object()
            var result = settings.backgroundSocketClose
            if let android = try perOS.optional("android", { try $0.duration() }) { result.android = android }
            if let ios = try perOS.optional("ios", { try $0.duration() }) { result.ios = ios }
            try perOS.finish()
            return result
        }) { settings.backgroundSocketClose = value }
        if let value = try object.optional("logicalSessionGap", { try $0.positiveDuration() }) { settings.logicalSessionGap = value }
        if let value = try object.optional("languageChangePerSession", { try $0.fraction() }) { settings.languageChangePerSession = value }
        if let value = try object.optional(MockBehaviour.scenarioKey, { try decodeMock($0, base: settings.mock) }) { settings.mock = value }
        try object.finish()
        return SmarticoConfiguration(settings: settings)
    }

    private func decodeMock(_ reader: JSONReader, base: SmarticoMockSettings) throws -> SmarticoMockSettings {
        var object = try reader.object()
        var mock = base
        mock.behaviour = try object.readMockBehaviour()
        if let value = try object.optional("pingInterval", { try $0.positiveDuration() }) { mock.pingInterval = value }
        if let value = try object.optional("missedPongsBeforeClose", { try $0.integer(minimum: 1, maximum: 100) }) { mock.missedPongsBeforeClose = value }
        if let value = try object.optional("blockDuration", { try $0.duration() }) { mock.blockDuration = value }
        if let value = try object.optional("miniGameShare", { try $0.fraction() }) { mock.miniGameShare = value }
        if let value = try object.optional("pendingPopupsPerUser", { try $0.integer(minimum: 0, maximum: 1_000) }) { mock.pendingPopupsPerUser = value }
        try object.finish()
        return mock
    }

    /// The WebSocket's upgrade (a session's messages do not reach an access log), and the public
    /// HTTP API, whose body says which call it is.
    public func logOperation(method: String, path: String) -> String? {
        switch path {
        case SmarticoMessages.socketPath: SmarticoMessages.Operation.connect
        case SmarticoMessages.publicPath: SmarticoMessages.Operation.publicAPI
        default: nil
        }
    }
}

struct SmarticoConfiguration: PlatformConfiguration {
    let settings: SmarticoSettings

    var mockBehaviour: MockBehaviour { settings.mock.behaviour }

    func makeMock() -> any MockService { SmarticoMock(settings: settings) }

    func partitionCopy() -> any PlatformConfiguration { SmarticoConfiguration(settings: settings.partitionCopy()) }

    /// A group's `client`: `integration` (`full` or `pushOnly`) and `emptySessionId` (a broken
    /// client that sends `session_id: ""`).
    func clientProfile(_ options: JSONReader?, os: OperatingSystem) throws -> any ClientProfile {
        var profile = SmarticoClientProfile(settings: settings, integration: .full, sendsEmptySessionID: false)
        guard let options else { return profile }
        var object = try options.object()
        if let value = try object.optional("integration", { try $0.choice(SmarticoClient.Integration.allCases.map(\.rawValue)) }) {
            profile.integration = SmarticoClient.Integration(rawValue: value) ?? .full
        }
        if let value = try object.optional("emptySessionId", { try $0.bool() }) { profile.sendsEmptySessionID = value }
        try object.finish()
        return profile
    }

    /// What `SmarticoPlatform.configure` reads, every setting spelt out.
    var encoded: JSONObject {
        var mock = ScenarioEncoder.mockBehaviour(settings.mock.behaviour)
        mock += [
            ("pingInterval", ScenarioEncoder.duration(settings.mock.pingInterval)), ("missedPongsBeforeClose", .number(Double(settings.mock.missedPongsBeforeClose))),
            ("blockDuration", ScenarioEncoder.duration(settings.mock.blockDuration)), ("miniGameShare", .number(settings.mock.miniGameShare)),
            ("pendingPopupsPerUser", .number(Double(settings.mock.pendingPopupsPerUser))),
        ]
        return JSONObject([
            ("labelKey", .string(settings.labelKey)), ("brandKey", settings.brandKey.map(JSONValue.string) ?? .null), ("appId", .string(settings.appID)),
            ("trackerVersion", .string(settings.trackerVersion)), ("requestTimeout", ScenarioEncoder.duration(settings.requestTimeout)),
            ("silenceBeforePing", ScenarioEncoder.duration(settings.silenceBeforePing)), ("reconnectDelay", ScenarioEncoder.duration(settings.reconnectDelay)),
            ("backgroundSocketClose", [
                "android": ScenarioEncoder.duration(settings.backgroundSocketClose.android), "ios": ScenarioEncoder.duration(settings.backgroundSocketClose.ios),
            ]),
            ("logicalSessionGap", ScenarioEncoder.duration(settings.logicalSessionGap)), ("languageChangePerSession", .number(settings.languageChangePerSession)),
            (MockBehaviour.scenarioKey, .object(JSONObject(mock))),
        ])
    }
}

/// One group's Smartico integration: FCM tokens on both systems.
struct SmarticoClientProfile: ClientProfile {
    var settings: SmarticoSettings
    var integration: SmarticoClient.Integration
    var sendsEmptySessionID: Bool

    var pushToken: PushTokenStyle { .fcm }

    var holdsWebSocket: Bool { integration == .full }

    var encodedOptions: JSONObject? {
        JSONObject([("integration", .string(integration.rawValue)), ("emptySessionId", .bool(sendsEmptySessionID))])
    }

    func makeClient(for profile: DeviceProfile) -> any PlatformClient {
        SmarticoClient(settings: settings, integration: integration, sendsEmptySessionID: sendsEmptySessionID)
    }

    func partitionCopy() -> any ClientProfile {
        var copy = self
        copy.settings = settings.partitionCopy()
        return copy
    }
}
