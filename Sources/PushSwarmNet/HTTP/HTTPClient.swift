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

/// Where one exchange's time went, in nanoseconds.
public struct HTTPTimings: Sendable, Equatable {
    /// Waiting for a free connection in the pool (the client's own queueing).
    public var queued: UInt64 = 0
    /// Opening the connection (TCP and TLS), 0 when a kept-alive one was reused.
    public var connect: UInt64 = 0
    /// Connections opened for this request (0 when it went out on a kept-alive one; 2 when a
    /// stale one was retried on a new one).
    public var connectionsOpened = 0
    /// From the request's first byte written to the response's first byte read.
    public var firstByte: UInt64 = 0
    /// From the request written to the response complete: the service time.
    public var service: UInt64 = 0
    /// From `execute` to the end.
    public var total: UInt64 = 0

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

/// An HTTP/1.1 client on PushSwarm's event loops: keep-alive pools per (source address, origin),
/// Content-Length and chunked bodies, connect and request timeouts. A 3xx is an answer like any
/// other: the platform client that wants its `Location` follows it (Flocktory's redirect chains,
/// spec 001), and keeps its own cookie, so that the device's requests stay one each in its report.
///
/// A pool lives on one loop, so its connections and queue need no lock; `execute` hops there.
/// Completions run on that loop's thread: keep them short.
public final class HTTPClient: Sendable {
    public struct Configuration: Sendable {
        /// Connections open at once per (source address, origin); more requests wait in the pool.
        public var maxConnectionsPerPool: Int
        public var connectTimeoutNanoseconds: UInt64
        public var tls: TLSContext?
        public var limits: HTTPParser.Limits
        /// A kept-alive connection unused this long is closed (OkHttp's default is 5 minutes).
        public var idleTimeoutNanoseconds: UInt64
        /// Connections open at once across all pools (the process's file limit); a pool over it
        /// waits until another connection closes.
        public var maxOpenConnections: Int

        public init(
            maxConnectionsPerPool: Int = 64, connectTimeoutNanoseconds: UInt64 = 10_000_000_000, tls: TLSContext? = nil,
            limits: HTTPParser.Limits = HTTPParser.Limits(maxHeaderBytes: 65_536, maxBodyBytes: 16 << 20),
            idleTimeoutNanoseconds: UInt64 = 300_000_000_000, maxOpenConnections: Int = Int.max
        ) {
            self.maxConnectionsPerPool = maxConnectionsPerPool
            self.connectTimeoutNanoseconds = connectTimeoutNanoseconds
            self.tls = tls
            self.limits = limits
            self.idleTimeoutNanoseconds = idleTimeoutNanoseconds
            self.maxOpenConnections = maxOpenConnections
        }
    }

    let group: EventLoopGroup
    let configuration: Configuration
    private let states: [LoopState]
    private let budget: ConnectionBudget

    public init(group: EventLoopGroup, configuration: Configuration = Configuration()) {
        self.group = group
        self.configuration = configuration
        states = group.loops.map { LoopState(loop: $0) }
        budget = ConnectionBudget(limit: configuration.maxOpenConnections)
    }

    /// Connections open now, across all pools.
    public var openConnections: Int { budget.open }

    /// Requests waiting for a connection in the pools, and how many request objects the wait
    /// queues still hold (the same, when those that timed out have left); read on the loops.
    func waitQueues(_ completion: @escaping @Sendable (_ waiting: Int, _ held: Int) -> Void) {
        let counts = Mutex<[(Int, Int)]>([])
        for state in states {
            state.loop.execute { [states] in
                let done = counts.withLock { counts in
                    counts.append(state.waitQueues)
                    return counts.count == states.count ? counts : nil
                }
                if let done { completion(done.reduce(0) { $0 + $1.0 }, done.reduce(0) { $0 + $1.1 }) }
            }
        }
    }

    /// Takes one connection from the budget, or registers `pool` to hear when one is free and
    /// asks every loop to close an idle connection: kept-alive connections idling in other pools
    /// would otherwise hold the budget until their idle timeout.
    func reserveConnection(for pool: ConnectionPool) -> Bool {
        if budget.reserve(waiter: pool) { return true }
        for state in states {
            state.loop.enqueue { state.closeOneIdle() }
        }
        return false
    }

