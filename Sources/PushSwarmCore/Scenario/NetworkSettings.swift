/// How devices reach services.
public struct NetworkSettings: Sendable, Equatable {
    /// Devices sharing one public source address (carrier-grade NAT): 1 gives each its own.
    public var devicesPerSourceAddress: Int = 1
    /// Chance that a request fails before reaching the service (no signal, a dropped
    /// connection): the device sees a network error.
    public var errorRate: Double = 0

    public init() {}
}

/// Latency and faults of a built-in mock service, the same knobs for every platform.
public struct MockBehaviour: Sendable, Equatable {
    /// Time to answer, seconds. Default: log-normal, median 40 ms, σ 0.5.
    public var latency: Distribution = .logNormal(median: 0.040, sigma: 0.5)
    /// Chance that a request is answered 503 before the service looks at it.
    public var http503Rate: Double = 0
    /// Chance that an accepted item is answered 200 but never reaches the ledger (a service bug:
    /// it shows up as `ledger.lost`).
    public var loseAcceptedRate: Double = 0
    /// Limits applied before the service sees a request, in order; the first that refuses answers.
    public var rateLimits: [RateLimitRule] = []
    /// Faults injected after the limits admit a request, in order; the first that strikes applies.
    public var faults: [FaultRule] = []

    public init() {}
}
