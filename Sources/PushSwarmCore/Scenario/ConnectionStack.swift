public import PushSwarmMetrics

/// Whose HTTP connections a device's requests go out on in wall time (scenario
/// `network.connections`).
public enum ConnectionSharing: String, Sendable, CaseIterable {
    /// The devices behind one source address share a pool of `network.connectionsPerSourceIP`
    /// kept-alive connections per origin: a raw-throughput setting, comparable with a tool of fixed
    /// connections (wrk -c64).
    case perAddress
    /// Each install holds its own connections, as its OS's HTTP stack keeps them
    /// (`OperatingSystem.connectionStack`): a phone's connections are never another phone's.
    case perDevice
}

/// Which HTTP a device speaks to a service in wall time (scenario `network.http2`).
public enum HTTPVersionPolicy: String, Sendable, CaseIterable {
    /// As OkHttp and URLSession do: over TLS, ALPN (RFC 7301) offers `h2` then `http/1.1` and the
    /// device speaks what the server picks; cleartext is HTTP/1.1.
    case negotiate
    /// HTTP/2 with prior knowledge (RFC 9113 section 3.3): h2c on cleartext, and over TLS ALPN
    /// offers `h2` alone. For a cleartext edge known to speak HTTP/2, and tests.
    case priorKnowledge
    /// HTTP/1.1 only: ALPN offers `http/1.1`.
    case off

    /// What ALPN offers on a TLS connection, most preferred first.
    public var alpnOffer: [String] {
        switch self {
        case .negotiate: ["h2", "http/1.1"]
        case .priorKnowledge: ["h2"]
        case .off: ["http/1.1"]
        }
    }

    /// Whether a connection to an origin speaks HTTP/2 from its first byte, before any ALPN
    /// answer: true with prior knowledge.
    public var assumesHTTP2: Bool { self == .priorKnowledge }

    /// Whether a connection to an origin might speak HTTP/2 (only what ALPN says can tell).
    public func mayNegotiateHTTP2(tls: Bool) -> Bool { tls && self == .negotiate }

    /// Whether a connection to an origin speaks HTTP/2, given whether the origin's edge offers
    /// it by ALPN: what a socket learns from its handshake, and simulated time knows beforehand.
    public func speaksHTTP2(tls: Bool, edgeOffersHTTP2: Bool) -> Bool {
        assumesHTTP2 || (mayNegotiateHTTP2(tls: tls) && edgeOffersHTTP2)
    }
}

/// How an OS's HTTP stack keeps one app's connections to one host (docs/connections.md).
public struct ConnectionStack: Sendable, Equatable {
    /// Connections open at once to one host; more requests wait for one.
    public var maxConnectionsPerHost: Int
    /// A kept-alive connection unused this long is closed.
    public var idleTimeout: TimeSpan
    /// How long opening a connection may take (TCP and TLS) before it fails; nil: the request's
    /// own timeout covers it.
    public var connectTimeout: TimeSpan?

    public init(maxConnectionsPerHost: Int, idleTimeout: TimeSpan, connectTimeout: TimeSpan? = nil) {
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.idleTimeout = idleTimeout
        self.connectTimeout = connectTimeout
    }

    /// OkHttp, under Android apps: `Dispatcher.maxRequestsPerHost` 5, `ConnectionPool`'s default
    /// of 5 idle connections kept 5 minutes, `OkHttpClient`'s connect timeout of 10 s.
    public static let okHttp = ConnectionStack(maxConnectionsPerHost: 5, idleTimeout: .minutes(5), connectTimeout: .seconds(10))
    /// URLSession, under iOS apps: `httpMaximumConnectionsPerHost` defaults to 6 (HTTP/1.1). Apple
    /// documents no idle timeout; a minute is PushSwarm's figure (docs/connections.md). It has no
    /// connect timeout apart from the request's (`timeoutIntervalForRequest`).
    public static let urlSession = ConnectionStack(maxConnectionsPerHost: 6, idleTimeout: .seconds(60))
}

extension OperatingSystem {
    /// The HTTP stack an app on this OS talks through.
    public var connectionStack: ConnectionStack {
        switch self {
        case .android: .okHttp
        case .ios: .urlSession
        }
    }
}

extension OperatingSystem {
    /// True where the OS hands a displayed push to a process apart from the app's (iOS's
    /// notification service extension), from which the SDK reports the delivery; Android
    /// delivers an FCM message to the app's own process, started if it was not running.
    public var hasNotificationExtension: Bool { self == .ios }