    func releaseConnection() {
        if let pool = budget.release() {
            pool.loop.execute { pool.budgetAvailable() }
        }
    }

    /// Whether some pool waits for the budget (an idle connection should then close, not idle).
    var poolsWaitForBudget: Bool { budget.hasWaiters }

    /// A pool told of free budget that no longer needs it hands the turn to the next waiter.
    func passBudgetTurn() {
        if let pool = budget.nextWaiter() {
            pool.loop.execute { pool.budgetAvailable() }
        }
    }

    /// Sends `request`; `completion` runs exactly once, on an event loop thread.
    public func execute(_ request: HTTPClientRequest, completion: @escaping @Sendable (HTTPResult) -> Void) {
        let exchange = Exchange(request: request, completion: completion, startedAt: Monotonic.now())
        start(exchange)
    }

    /// Closes idle connections; call when no request is in flight.
    public func shutdown() {
        for state in states {
            state.loop.execute { state.closeAll() }
        }
    }

    func start(_ exchange: Exchange) {
        let key = PoolKey(source: exchange.request.source, origin: exchange.request.url.origin)
        let state = states[exchange.request.loop.map { $0 % states.count } ?? abs(key.hashValue % states.count)]
        if state.loop.inLoop {
            state.pool(for: key, client: self).submit(exchange)
        } else {
            state.loop.enqueue { [self] in state.pool(for: key, client: self).submit(exchange) }
        }
    }

    func address(of origin: Origin) -> Result<SocketAddress, NetError> {
        Resolver.address(of: origin)
    }
}

struct PoolKey: Hashable {
    let source: IPAddress?
    let origin: Origin
    /// Computed once: a pool is looked up on every request.
    private let hash: Int

    init(source: IPAddress?, origin: Origin) {
        self.source = source
        self.origin = origin
        var hasher = Hasher()
        hasher.combine(source)
        hasher.combine(origin)
        hash = hasher.finalize()
    }

    static func == (lhs: PoolKey, rhs: PoolKey) -> Bool {
        lhs.hash == rhs.hash && lhs.source == rhs.source && lhs.origin == rhs.origin
    }

    func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    var hashValue: Int { hash }
}

/// Connections open across all pools, and the pools waiting for one to close.
private final class ConnectionBudget: Sendable {
    private struct State {
        var open = 0
        var waiting: [ConnectionPool] = []
    }

    private let limit: Int
    private let state = Mutex(State())
    /// `state.waiting.count`, readable without the lock: every finished exchange asks.
    private let waiters = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    var open: Int { state.withLock { $0.open } }

    func reserve(waiter: ConnectionPool) -> Bool {
        state.withLock { state in
            if state.open < limit {
                state.open += 1
                return true
            }
            if !state.waiting.contains(where: { $0 === waiter }) { state.waiting.append(waiter) }
            waiters.store(state.waiting.count, ordering: .relaxed)
            return false
        }
    }

    /// Frees one; returns a pool that was waiting, if any.
    func release() -> ConnectionPool? {
        state.withLock { state in
            state.open -= 1
            return takeWaiter(&state)
        }
    }

    var hasWaiters: Bool { waiters.load(ordering: .relaxed) > 0 }

    func nextWaiter() -> ConnectionPool? {
        state.withLock { state in takeWaiter(&state) }
    }

    private func takeWaiter(_ state: inout State) -> ConnectionPool? {
        guard !state.waiting.isEmpty else { return nil }
        let pool = state.waiting.removeFirst()
        waiters.store(state.waiting.count, ordering: .relaxed)
        return pool
    }
}

/// The pools of one loop (touched on that loop only).
final class LoopState: @unchecked Sendable {
    let loop: EventLoop
    private var pools: [PoolKey: ConnectionPool] = [:]

    init(loop: EventLoop) { self.loop = loop }

    func pool(for key: PoolKey, client: HTTPClient) -> ConnectionPool {
        if let pool = pools[key] { return pool }
        let pool = ConnectionPool(key: key, loop: loop, client: client)
        pools[key] = pool
        return pool
    }

    func closeAll() {
        for pool in pools.values { pool.closeIdle() }
    }

