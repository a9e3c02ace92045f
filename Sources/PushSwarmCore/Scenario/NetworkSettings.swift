/// How devices reach services.
public struct NetworkSettings: Sendable, Equatable {
    /// Devices sharing one public source address (carrier-grade NAT): 1 gives each its own.
    public var devicesPerSourceAddress: Int = 1
    /// Connections one source address may hold to one origin at once in wall time (scenario
    /// `network.connectionsPerSourceIP`): the devices behind it share them, and a request finding
    /// them all busy waits. Each connection costs the service and PushSwarm a socket and their
    /// per-connection work: against a saturated service more connections add no throughput, only
    /// that cost (docs/performance.md).
    public var connectionsPerSourceAddress: Int = NetworkSettings.defaultConnectionsPerSourceAddress
    /// Whose connections a device's requests use (scenario `network.connections`): its own, as
    /// its OS keeps them (the default: what phones do), or its address's shared pool
    /// (`connectionsPerSourceIP` applies; a raw-throughput setting).
    public var connections: ConnectionSharing = .perDevice
    /// Which HTTP devices speak in wall time (scenario `network.http2`): what ALPN agrees over
    /// TLS (the default, as phones), HTTP/2 with prior knowledge, or HTTP/1.1 only.
    public var http2: HTTPVersionPolicy = .negotiate
    /// Chance that a request fails before reaching the service (no signal, a dropped
    /// connection): the device sees a network error.
    public var errorRate: Double = 0
    /// Round-trip time to services in simulated time (scenario `network.rtt`), drawn afresh for
    /// each exchange: a request's answer comes back a round trip after it left, besides the
    /// service's time (a retry's delay starts from it), and a new connection costs TCP's round
    /// trip and its TLS handshake's; nil: none. In wall time the network itself takes it.
    public var roundTrip: Distribution?
    /// The largest WebSocket message a device accepts from a service in wall time; a bigger one
    /// closes the socket with 1009 ("message too big") as its header arrives, before any of it is
    /// held (scenario `network.maxWebSocketMessageBytes`).
    public var maxWebSocketMessageBytes: Int = NetworkSettings.defaultMaxWebSocketMessageBytes

    /// 64 KiB. The platforms' socket messages (logins, pings, event batches, popups) are
    /// JSON objects of a few hundred bytes to a few KB; this is ten times the largest seen, yet a
    /// hostile or broken peer sending its biggest message to each of 20,000 sockets makes
    /// PushSwarm hold 1.25 GiB at most (with 16 MiB, 20 sockets held 483 MiB).
    public static let defaultMaxWebSocketMessageBytes = 64 << 10
    /// What a scenario may set: RFC 6455's control-frame size up to 16 MiB.
    public static let maxWebSocketMessageBytesRange = 125...(16 << 20)
    public static let defaultConnectionsPerSourceAddress = 64

    public init() {}
}

/// Latency and faults of a built-in mock service, the same knobs for every platform.
public struct MockBehaviour: Sendable, Equatable {
    /// Its key in every platform's section (`platforms.<name>.mock`).
    public static let scenarioKey = "mock"

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
    /// What stands in front of the service: TLS and its capacity (simulated time).
    public var edge = EdgeSettings()

    public init() {}
}

/// A built-in mock's edge in simulated time (scenario `mock.edge`): the TLS it terminates and how
/// many full handshakes a second it can do (a TLS terminator's CPU), and how many connections it
/// holds open at once. A full handshake past that rate waits its turn; one that would wait past
/// the client's connect timeout fails (counted `connections.handshakes.timedOut`, its request a
/// timeout). A resumed handshake costs the edge no queue. A connection past the cap is refused. Wall runs against the built-in mock speak plain HTTP: this is simulated time's.
public struct EdgeSettings: Sendable, Equatable {
    public enum TLS: String, Sendable, CaseIterable {
        case none
        /// TLS 1.2: a full handshake takes 2 round trips, a resumed one 1.
        case v12 = "1.2"
        /// TLS 1.3: 1 round trip, full or resumed.
        case v13 = "1.3"

        /// Round trips a new connection's TLS handshake adds to TCP's one.
        func roundTrips(resumed: Bool) -> Int {
            switch self {
            case .none: 0
            case .v12: resumed ? 1 : 2
            case .v13: 1
            }
        }
    }

    public var tls: TLS = .none
    /// Full handshakes a second the edge can do; nil: as many as come.
    public var handshakesPerSecond: Double?
    /// Connections the edge holds open at once (a load balancer's or nginx's connection cap);
    /// one more is refused (a TCP reset after its round trip: counted `connections.refused`,
    /// its request a transport error the SDK retries). Nil: no cap.
    public var maxConnections: Int?
    /// Streams an HTTP/2 connection may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS): one
    /// more is refused with REFUSED_STREAM, which the client sends again. Wall time's mock; nil:
    /// 128, as nginx.
    public var maxConcurrentStreams: Int?
    /// Simulated time: the edge offers `h2` by ALPN over its TLS (as nginx with `http2` on, and
    /// wall time's `pushswarm mock --tls-cert`), so installs that negotiate (`network.http2`, the
    /// default) carry their requests as streams of one connection. Off unless a scenario says,
    /// so that simulated runs before HTTP/2 are the same; prior knowledge speaks it regardless.
    public var offersHTTP2 = false

    /// True when the edge keeps state across source addresses (a handshake queue, a connection
    /// count), which makes a run with it one partition.
    public var isLimited: Bool { handshakesPerSecond != nil || maxConnections != nil }

    public init() {}
}

extension MockBehaviour {
    /// The same behaviour with storage of its own, for one partition's mock (see
    /// `String.partitionCopy`).
    public func partitionCopy() -> MockBehaviour {
        var copy = self
        copy.rateLimits = rateLimits.map { $0 }
        copy.faults = faults.map { $0 }
        return copy
    }
}

/// The warm-up of a wall run against a real target (scenario `warmUp`, `--warm-up`/`--no-warm-up`):
/// before the measured part, each install from before the run sends what once registered it with
/// the service (an instance and its info, a first event, a token registration, a token over a
/// public API: what each platform's SDK sends), so that the service knows the fleet the
/// run assumes. Built-in mocks know those installs already and need none. Its requests are
/// reported apart (`warmUp` in summary.json), never in the measured figures.
public struct WarmUpSettings: Sendable, Equatable {
    /// Nil: on against a real target, off against the built-in mocks.
    public var enabled: Bool?
    /// Installs starting their warm-up per second, all partitions together (paced so that a
    /// staging service's own limits see a steady trickle, not the whole fleet at once).
    public var rate: Double = 1_000
    /// The warm-up ends at the latest this long after it began: nothing new starts after it, and
    /// what is in flight finishes.
    public var maxDuration: TimeSpan = .minutes(5)
    /// Installs starting their warm-up per second behind one source address; nil: no faster than
    /// the scenario's own per-address limit where it has one (`PlatformConfiguration
    /// .perAddressRequestsPerSecond`). A 429 pauses the address for its `Retry-After` (1 s without
    /// one) and halves its pace, so that the warm-up does not fill the service's limiter.
    public var perAddressRate: Double?
    /// After the warm-up, the run waits until this long has passed since the warm-up's last 429
    /// (none: no wait), so that it starts with the service's limiter drained.
    public var settle: TimeSpan = .seconds(5)

    public init() {}
}
