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

/// How an OS's HTTP stack keeps one app's connections to one host (docs/connections.md).
public struct ConnectionStack: Sendable, Equatable {
    /// Connections open at once to one host; more requests wait for one.
    public var maxConnectionsPerHost: Int
    /// A kept-alive connection unused this long is closed.
    public var idleTimeout: TimeSpan

    public init(maxConnectionsPerHost: Int, idleTimeout: TimeSpan) {
        self.maxConnectionsPerHost = maxConnectionsPerHost
        self.idleTimeout = idleTimeout
    }

    /// OkHttp, under Android apps: `Dispatcher.maxRequestsPerHost` 5, and `ConnectionPool`'s
    /// default of 5 idle connections kept 5 minutes.
    public static let okHttp = ConnectionStack(maxConnectionsPerHost: 5, idleTimeout: .minutes(5))
    /// URLSession, under iOS apps: `httpMaximumConnectionsPerHost` defaults to 6 (HTTP/1.1). Apple
    /// documents no idle timeout; a minute is PushSwarm's figure (docs/connections.md).
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
