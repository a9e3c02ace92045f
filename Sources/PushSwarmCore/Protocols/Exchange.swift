/// A request a device wants sent, with what the run needs to account for it.
public struct OutgoingRequest: Sendable {
    /// Unique within the device; completions carry it back.
    public var id: UInt64
    /// The metric name, `platform.operation` (`<platform>.events`).
    public var operation: String
    public var request: Request
    /// How long the client waits for an answer before it counts a timeout.
    public var timeout: TimeSpan
    /// 0 for a first attempt, n for the n-th retry.
    public var retryNumber: Int
    /// When the request was due, if earlier than now: it waited in the device's queue behind
    /// another. Latency counts from here (no coordinated omission); nil: due now.
    public var intendedStart: Instant?
    /// The install's process that sends it: the app's, or iOS's notification service extension
    /// reporting a push it handled (their connections are apart).
    public var sender: ProcessRole = .app

    public init(id: UInt64, operation: String, request: Request, timeout: TimeSpan, retryNumber: Int, intendedStart: Instant? = nil) {
        self.id = id
        self.operation = operation
        self.request = request
        self.timeout = timeout
        self.retryNumber = retryNumber
        self.intendedStart = intendedStart
    }
}

/// How a request ended, as the device sees it.
public enum ExchangeOutcome: Sendable {
    case response(Response)
    /// The request never got an answer: no route, refused, reset (`reason` says which).
    case transportError(reason: String)
    case timeout
}

/// A finished request, delivered back to the device that sent it.
public struct ExchangeCompletion: Sendable {
    /// Answered 1xx to 3xx: what the service took (a redirect's next hop included).
    public var isSuccess: Bool {
        if case .response(let response) = outcome { return response.status < 400 }
        return false
    }

    public var requestID: UInt64
    public var operation: String
    /// When the device asked for the request to be sent (its intended start).
    public var sentAt: Instant
    public var outcome: ExchangeOutcome
    /// Where the time went, when a real transport measured it (nil in simulated time).
    public var timings: TransportTimings?

    public init(requestID: UInt64, operation: String, sentAt: Instant, outcome: ExchangeOutcome, timings: TransportTimings? = nil) {
        self.requestID = requestID
        self.operation = operation
        self.sentAt = sentAt
        self.outcome = outcome
        self.timings = timings
    }
}

/// A real request's phases, as the socket layer measured them.
public struct TransportTimings: Sendable {
    /// Opening a connection's TCP for this request (k6's `http_req_connecting`); nil when a
    /// kept-alive one was reused.
    public var connect: TimeSpan?
    /// The new connection's TLS handshake, after TCP's (k6's `http_req_tls_handshaking`); nil
    /// without one.
    public var tlsHandshake: TimeSpan?
    /// From the request's first byte written to the response's first byte read.
    public var firstByte: TimeSpan
    /// From the request's first byte written to the response complete.
    public var service: TimeSpan
    /// Which HTTP carried it: true for a stream of an HTTP/2 connection, false for HTTP/1.1; nil
    /// where no socket tells (simulated time).
    public var http2: Bool?

    public init(connect: TimeSpan?, tlsHandshake: TimeSpan? = nil, firstByte: TimeSpan, service: TimeSpan, http2: Bool? = nil) {
        self.http2 = http2
        self.connect = connect
        self.tlsHandshake = tlsHandshake
        self.firstByte = firstByte
        self.service = service
    }
}


/// A WebSocket a client wants opened: its id (unique within the device), the metric name of the
/// opening handshake (`<platform>.connect`), the path and query on the platform's target.
public struct SocketOpen: Sendable {
    public var id: UInt64
    public var operation: String
    public var path: String
    /// How long the client waits for the handshake before it counts a timeout.
    public var timeout: TimeSpan

    public init(id: UInt64, operation: String, path: String, timeout: TimeSpan) {
        self.id = id
        self.operation = operation
        self.path = path
        self.timeout = timeout
    }
}

/// What happens to a device's WebSocket, as the device sees it.
public enum SocketEvent: Sendable {
    case opened(socket: UInt64)
    /// The handshake did not succeed: refused with a status, a transport error, or no answer in time.
    case failed(socket: UInt64, outcome: ExchangeOutcome)
    case message(socket: UInt64, text: String)
    /// The service or the network closed the socket (never sent for a close the client asked for).
    case closed(socket: UInt64, code: Int?, reason: String)

    public var socket: UInt64 {
        switch self {
        case .opened(let socket), .failed(let socket, _), .message(let socket, _), .closed(let socket, _, _): socket
        }
    }
}
