/// How the people behind a fleet's devices use their app. Every figure can be set in a scenario
/// (`behaviour`, at the top level or per group); the defaults come from published industry figures
/// collected with their sources in `docs/platforms.md`, and are cited beside each.
public struct Behaviour: Sendable, Equatable {
    /// Sessions a device starts per day, drawn once per device (heavy and light users differ).
    /// Default: log-normal, median 2, σ 0.8 (mean ≈ 2.75).
    public var sessionsPerDay: Distribution = .logNormal(median: 2, sigma: 0.8)
    /// The most sessions a device may start per day (a scenario's figure above it is refused; a
    /// draw above it is cut to it): one every 86 ms on average. Real users start a few (median
    /// 2); a day compressed into a short test run needs more (the wall-vs-simulated fixtures use
    /// 50,000). At 10^12 a day the next session fell within the same microsecond as the last, and
    /// the run never ended.
    public static let maximumSessionsPerDay: Double = 1_000_000
    /// How long the app stays in the foreground per session, seconds. Default: log-normal with
    /// median 11 min and σ 1, mean ≈ 18 min (research: mean session ≈ 18.6 min in 2024).
    public var sessionLength: Distribution = .logNormal(median: 660, sigma: 1)
    /// Mean events the app sends per session besides `app_opened`.
    public var eventsPerSession: Double = 8
    /// Which events the app sends and how often, by weight.
    public var eventMix: [WeightedEvent] = WeightedEvent.defaultMix
    /// Relative activity for each local hour 0…23 (sessions follow the device's own clock).
    public var activeHours: [Double] = Behaviour.defaultActiveHours
    /// Time from going to background until the OS or the user closes the app, seconds.
    public var backgroundToClosed: Distribution = .logNormal(median: 1_800, sigma: 1)
    /// Share of the fleet that installs the app during the run (at a uniform time); the rest were
    /// installed before it started.
    public var newInstallShare: Double = 0.03
    /// Share of devices whose user has an account (and so can log in).
    public var accountShare: Double = 0.6
    /// Of installs from before the run whose user has an account, the share logged in at start.
    public var loggedInAtStart: Double = 0.7
    /// Chance that a session of an anonymous user with an account includes logging in.
    public var loginPerSession: Double = 0.3
    /// Chance that a session of a logged-in user ends with logging out.
    public var logoutPerSession: Double = 0.01
    /// Share of devices that allow push notifications when asked.
    /// Default: Android ≈ 81 % (before 13), iOS ≈ 51 % (Airship median).
    public var pushPermissionRate = PerOS(android: 0.81, ios: 0.51)
    /// Rate per day at which a user flips push permission in the OS settings.
    public var permissionChangesPerDay: Double = 0.002
    /// Share of displayed notifications tapped. Default: Android 4.5 %, iOS 2.5 %
    /// (mid-points of Leanplum, Airship and Braze figures: Android 3.5–6 %, iOS 1.8–3.4 %).
    public var tapRate = PerOS(android: 0.045, ios: 0.025)
    /// Time from display to tap, seconds. Default: log-normal with median 48 min on Android and
    /// 7 min on iOS (Leanplum), σ 1.2.
    public var timeToOpen = PerOS<Distribution>(android: .logNormal(median: 2_880, sigma: 1.2), ios: .logNormal(median: 420, sigma: 1.2))
    /// Share of displayed, untapped notifications the user swipes away.
    public var dismissRate: Double = 0.4
    /// Time from display to dismissal, seconds.
    public var timeToDismiss: Distribution = .logNormal(median: 1_800, sigma: 1.2)
    /// Rate per day at which an FCM token rotates. Default 1/30: vendors re-register every 30–45
    /// days and tokens rotate on restore, data clear and expiry.
    public var tokenRotationsPerDay: Double = 1.0 / 30
    /// Share of devices the push provider cannot reach when a push is sent (no connection to
    /// FCM or APNs); the provider holds the push until they reconnect or its time to live ends.
    /// Default 15 % (research: "~15% of devices not connected to FCM at any moment").
    public var unreachableShare: Double = 0.15
    /// How long an unreachable device stays so, seconds. Default: log-normal, median 1 h, σ 1.5.
    public var offlineDuration: Distribution = .logNormal(median: 3_600, sigma: 1.5)
    /// Share of app closes that are force stops (swiped away on iOS, force-stopped on Android):
    /// until the next launch a data-only push does not reach the app.
    public var forceStopShare = PerOS(android: 0.1, ios: 0.3)
    public var appVersion: String = "2.1.0"