    var waitQueues: (Int, Int) {
        pools.values.reduce((0, 0)) { ($0.0 + $1.waitQueue.waiting, $0.1 + $1.waitQueue.held) }
    }

    /// Closes one idle connection of any pool on this loop, if there is one.
    func closeOneIdle() {
        for pool in pools.values where pool.closeOneIdle() { return }
    }
}

/// One request on its way: its timer, its timings, and where it is.
final class Exchange: @unchecked Sendable {
    var request: HTTPClientRequest
    private var completion: (@Sendable (HTTPResult) -> Void)?
    let startedAt: UInt64
    var timings = HTTPTimings()
    var enqueuedAt: UInt64 = 0
    var writtenAt: UInt64 = 0
    var firstByteAt: UInt64 = 0
    var timer: LoopTimer?
    /// The connection carrying it, once assigned; cleared when it finishes.
    var connection: HTTPConnection?
    /// A kept-alive connection the server had closed: retried once on a fresh one.
    var retriedStale = false
    /// Its place in its pool's wait queue while it waits for a connection (see `ConnectionPool`).
    var waitTicket: Int?

    init(request: HTTPClientRequest, completion: @escaping @Sendable (HTTPResult) -> Void, startedAt: UInt64) {
        self.request = request
        self.completion = completion
        self.startedAt = startedAt
    }

    var isFinished: Bool { completion == nil }

    func finish(now: UInt64 = Monotonic.now(), _ result: (HTTPTimings) -> HTTPResult) {
        guard let completion else { return }
        self.completion = nil
        connection = nil
        timer?.cancel()
        timer = nil
        timings.total = now - startedAt
        completion(result(timings))
    }

    /// Appends the request's bytes on the wire to `bytes`.
    func serialize(into bytes: inout [UInt8]) {
        bytes.reserveCapacity(256 + request.body.count)
        bytes.append(contentsOf: request.method.utf8)
        bytes.append(32)
        bytes.append(contentsOf: request.url.path.utf8)
        bytes.append(contentsOf: " HTTP/1.1\r\nHost: ".utf8)
        bytes.append(contentsOf: request.url.origin.hostHeader.utf8)
        bytes.append(contentsOf: "\r\n".utf8)
        var hasLength = false
        for header in request.headers {
            if header.name.isASCII(caseInsensitivelyEqualTo: "host") { continue }
            if header.name.isASCII(caseInsensitivelyEqualTo: "content-length") { hasLength = true }
            bytes.append(contentsOf: header.name.utf8)
            bytes.append(contentsOf: ": ".utf8)
            bytes.append(contentsOf: header.value.utf8)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        if !hasLength && (!request.body.isEmpty || request.method == "POST" || request.method == "PUT" || request.method == "PATCH") {
            bytes.append(contentsOf: "Content-Length: ".utf8)
            appendDecimal(request.body.count, to: &bytes)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        bytes.append(contentsOf: "\r\n".utf8)
        bytes.append(contentsOf: request.body)
    }

    /// Writes `value` in decimal without making a String.
    private func appendDecimal(_ value: Int, to bytes: inout [UInt8]) {
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = max(0, value)
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = UInt8(48 + rest % 10)
                rest /= 10
                count += 1
            } while rest > 0
            for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(buffer[index]) }
        }
    }
}

/// The connections to one origin from one source address, on one loop.
final class ConnectionPool: @unchecked Sendable {
    let key: PoolKey
    let loop: EventLoop
    let client: HTTPClient
    /// Idle connections, longest idle first (a request takes the last: the warmest).
    private var idle: [HTTPConnection] = []
    /// One timer for the pool's idle connections, due when the longest idle one expires: a timer
    /// armed and cancelled for every idle spell was two allocations and a heap entry a request
    /// at rates the pool keeps up with.
    private var idleSweep: LoopTimer?
    /// Requests waiting for a connection, oldest first, from `waitingStart` on. A request whose
    /// time ran out while it waited leaves at once: its slot becomes nil (dropping the request and
    /// its body), and `waitingCount` counts only the live ones, so no connection is opened for it.
    /// Slots are numbered by ticket (`ticketBase` + position), so they stay valid when the queue's
    /// spent front is cut off.
    private var waiting: [Exchange?] = []
    private var waitingStart = 0
    private var ticketBase = 0
    private var waitingCount = 0
    private var open = 0
    private var connecting = 0