    /// How long an app left in the background keeps running before the OS suspends it, and its
    /// sockets with it; nil where the OS leaves a background process running (Android, until the
    /// process is killed). iOS: `applicationDidEnterBackground(_:)` "has approximately five seconds
    /// to perform any tasks and return", after which an app without background time is suspended
    /// (docs/connections.md).
    public var suspendsInBackgroundAfter: TimeSpan? {
        switch self {
        case .android: nil
        case .ios: .seconds(5)
        }
    }
}

/// What happened to one of a run's HTTP connections, as its transport tells the run.
public enum ConnectionEvent: Sendable, Equatable {
    /// Connected (TCP, and TLS when the origin asks for it, `tls` saying how): a handshake at
    /// the service's edge.
    case opened(tls: TLSHandshake?)
    case closed(ConnectionCloseReason)
    /// The TLS handshake failed (refused, reset, an alert, a certificate not trusted).
    case handshakeFailed
    /// The connection was not open within the client's connect timeout: in simulated time the
    /// edge did not get to its handshake (`mock.edge.handshakesPerSecond`); in wall time TCP or
    /// TLS did not finish (a full SYN backlog, a busy terminator).
    case handshakeTimedOut
    /// The edge refused the connection (a TCP reset: `mock.edge.maxConnections` reached, or
    /// nothing listening).
    case refused
    /// A connection just opened speaks HTTP/2 (ALPN chose `h2`, or prior knowledge): its
    /// requests are streams on it.
    case speaksHTTP2
    /// An HTTP/2 server sent GOAWAY with this code (a deploy draining its connections, or an
    /// error): the connection takes no new stream, and its unprocessed ones go again.
    case goAway(code: UInt32)
    /// An HTTP/2 server reset one request's stream with this code; REFUSED_STREAM's request goes
    /// again (RFC 9113 section 8.7).
    case streamReset(code: UInt32)
    /// A request the server had not processed (above a GOAWAY's last stream, or refused) was sent
    /// again on another connection.
    case unprocessedRetried

    /// The run counter it increments (`opened` also puts it on the timeline's ticks).
    public var counter: CounterKey {
        switch self {
        case .opened: .connectionsOpened
        case .speaksHTTP2: .http2ConnectionsOpened
        case .goAway(let code): CounterKey.http2GoAways(HTTP2ErrorCode.name(of: code))
        case .streamReset(let code): CounterKey.http2Resets(HTTP2ErrorCode.name(of: code))
        case .unprocessedRetried: .http2RetriedUnprocessed
        case .closed(let reason): reason.counter
        case .handshakeFailed: .connectionsHandshakesFailed
        case .handshakeTimedOut: .connectionsHandshakesTimedOut
        case .refused: .connectionsRefused
        }
    }
}

/// How a connection's TLS handshake went: a full one (a new process, or the first connection
/// of one), or a resumption of a session the app's process kept (an abbreviated handshake).
public enum TLSHandshake: String, Sendable, CaseIterable {
    case full
    case resumed

    /// The run counter it increments.
    public var counter: CounterKey { CounterKey.connectionsHandshakes(rawValue) }
}

/// Why a connection closed, counted per run as `connections.closed.<reason>`.
public enum ConnectionCloseReason: String, Sendable, CaseIterable {
    /// Unused for its stack's (or the pool's) idle timeout.
    case idle
    /// Its app was suspended in the background (iOS).
    case background
    /// Its app's process ended (closed by the user or the OS).
    case processDied
    /// The server closed it, or answered without keep-alive.
    case serverClosed
    /// It failed: a malformed answer, bytes nobody asked for, an exchange that timed out on it.
    case error
    /// Closed to make room for another pool's connection within the process's file budget.
    case budget

    /// The run counter it increments.
    public var counter: CounterKey { CounterKey.connectionsClosed(rawValue) }
}

/// Which of an install's processes sends a request, and holds the connections and TLS session
/// that carry it (`network.connections: perDevice`).
public enum ProcessRole: UInt8, Sendable, Hashable {
    /// The app's own process.
    case app
    /// iOS's notification service extension: a process of its own that the OS starts to handle
    /// a displayed push (`UNNotificationServiceExtension`), from which the SDK reports the
    /// delivery. It shares neither connections nor TLS sessions with the app, and ends soon
    /// after its last push (`DeviceLifecycle.extensionLingers`).
    case notificationExtension
}

/// One process of one install: the key of its own connections and TLS session.
public struct InstallProcess: Hashable, Sendable {
    /// The device's number in the fleet.
    public var device: Int
    public var role: ProcessRole

    public init(device: Int, role: ProcessRole = .app) {
        self.device = device
        self.role = role
    }
}