    public init() {}

    /// Low at night, a lunch bump, an evening peak: a typical consumer app's day.
    public static let defaultActiveHours: [Double] = [
        0.3, 0.2, 0.15, 0.1, 0.1, 0.2, 0.5, 1.0, 1.3, 1.3, 1.2, 1.3,
        1.5, 1.4, 1.2, 1.2, 1.3, 1.5, 1.8, 2.0, 2.1, 1.9, 1.3, 0.7,
    ]
}

/// One entry of an event mix: an event name, its weight, and the params the app sends with it.
public struct WeightedEvent: Sendable, Equatable {
    public var name: String
    public var weight: Double
    /// Param names, in byte order: values are generated per param name (see `EventParameters`)
    /// in this order, so the params object is made, sent and read back in the canonical order of
    /// a spec's fingerprint and of ledger keys, and neither side has to sort it.
    public var parameters: [String] {
        didSet { parameterKinds = parameters.map(EventParameters.kind(of:)) }
    }
    /// How each param's value is drawn, in the order of `parameters`.
    public private(set) var parameterKinds: [EventParameters.Kind]

    public init(name: String, weight: Double, parameters: [String]) {
        self.name = name
        self.weight = weight
        self.parameters = parameters.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        parameterKinds = self.parameters.map(EventParameters.kind(of:))
    }

    /// A shopping app's mix, drawn from a spec's system events and their "useful params".
    public static let defaultMix: [WeightedEvent] = [
        WeightedEvent(name: "screen_viewed", weight: 30, parameters: ["screen_name", "previous_screen"]),
        WeightedEvent(name: "product_viewed", weight: 14, parameters: ["product_id", "category", "price"]),
        WeightedEvent(name: "product_list_viewed", weight: 8, parameters: ["category", "list_name", "item_count"]),
        WeightedEvent(name: "search_performed", weight: 6, parameters: ["query", "results_count"]),
        WeightedEvent(name: "search_result_clicked", weight: 3, parameters: ["query", "result_position", "result_id"]),
        WeightedEvent(name: "category_browsed", weight: 4, parameters: ["category_name", "item_count"]),
        WeightedEvent(name: "add_to_cart", weight: 5, parameters: ["product_id", "quantity", "price", "currency"]),
        WeightedEvent(name: "remove_from_cart", weight: 1, parameters: ["product_id"]),
        WeightedEvent(name: "cart_viewed", weight: 3, parameters: ["item_count", "cart_total"]),
        WeightedEvent(name: "begin_checkout", weight: 1.5, parameters: ["cart_total", "item_count", "currency"]),
        WeightedEvent(name: "purchase_completed", weight: 1, parameters: ["order_id", "amount", "currency", "item_count"]),
        WeightedEvent(name: "wishlist_added", weight: 2, parameters: ["product_id", "category"]),
        WeightedEvent(name: "content_viewed", weight: 6, parameters: ["content_id", "content_type", "duration_seconds"]),
        WeightedEvent(name: "feature_used", weight: 6, parameters: ["feature_name", "screen_name"]),
        WeightedEvent(name: "paywall_displayed", weight: 1, parameters: ["source", "variant"]),
        WeightedEvent(name: "error_encountered", weight: 0.5, parameters: ["error_code", "error_message", "screen_name"]),
        WeightedEvent(name: "content_shared", weight: 0.5, parameters: ["content_id", "share_method"]),
    ]
}

extension Behaviour {
    /// The same behaviour with storage of its own, for one partition (see `String.partitionCopy`).
    public func partitionCopy() -> Behaviour {
        var copy = self
        copy.eventMix = eventMix.map { $0.partitionCopy() }
        copy.activeHours = activeHours.map { $0 }
        copy.appVersion = appVersion.partitionCopy()
        return copy
    }
}

extension WeightedEvent {
    public func partitionCopy() -> WeightedEvent {
        var copy = self
        copy.name = name.partitionCopy()
        copy.parameters = parameters.partitionCopy()
        return copy
    }
}