    init(key: PoolKey, loop: EventLoop, client: HTTPClient) {
        self.key = key
        self.loop = loop
        self.client = client
    }

    func submit(_ exchange: Exchange, atFront: Bool = false) {
        let now = Monotonic.now()
        if exchange.timer == nil {
            // Strong captures: the closure goes when the timer fires or is cancelled at the end.
            exchange.timer = loop.schedule(at: exchange.startedAt &+ exchange.request.timeoutNanoseconds) { [self, exchange] in
                timedOut(exchange)
            }
        }
        exchange.enqueuedAt = now
        while let connection = idle.popLast() {
            if connection.isUsable {
                connection.send(exchange, now: now)
                return
            }
            connectionGone(connection)
        }
        if atFront && waitingStart > 0 {
            waitingStart -= 1
            waiting[waitingStart] = exchange
            exchange.waitTicket = ticketBase + waitingStart
        } else {
            exchange.waitTicket = ticketBase + waiting.count
            waiting.append(exchange)
        }
        waitingCount += 1
        openIfNeeded()
    }

    /// A connection finished its exchange (or opened) and can take the next.
    func connectionReady(_ connection: HTTPConnection) {
        if let next = takeWaiting() {
            connection.send(next)
        } else if client.poolsWaitForBudget {
            // Another pool has requests and no connection: this one closes to make room.
            connection.close()
            connectionGone(connection)
        } else {
            connection.idleSince = Monotonic.now()
            idle.append(connection)
            armIdleSweep()
        }
    }

    /// Arms the sweep for the longest idle connection, unless it is armed.
    private func armIdleSweep() {
        guard idleSweep == nil, let oldest = idle.first else { return }
        // A strong capture: the timer is the pool's, and lets it go when it fires.
        idleSweep = loop.schedule(at: oldest.idleSince &+ client.configuration.idleTimeoutNanoseconds) { [self] in
            idleSweep = nil
            closeExpiredIdle(now: Monotonic.now())
            armIdleSweep()
        }
    }

    /// Closes the connections unused for the idle timeout: a prefix of `idle`, which is in the
    /// order they became idle.
    private func closeExpiredIdle(now: UInt64) {
        let timeout = client.configuration.idleTimeoutNanoseconds
        let expired = idle.prefix { now &- $0.idleSince >= timeout }
        for connection in expired {
            connection.close()
            connectionGone(connection)
        }
    }

    /// A connection closed; its exchange, if any, was already dealt with.
    func connectionGone(_ connection: HTTPConnection) {
        idle.removeAll { $0 === connection }
        open -= 1
        client.releaseConnection()
        openIfNeeded()
    }

    /// A connection could not be opened: the request that asked for it fails with the reason.
    func connectFailed(_ connection: HTTPConnection, error: NetError) {
        connecting -= 1
        open -= 1
        client.releaseConnection()
        if let exchange = takeWaiting() {
            exchange.finish { .failure(error, $0) }
        }
        openIfNeeded()
    }

    /// The process-wide budget has room again.
    func budgetAvailable() {
        if waitingCount == 0 {
            client.passBudgetTurn()
        } else {
            openIfNeeded()
        }
    }

    func connectSucceeded(_ connection: HTTPConnection) {
        connecting -= 1
    }

    /// Closes the longest-idle connection; false when none is idle.
    func closeOneIdle() -> Bool {
        guard !idle.isEmpty else { return false }
        let connection = idle.removeFirst()
        connection.close()
        open -= 1
        client.releaseConnection()
        return true
    }

    func closeIdle() {
        idleSweep?.cancel()
        idleSweep = nil
        let closing = idle
        idle.removeAll()
        for connection in closing {
            connection.close()
            open -= 1
            client.releaseConnection()
        }
    }

