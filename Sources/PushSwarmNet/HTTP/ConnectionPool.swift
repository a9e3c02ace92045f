import PushSwarmCore
import PushSwarmMetrics
import Synchronization

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
    /// Requests waiting for a connection; one whose time runs out leaves at once.
    private var waiting = WaitQueue<Exchange>()
    private var open = 0
    private var connecting = 0

    init(key: PoolKey, loop: EventLoop, client: HTTPClient) {
        self.key = key
        self.loop = loop
        self.client = client
    }

    func submit(_ exchange: Exchange, atFront: Bool = false) {
        let now = loop.now
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
        exchange.waitTicket = waiting.push(exchange, atFront: atFront)
        openIfNeeded()
    }

    /// A connection finished its exchange (or opened) and can take the next.
    func connectionReady(_ connection: HTTPConnection) {
        if let next = takeWaiting() {
            connection.send(next, now: loop.now)
        } else if client.poolsWaitForBudget {
            // Another pool has requests and no connection: this one closes to make room.
            connection.close()
            connectionGone(connection)
        } else {
            connection.idleSince = loop.now
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
            closeExpiredIdle(now: loop.now)
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
            exchange.finish(now: loop.now) { .failure(error, $0) }
        }
        openIfNeeded()
    }

    /// The process-wide budget has room again.
    func budgetAvailable() {
        if waiting.count == 0 {
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
        while let exchange = waiting.pop() {
            exchange.waitTicket = nil
            if exchange.isFinished { continue }
            exchange.timings.queued += loop.now - exchange.enqueuedAt
            return exchange
        }
        return nil
    }

    var waitQueue: (waiting: Int, held: Int) {
        (waiting.count, waiting.held)
    }

    /// A waiting request whose time ran out leaves the queue now, not when its turn comes.
    private func leaveQueue(_ exchange: Exchange) {
        guard let ticket = exchange.waitTicket else { return }
        exchange.waitTicket = nil
        waiting.remove(exchange, ticket: ticket)
    }

    private func openIfNeeded() {
        while connecting < waiting.count && open < client.configuration.maxConnectionsPerPool {
            let address: SocketAddress
            switch client.address(of: key.origin) {
            case .success(let value): address = value
            case .failure(let error):
                takeWaiting()?.finish(now: loop.now) { .failure(error, $0) }
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
        exchange.finish(now: loop.now) { .timeout($0) }
    }
}
