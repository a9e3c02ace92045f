/// What happened to the requests of one operation (for example `smartapppush.events`).
///
/// Every request sent ends in exactly one of: a response (counted by status), a transport error,
/// or a timeout. `sent` minus those three is what is still in flight.
public struct OperationMetrics: Sendable, Equatable {
    public var sent: UInt64 = 0
    /// Of `sent`, the retries (attempts after the first of a logical request).
    public var retries: UInt64 = 0
    /// Responses by status (kept in a `SmallTable`).
    public var byStatus: [Int: UInt64] {
        get { statusCounts.dictionary }
        set { statusCounts = SmallTable(newValue) }
    }

    private var statusCounts = SmallTable<Int, UInt64>()

    /// Counts a response with `status`.
    public mutating func countResponse(status: Int, by amount: UInt64 = 1) {
        statusCounts.update(status, default: 0) { $0 += amount }
    }

    public var transportErrors: UInt64 = 0
    public var timeouts: UInt64 = 0
    /// Time from the request's intended start (when the device wanted it sent) to the response,
    /// in microseconds, for requests that got a response. Queueing in PushSwarm or the network
    /// counts: no coordinated omission.
    public var latency = LatencyHistogram()
    /// Time from the request's first byte on the wire to the response: what the service took.
    /// Equal to `latency` in simulated time, where nothing waits to be sent.
    public var serviceTime = LatencyHistogram()
    /// Opening a connection's TCP, for requests that opened one (both clocks with each
    /// install's own connections; wall time with shared ones).
    public var connectTime = LatencyHistogram()
    /// The new connection's TLS handshake, after TCP's, for requests that opened one over TLS.
    public var tlsHandshakeTime = LatencyHistogram()
    /// Wall time only: request written to the response's first byte.
    public var timeToFirstByte = LatencyHistogram()

    public init() {}

    public var responses: UInt64 { statusCounts.reduce(0, +) }
    public var completed: UInt64 { responses + transportErrors + timeouts }
    /// Attempts per logical request: 1 when nothing was retried.
    public var retryAmplification: Double { sent > retries ? Double(sent) / Double(sent - retries) : (sent > 0 ? .infinity : 1) }

    public mutating func merge(_ other: OperationMetrics) {
        sent += other.sent
        retries += other.retries
        other.statusCounts.forEach { status, count in countResponse(status: status, by: count) }
        transportErrors += other.transportErrors
        timeouts += other.timeouts
        latency.merge(other.latency)
        serviceTime.merge(other.serviceTime)
        connectTime.merge(other.connectTime)
        tlsHandshakeTime.merge(other.tlsHandshakeTime)
        timeToFirstByte.merge(other.timeToFirstByte)
    }
}