    private func takeWaiting() -> Exchange? {
        while waitingStart < waiting.count {
            // Moved out (no retain and release of the exchange on the way).
            let slot = waiting[waitingStart].take()
            waitingStart += 1
            if waitingStart == waiting.count {
                ticketBase += waiting.count
                waiting.removeAll(keepingCapacity: true)
                waitingStart = 0
            } else if waitingStart >= 1_024 && waitingStart * 2 >= waiting.count {
                // Under a lasting overload the queue never drains: cut off its spent front.
                ticketBase += waitingStart
                waiting.removeFirst(waitingStart)
                waitingStart = 0
            }
            guard let exchange = slot else { continue }  // timed out while waiting
            waitingCount -= 1
            exchange.waitTicket = nil
            if exchange.isFinished { continue }
            exchange.timings.queued += Monotonic.now() - exchange.enqueuedAt
            return exchange
        }
        return nil
    }

    var waitQueue: (waiting: Int, held: Int) {
        (waitingCount, waiting[waitingStart...].reduce(0) { $0 + ($1 == nil ? 0 : 1) })
    }

    /// A waiting request whose time ran out leaves the queue now, not when its turn comes.
    private func leaveQueue(_ exchange: Exchange) {
        guard let ticket = exchange.waitTicket else { return }
        exchange.waitTicket = nil
        let position = ticket - ticketBase
        guard position >= waitingStart, position < waiting.count, waiting[position] === exchange else { return }
        waiting[position] = nil
        waitingCount -= 1
    }

    private func openIfNeeded() {
        while connecting < waitingCount && open < client.configuration.maxConnectionsPerPool {
            let address: SocketAddress
            switch client.address(of: key.origin) {
            case .success(let value): address = value
            case .failure(let error):
                takeWaiting()?.finish { .failure(error, $0) }
                continue
            }
            guard client.reserveConnection(for: self) else { return }
            open += 1
            connecting += 1
            let connection = HTTPConnection(pool: self, limits: client.configuration.limits)
            connection.connect(to: address, tls: key.origin.isTLS ? (client.configuration.tls ?? DefaultTLS.context) : nil)
        }
    }

    private func timedOut(_ exchange: Exchange) {
        guard !exchange.isFinished else { return }
        leaveQueue(exchange)
        if let connection = exchange.connection {
            // The answer may still come; the connection cannot be reused for the next request.
            connection.abandon()
        }
        exchange.finish { .timeout($0) }
    }
}

/// The TLS context used when a client was made without one: system roots, verification on.
enum DefaultTLS {
    static let context: TLSContext? = try? TLSContext()
}

/// One HTTP/1.1 connection of a pool, carrying one exchange at a time.
final class HTTPConnection: ConnectionDelegate, @unchecked Sendable {
    private let pool: ConnectionPool
    private var connection: Connection?
    private var parser: HTTPParser
    private var current: Exchange?
    private var connectTimer: LoopTimer?
    private var connectStartedAt: UInt64 = 0
    private var exchangesCarried = 0
    private var receivedForCurrent = false
    private var isOpened = false

    init(pool: ConnectionPool, limits: HTTPParser.Limits) {
        self.pool = pool
        parser = HTTPParser(kind: .response, limits: limits)
    }

    var isUsable: Bool { connection?.isOpen ?? false }

    func connect(to address: SocketAddress, tls: TLSContext?) {
        connectStartedAt = Monotonic.now()
        let result = Connection.connect(
            on: pool.loop, to: address, from: pool.key.source, tls: tls, hostName: pool.key.origin.host, delegate: self
        )
        switch result {
        case .success(let connection):
            self.connection = connection
            // A strong capture, let go when the timer fires or is cancelled (opened, closed): a
            // weak one gave every connection a side table, and each retain of it the slow path.
            connectTimer = pool.loop.schedule(afterNanoseconds: pool.client.configuration.connectTimeoutNanoseconds) { [self] in
                guard let connection = self.connection, !self.isOpened else { return }
                connection.close()
                self.connection = nil
                self.pool.connectFailed(self, error: NetError(.connectTimeout, detail: "no connection to \(address) within the connect timeout"))
            }
        case .failure(let error):
            // Report on the next turn so that the pool is not re-entered while it opens.
            pool.loop.enqueue { [self] in pool.connectFailed(self, error: error) }
        }
    }

    func send(_ exchange: Exchange, now: UInt64 = Monotonic.now()) {
        current = exchange
        exchange.connection = self
        receivedForCurrent = false
        parser.expectingHeadResponse = exchange.request.method == "HEAD"
        exchange.writtenAt = now
        connection?.write { exchange.serialize(into: &$0) }
    }

