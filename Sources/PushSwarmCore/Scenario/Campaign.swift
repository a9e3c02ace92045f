/// A push campaign a scenario schedules: at a time, to a share of the opted-in devices.
public struct Campaign: Sendable, Equatable {
    public var name: String
    /// The platform that sends it.
    public var platform: String
    /// When it is sent, from the start of the run.
    public var at: TimeSpan
    /// Share of opted-in devices targeted.
    public var audience: Double
    /// Time from the service sending to the device receiving, seconds.
    public var deliveryDelay: Distribution
    /// Overrides of the devices' own tap behaviour for this campaign (a compelling offer).
    public var tapRate: PerOS<Double>?
    public var timeToOpen: PerOS<Distribution>?
    /// How long the push provider keeps a push for a device it cannot reach (FCM keeps messages
    /// up to 28 days, the default).
    public var timeToLive: TimeSpan

    public init(
        name: String, platform: String, at: TimeSpan, audience: Double,
        deliveryDelay: Distribution = .logNormal(median: 2, sigma: 1),
        tapRate: PerOS<Double>? = nil, timeToOpen: PerOS<Distribution>? = nil, timeToLive: TimeSpan = .days(28)
    ) {
        self.timeToLive = timeToLive
        self.name = name
        self.platform = platform
        self.at = at
        self.audience = audience
        self.deliveryDelay = deliveryDelay
        self.tapRate = tapRate
        self.timeToOpen = timeToOpen
    }
}

extension Campaign {
    /// This campaign for one partition: its name, which every push of it carries to a device
    /// (`PushNotification.campaign`), with storage of its own (see `String.partitionCopy`).
    public func partitionCopy() -> Campaign {
        var copy = self
        copy.name = name.partitionCopy()
        copy.platform = platform.partitionCopy()
        return copy
    }
}
