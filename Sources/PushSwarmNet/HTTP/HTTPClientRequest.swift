public import PushSwarmCore
import PushSwarmMetrics
import Synchronization

/// One request for `HTTPClient`.
public struct HTTPClientRequest: Sendable {
    public var method: String
    public var url: TargetURL
    public var headers: [Header]
    public var body: [UInt8]
    /// The address the connection is bound to (a NAT group's loopback address), nil for any.
    public var source: IPAddress?
    /// The whole exchange, from `execute` to the last byte.
    public var timeoutNanoseconds: UInt64
    /// Pins the request's pool to event loop number `loop` (benchmarks spread connections evenly
    /// this way); nil: the pool's key picks the loop.
    public var loop: Int?
    /// The install whose own connections carry the request (`network.connections: perDevice`),
    /// with its OS stack's limits; nil: the pool of its source address, with the client's.
    public var owner: ConnectionOwner?

    public init(
        method: String, url: TargetURL, headers: [Header] = [], body: [UInt8] = [], source: IPAddress? = nil,
        timeoutNanoseconds: UInt64 = 30_000_000_000, loop: Int? = nil
    ) {
        self.loop = loop
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.source = source
        self.timeoutNanoseconds = timeoutNanoseconds
    }
}

/// An install's process that holds connections of its own (the app's, or iOS's notification
/// service extension's), and how its OS's HTTP stack keeps them.
public struct ConnectionOwner: Sendable, Equatable {
    public var process: InstallProcess
    /// The device's index in the fleet.
    public var device: Int { process.device }
    public var maxConnections: Int
    public var idleTimeoutNanoseconds: UInt64

    public init(device: Int, role: ProcessRole = .app, stack: ConnectionStack) {
        process = InstallProcess(device: device, role: role)
        maxConnections = max(1, stack.maxConnectionsPerHost)
        idleTimeoutNanoseconds = UInt64(max(0, stack.idleTimeout.microseconds)) * 1_000
    }
}

/// Where one exchange's time went, in nanoseconds.
public struct HTTPTimings: Sendable, Equatable {
    /// Waiting for a free connection in the pool (the client's own queueing).
    public var queued: UInt64 = 0
    /// Opening the connection's TCP, 0 when a kept-alive one was reused.
    public var connect: UInt64 = 0
    /// The new connection's TLS handshake, after TCP's; 0 without one.
    public var tlsHandshake: UInt64 = 0
    /// Connections opened for this request (0 when it went out on a kept-alive one; 2 when a
    /// stale one was retried on a new one).
    public var connectionsOpened = 0
    /// From the request's first byte written to the response's first byte read.
    public var firstByte: UInt64 = 0
    /// From the request written to the response complete: the service time.
    public var service: UInt64 = 0
    /// From `execute` to the end.
    public var total: UInt64 = 0
    /// It went out on a connection (its bytes written, or queued to be).
    public var wentOut = false
    /// It went out as a stream of an HTTP/2 connection (false: HTTP/1.1, or not sent).
    public var http2 = false

    public init() {}
}

/// How an exchange ended.
public enum HTTPResult: Sendable {
    case response(Response, HTTPTimings)
    case failure(NetError, HTTPTimings)
    case timeout(HTTPTimings)

    public var timings: HTTPTimings {
        switch self {
        case .response(_, let timings), .failure(_, let timings), .timeout(let timings): timings
        }
    }
}
