public import PushSwarmCore
import PushSwarmMetrics

/// Flocktory as a PushSwarm platform (`platforms.flocktory` in a scenario).
public struct FlocktoryPlatform: Platform {
    public init() {}

    public var name: String { FlocktoryMessages.platformName }

    public func configure(_ section: JSONReader?) throws -> any PlatformConfiguration {
        var settings = FlocktorySettings()
        guard let section else { return FlocktoryConfiguration(settings: settings) }
        var object = try section.object()
        if let value = try object.optional("siteId", { reader -> String in
            let text = try reader.nonEmptyString()
            guard text.allSatisfy(\.isNumber) else { throw reader.fail("must be the site's numeric id, as a string") }
            return text
        }) { settings.siteID = value }
        if let value = try object.optional("deepLinkBase", { try $0.nonEmptyString() }) { settings.deepLinkBase = value }
        if let value = try object.optional("requestTimeout", { try $0.positiveDuration() }) { settings.requestTimeout = value }
        if let value = try object.optional("sessionGap", { try $0.positiveDuration() }) { settings.sessionGap = value }
        if let value = try object.optional("waitingCapacity", { try $0.integer(minimum: 1, maximum: 100_000) }) { settings.waitingCapacity = value }
        if let value = try object.optional("maximumRedirects", { try $0.integer(minimum: 0, maximum: 20) }) { settings.maximumRedirects = value }
        if let value = try object.optional(MockBehaviour.scenarioKey, { try $0.mockBehaviour() }) { settings.mockBehaviour = value }
        try object.finish()
        return FlocktoryConfiguration(settings: settings)
    }

    public func logOperation(method: String, path: String) -> String? {
        FlocktoryMessages.operation(forPath: path)
    }

    /// A shown push fetches its `iconUrl` (`/t/show/…`), a tapped one its `landingUrl`
    /// (`/t/click/…`): both always, and nothing else does.
    public var campaignTrace: CampaignTrace {
        CampaignTrace(open: "flocktory.push_click", delivery: "flocktory.push_show")
    }
}

struct FlocktoryConfiguration: PlatformConfiguration {
    let settings: FlocktorySettings

    var mockBehaviour: MockBehaviour { settings.mockBehaviour }

    func makeMock() -> any MockService { FlocktoryMock(settings: settings) }

    func partitionCopy() -> any PlatformConfiguration { FlocktoryConfiguration(settings: settings.partitionCopy()) }

    /// What `FlocktoryPlatform.configure` reads, every setting spelt out.
    var encoded: JSONObject {
        JSONObject([
            ("siteId", .string(settings.siteID)), ("deepLinkBase", .string(settings.deepLinkBase)),
            ("requestTimeout", ScenarioEncoder.duration(settings.requestTimeout)), ("sessionGap", ScenarioEncoder.duration(settings.sessionGap)),
            ("waitingCapacity", .number(Double(settings.waitingCapacity))), ("maximumRedirects", .number(Double(settings.maximumRedirects))),
            (MockBehaviour.scenarioKey, .object(JSONObject(ScenarioEncoder.mockBehaviour(settings.mockBehaviour)))),
        ])
    }

    /// A group's `client`: `omitSession` (a broken integration that skips the cookie and
    /// `site-session-id` the spec requires on every call after the first).
    func clientProfile(_ options: JSONReader?, os: OperatingSystem) throws -> any ClientProfile {
        var profile = FlocktoryClientProfile(settings: settings, omitsSession: false)
        if let options {
            var object = try options.object()
            if let value = try object.optional("omitSession", { try $0.bool() }) { profile.omitsSession = value }
            try object.finish()
        }
        return profile
    }
}

/// Every Flocktory install: FCM tokens ("platform":"firebase") on both systems.
struct FlocktoryClientProfile: ClientProfile {
    let settings: FlocktorySettings
    var omitsSession: Bool

    var pushToken: PushTokenStyle { .fcm }

    func makeClient(for profile: DeviceProfile) -> any PlatformClient { FlocktoryClient(settings: settings, omitsSession: omitsSession) }

    func partitionCopy() -> any ClientProfile { FlocktoryClientProfile(settings: settings.partitionCopy(), omitsSession: omitsSession) }

    var encodedOptions: JSONObject? { ["omitSession": .bool(omitsSession)] }
}
