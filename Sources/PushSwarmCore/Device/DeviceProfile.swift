/// What does not change about one virtual device during a run: derived from (seed, index) alone,
/// so shard 3 of 8 builds exactly the devices the full run builds at those indices.
///
/// A class, held by reference: every call of a device's platform client passes a
/// `DeviceSnapshot`, which copied the profile's five references as a struct (a retain each, and a
/// release when the snapshot ended); now it is one. Nothing in it
/// changes, so sharing it is safe.
public final class DeviceProfile: Sendable {
    public let index: Int
    public let groupIndex: Int
    public let platform: String
    public let os: OperatingSystem
    /// Human form, as apps report it: `Android 14`, `iOS 17.5`.
    public let osVersion: String
    public let appVersion: String
    public let locale: LocaleShare
    /// Seconds east of UTC in the device's zone at the start of the run (for its daily rhythm).
    public let utcOffsetAtStart: Int
    public let source: SourceAddress
    /// Nil when the device was installed before the run.
    public let installAt: Instant?
    /// The user's account id, if the user has one.
    public let accountID: String?
    public let isLoggedInAtStart: Bool
    /// The answer this user gives when asked for push permission.
    public let grantsPushPermission: Bool
    public let sessionsPerDay: Double
    public let pushTokenStyle: PushTokenStyle

    public init(
        index: Int, groupIndex: Int, platform: String, os: OperatingSystem, osVersion: String, appVersion: String,
        locale: LocaleShare, utcOffsetAtStart: Int, source: SourceAddress, installAt: Instant?, accountID: String?,
        isLoggedInAtStart: Bool, grantsPushPermission: Bool, sessionsPerDay: Double, pushTokenStyle: PushTokenStyle
    ) {
        self.index = index
        self.groupIndex = groupIndex
        self.platform = platform
        self.os = os
        self.osVersion = osVersion
        self.appVersion = appVersion
        self.locale = locale
        self.utcOffsetAtStart = utcOffsetAtStart
        self.source = source
        self.installAt = installAt
        self.accountID = accountID
        self.isLoggedInAtStart = isLoggedInAtStart
        self.grantsPushPermission = grantsPushPermission
        self.sessionsPerDay = sessionsPerDay
        self.pushTokenStyle = pushTokenStyle
    }

    public var isInstalledAtStart: Bool { installAt == nil }
}

/// The device's state as its platform client needs it to build a request.
public struct DeviceSnapshot: Sendable {
    public var profile: DeviceProfile
    /// The logged-in user, nil while anonymous.
    public var userID: String?
    /// Push permission as the app last observed it (checked on every launch and resume).
    public var pushPermissionGranted: Bool
    /// Made by `DeviceLifecycle.makeToken`: base64url characters and a colon, or a UUID
    /// (nothing JSON escapes; clients write it without looking).
    public var pushToken: String?
    public var currentScreen: String
    /// Milliseconds since the Unix epoch for an instant of this run, and the zone offset then.
    public var clock: RunCalendar
}

/// Maps run instants to the calendar: the run's start date and the zones' offsets.
public struct RunCalendar: Sendable {
    public var startUnixSeconds: Int64
    public var zones: ZoneOffsets
    /// The real time minus this calendar's (`Scenario.realClockOffsetSeconds`).
    public var realOffsetSeconds: Int64 = 0

    public init(startUnixSeconds: Int64, zones: ZoneOffsets, realOffsetSeconds: Int64 = 0) {
        self.startUnixSeconds = startUnixSeconds
        self.zones = zones
        self.realOffsetSeconds = realOffsetSeconds
    }

    public func unixMicroseconds(_ instant: Instant) -> Int64 {
        startUnixSeconds * 1_000_000 + instant.microseconds
    }

    /// The real time at `instant`, Unix seconds, for reading a peer's HTTP-date: in a wall run
    /// that is now, whatever calendar the devices stamp their events with.
    public func realUnixSeconds(_ instant: Instant) -> Int64 {
        unixMicroseconds(instant) / 1_000_000 + realOffsetSeconds
    }

    /// `instant` as RFC 3339 local time in `zone`, with milliseconds and offset.
    public func timestamp(_ instant: Instant, zone: String) -> String {
        timestampText(instant, zone: zone).string
    }

    /// `timestamp` held in place, without a `String`.
    public func timestampText(_ instant: Instant, zone: String) -> RFC3339.Text {
        let micros = unixMicroseconds(instant)
        let offset = zones.offsetSeconds(zone: zone, atUnixSeconds: micros / 1_000_000)
        return RFC3339.text(unixMicroseconds: micros, offsetSeconds: offset)
    }
}

/// A notification as it reaches a device, with the platform's data and the campaign's overrides.
public struct PushNotification: Sendable, Equatable {
    /// Unique within the run.
    public var id: UInt64
    public var campaign: String
    public var data: [String: String]
    public var tapRate: PerOS<Double>?
    public var timeToOpen: PerOS<Distribution>?
    /// Shown by the app's code, not the OS: lost on a force-stopped app.
    public var isDataOnly = false
    /// Seeds the draws of what the user does with it (taps, when, dismisses), fixed when the push
    /// is sent. They do not come from the device's own stream, whose position when the push
    /// arrives depends on what else the device drew before: in wall time an answer a few
    /// milliseconds late would change which pushes are tapped.
    public var fate: UInt64

    public init(id: UInt64, campaign: String, data: [String: String], tapRate: PerOS<Double>? = nil, timeToOpen: PerOS<Distribution>? = nil, isDataOnly: Bool = false, fate: UInt64 = 0) {
        self.isDataOnly = isDataOnly
        self.fate = fate
        self.id = id
        self.campaign = campaign
        self.data = data
        self.tapRate = tapRate
        self.timeToOpen = timeToOpen
    }
}
