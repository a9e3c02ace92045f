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
}
