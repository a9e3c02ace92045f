public import PushSwarmCore

/// Every platform PushSwarm knows. Adding a platform: a folder beside `SmartAppPush/` and a line here.
public enum PlatformRegistry {
    public static let all: [any Platform] = [
        SmartAppPushPlatform(),
        MeiroPlatform(),
        PushExpressPlatform(),
        SmarticoPlatform(),
        FlocktoryPlatform(),
    ]

    /// What each platform's campaigns leave in an access log, by platform name: `fit`'s facts.
    public static var campaignTraces: [String: CampaignTrace] {
        Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0.campaignTrace) })
    }
}
