@testable import PushSwarmCore

/// The snapshot a platform client sees, for one test device: the platform's defaults in one place,
/// each suite's own locale and identity passed in.
func deviceSnapshot(
    platform: String, index: Int = 0, os: OperatingSystem = .android, appVersion: String,
    locale: LocaleShare, utcOffset: Int, source: UInt32 = 0, installedAtStart: Bool = true,
    accountID: String? = nil, userID: String? = nil, loggedInAtStart: Bool = false, permission: Bool = true, token: String?
) -> DeviceSnapshot {
    let profile = DeviceProfile(
        index: index, groupIndex: 0, platform: platform, os: os, osVersion: os == .ios ? "iOS 17.5" : "Android 14", appVersion: appVersion,
        locale: locale, utcOffsetAtStart: utcOffset, source: SourceAddress(index: source), installAt: installedAtStart ? nil : .start,
        accountID: accountID, isLoggedInAtStart: loggedInAtStart, grantsPushPermission: permission, sessionsPerDay: 2, pushTokenStyle: .fcm
    )
    let calendar = RunCalendar(startUnixSeconds: 1_772_409_600, zones: ZoneOffsets(zones: [locale.timeZone], from: 1_772_323_200, through: 1_772_582_400))
    return DeviceSnapshot(profile: profile, userID: userID, pushPermissionGranted: permission, pushToken: token, currentScreen: "home", clock: calendar)
}