    /// When it last became idle in its pool (monotonic nanoseconds).
    var idleSince: UInt64 = 0

    /// Gives up the current exchange (timed out): the connection is closed, not reused.
    func abandon() {
        current = nil
        close()
        pool.connectionGone(self)
    }

    func close() {
        connectTimer?.cancel()
        connection?.close()
        connection = nil
    }

    // MARK: ConnectionDelegate

    func connectionOpened(_ connection: Connection) {
        isOpened = true
        connectTimer?.cancel()
        connectTimer = nil
        pool.connectSucceeded(self)
        let connectTime = Monotonic.now() - connectStartedAt
        pool.connectionReady(self)
        current?.timings.connect += connectTime
        current?.timings.connectionsOpened += 1
    }

    func connection(_ connection: Connection, read bytes: UnsafeRawBufferPointer) {
        guard let exchange = current else {
            // Bytes with no request outstanding: the server is confused; do not reuse.
            close()
            pool.connectionGone(self)
            return
        }
        let now = Monotonic.now()
        if !receivedForCurrent {
            receivedForCurrent = true
            exchange.firstByteAt = now
        }
        parser.append(bytes)
        do {
            // RFC 9110 section 15.2: a client parses and skips interim answers (100 Continue,
            // 103 Early Hints) before the final one. 101 ends HTTP on the connection; no request
            // of this client asks for it, so it is final here (WebSocketClient asks for it).
            while let message = try parser.next() {
                if message.isInterim { continue }
                return complete(exchange, with: message, now: now)
            }
        } catch {
            current = nil
            close()
            pool.connectionGone(self)
            exchange.finish { .failure(NetError(.malformedResponse, detail: error.reason), $0) }
        }
    }

    func connectionClosed(_ connection: Connection, error: NetError?) {
        self.connection = nil
        connectTimer?.cancel()
        guard isOpened else {
            pool.connectFailed(self, error: error ?? NetError(.connectionRefused, detail: "closed while connecting"))
            return
        }
        let exchange = current
        current = nil
        pool.connectionGone(self)
        guard let exchange, !exchange.isFinished else { return }
        if error == nil, let message = parser.finishAtEOF() {
            finishExchange(exchange, with: message)
            return
        }
        if exchangesCarried > 0 && !receivedForCurrent && !exchange.retriedStale {
            // The server closed a kept-alive connection as the request went out (RFC 9112
            // section 9.3.1): the request never reached it, so it is sent once more.
            exchange.retriedStale = true
            exchange.connection = nil
            pool.submit(exchange, atFront: true)
            return
        }
        let failure = error ?? NetError(.closedBeforeResponse, detail: "the server closed the connection before a complete response")
        exchange.finish { .failure(failure, $0) }
    }

    private func complete(_ exchange: Exchange, with message: HTTPMessage, now: UInt64) {
        current = nil
        exchangesCarried += 1
        if message.keepAlive && parser.isIdle, connection?.isOpen == true {
            pool.connectionReady(self)
        } else {
            close()
            pool.connectionGone(self)
        }
        finishExchange(exchange, with: message, now: now)
    }

    private func finishExchange(_ exchange: Exchange, with message: HTTPMessage, now: UInt64 = Monotonic.now()) {
        exchange.timings.firstByte += exchange.firstByteAt > exchange.writtenAt ? exchange.firstByteAt - exchange.writtenAt : 0
        exchange.timings.service += now - exchange.writtenAt
        let status = Int(message.startLine.1) ?? 0
        let response = Response(status: status, headers: message.headers, body: message.body)
        exchange.finish(now: now) { .response(response, $0) }
    }
}

extension String {
    /// ASCII case-insensitive equality with a lowercase literal, without allocating.
    func isASCII(caseInsensitivelyEqualTo lowercase: String) -> Bool {
        guard utf8.count == lowercase.utf8.count else { return false }
        return withContiguousUTF8 { bytes in
            lowercase.withContiguousUTF8 { expected in
                for index in 0..<bytes.count {
                    let byte = bytes[index]
                    if (byte >= 65 && byte <= 90 ? byte + 32 : byte) != expected[index] { return false }
                }
                return true
            }
        }
    }
}
