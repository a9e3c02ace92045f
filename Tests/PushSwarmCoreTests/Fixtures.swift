@testable import PushSwarmCore
import PushSwarmMetrics

enum Fixtures {
    static func profile(
        installedAtStart: Bool = true, os: OperatingSystem = .android, grants: Bool = true,
        account: String? = "user_1", loggedIn: Bool = false, tokenStyle: PushTokenStyle = .fcm
    ) -> DeviceProfile {
        DeviceProfile(
            index: 1, groupIndex: 0, platform: "test", os: os, osVersion: "Android 14", appVersion: "1.0",
            locale: LocaleShare(country: "TR", language: "tr", timeZone: "Europe/Istanbul", weight: 1),
            utcOffsetAtStart: 10_800, source: SourceAddress(index: 0),
            installAt: installedAtStart ? nil : Instant(microseconds: 60_000_000),
            accountID: account, isLoggedInAtStart: loggedIn, grantsPushPermission: grants,
            sessionsPerDay: 3, pushTokenStyle: tokenStyle
        )
    }

    /// Behaviour without background randomness (no token rotation, no permission flips, no
    /// login or logout), so a test drives every transition itself.
    static var quietBehaviour: Behaviour {
        var behaviour = Behaviour()
        behaviour.tokenRotationsPerDay = 0
        behaviour.permissionChangesPerDay = 0
        behaviour.loginPerSession = 0
        behaviour.logoutPerSession = 0
        return behaviour
    }

    static func intents(_ outputs: [DeviceLifecycle.Output]) -> [LifecycleIntent] {
        outputs.compactMap { if case .intent(let intent) = $0 { intent } else { nil } }
    }

    static func scheduled(_ outputs: [DeviceLifecycle.Output]) -> [(DeviceLifecycle.Event, Instant)] {
        outputs.compactMap { if case .schedule(let event, let at) = $0 { (event, at) } else { nil } }
    }

    static func counts(_ outputs: [DeviceLifecycle.Output]) -> [String] {
        outputs.compactMap { if case .count(let counter) = $0 { counter.name } else { nil } }
    }
}
