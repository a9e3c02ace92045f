import PushSwarmCore
import PushSwarmSystem
import PushSwarmMetrics
import Synchronization

/// The connections to one origin from one source address (or one install's own, `key.owner`), on
/// one loop: `PoolState`'s decisions carried out with sockets, timers and the process's
/// connection budget.
final class ConnectionPool: @unchecked Sendable {
    let key: PoolKey
    let loop: EventLoop
    let client: HTTPClient
    /// The loop's pools, which forget an install's pool once it is empty.
    private let home: LoopState
    private var state: PoolState<HTTPConnection, Exchange>
    /// One timer for the pool's idle connections, due when the longest idle one expires: a timer
    /// armed and cancelled for every idle spell was two allocations and a heap entry a request
    /// at rates the pool keeps up with.
    private var idleSweep: LoopTimer?
    /// Set once the pool's install's connections were closed (`retire`): out of its loop's table,
    /// it finishes what it holds and closes each connection as it frees.
    private var retiredFor: ConnectionCloseReason?

    init(key: PoolKey, owner: ConnectionOwner?, home: LoopState, client: HTTPClient) {
        self.key = key
        loop = home.loop
        self.home = home
        self.client = client
        state = PoolState(
            maxConnections: owner?.maxConnections ?? client.configuration.maxConnectionsPerPool,
            idleTimeout: owner?.idleTimeoutNanoseconds ?? client.configuration.idleTimeoutNanoseconds
        )
        let versions = client.configuration.httpVersions
        state.opensOneAtATime = versions.assumesHTTP2 || versions.mayNegotiateHTTP2(tls: key.origin.isTLS)
    }

    /// The HTTP/2 connection that takes new requests as streams while it carries some (an idle
    /// one is in the idle list, as an HTTP/1.1 one is).
    private var multiplexed: HTTPConnection?

    /// A connection opened and its protocol is known: an HTTP/2 origin's requests wait for one
    /// connection; an HTTP/1.1 origin's open a connection each, up to the pool's limit.
    func learned(http2: Bool) {
        guard state.opensOneAtATime != http2 else { return }
        state.opensOneAtATime = http2
        openIfNeeded()
    }

    /// An install's pool with nothing open and nothing waiting leaves its loop's table; the next
    /// request of that install makes a new one (with no connection, as after the idle timeout).
    private func forgetIfEmpty() {
        guard key.owner != nil, state.open == 0, state.waitingCount == 0 else { return }
        idleSweep?.cancel()
        idleSweep = nil
        if live.isEmpty {
            deadlineSweep?.cancel()
            deadlineSweep = nil
            sweepAt = .max
        }
        home.forget(self)
    }

    /// The exchanges the pool holds, waiting or on a connection, until each finishes: their
    /// timeouts are deadlines swept by one timer, `deadlineSweep`, due at the earliest (or
    /// earlier). A timer armed and cancelled for every request was two allocations and two heap
    /// operations a request; the sweep fires about once a timeout's length, finds most of what it
    /// was armed for already answered, and arms for the earliest deadline left.
    private var live: [Exchange] = []
    private var deadlineSweep: LoopTimer?
    /// When `deadlineSweep` is due; `UInt64.max` when none is armed.
    private var sweepAt = UInt64.max

    /// `exchange` finished: out of the live list (the last one takes its place).
    func ended(_ exchange: Exchange) {
        let index = exchange.liveIndex
        guard index >= 0, index < live.count, live[index] === exchange else { return }
        let last = live.removeLast()
        if index < live.count {
            live[index] = last
            last.liveIndex = index
        }
        exchange.liveIndex = -1
    }

    /// Arms the sweep for `deadline`, unless one is due by then.
    private func armDeadlineSweep(at deadline: UInt64) {
        guard deadline < sweepAt else { return }
        deadlineSweep?.cancel()
        sweepAt = deadline
        // A strong capture: the timer is the pool's, and lets it go when it fires.
        deadlineSweep = loop.schedule(at: deadline) { [self] in
            deadlineSweep = nil
            sweepAt = .max
            let now = loop.now
            for exchange in live.filter({ $0.deadline <= now }) { timedOut(exchange) }
            if let next = live.lazy.map(\.deadline).min() { armDeadlineSweep(at: next) }
        }
    }

    func submit(_ exchange: Exchange, atFront: Bool = false) {
        let now = loop.now
        if exchange.deadlines == nil {
            exchange.deadlines = self
            exchange.liveIndex = live.count
            live.append(exchange)
            armDeadlineSweep(at: exchange.deadline)
        }
        exchange.enqueuedAt = now
        if let shared = multiplexed {
            if shared.canTakeRequest {
                shared.send(exchange, now: now)
                if !shared.canTakeRequest { multiplexed = nil }
                return
            }
            multiplexed = nil
        }
        while let connection = state.takeIdle() {
            if connection.isUsable {
                connection.send(exchange, now: now)
                if connection.isMultiplexed && connection.canTakeRequest { multiplexed = connection }
                return
            }
            connectionGone(connection)
        }
        exchange.waitTicket = state.wait(exchange, atFront: atFront)
        openIfNeeded()
    }

    /// A connection finished an exchange (or opened) and can take the next; an HTTP/2 one takes
    /// waiting requests up to its streams' limit, and idles once it carries none.
    func connectionReady(_ connection: HTTPConnection) {
        if connection.isMultiplexed {
            let now = loop.now
            while connection.canTakeRequest, let next = takeWaiting() { connection.send(next, now: now) }
            if connection.activeRequests > 0 {
                if connection.canTakeRequest && retiredFor == nil {
                    multiplexed = connection
                } else if multiplexed === connection {
                    multiplexed = nil
                }
                return
            }
            if multiplexed === connection { multiplexed = nil }
            if !connection.canTakeRequest {
                // Going away (GOAWAY) with nothing left on it: closed, and a new one takes its place.
                connection.close(for: .serverClosed)
                connectionGone(connection)
                return
            }
        } else if let next = takeWaiting() {
            connection.send(next, now: loop.now)
            return
        }
        if let reason = retiredFor {
            connection.close(for: reason)
            connectionGone(connection)
        } else if client.poolsWaitForBudget {
            // Another pool has requests and no connection: this one closes to make room.
            connection.close(for: .budget)
            connectionGone(connection)
        } else {
            state.becameIdle(connection, at: loop.now)
            armIdleSweep()
        }
    }

    /// Arms the sweep for the longest idle connection, unless it is armed.
    private func armIdleSweep() {
        guard idleSweep == nil, let due = state.nextExpiry else { return }
        // A strong capture: the timer is the pool's, and lets it go when it fires.
        idleSweep = loop.schedule(at: due) { [self] in
            idleSweep = nil
            for connection in state.expired(at: loop.now) {
                connection.close(for: .idle)
                released()
            }
            armIdleSweep()
            forgetIfEmpty()
        }
    }

    /// A connection left the pool's count: the budget gets it back, and a waiting request may
    /// get a connection.
    private func released() {
        client.releaseConnection()
        openIfNeeded()
    }

    /// A connection closed; its exchange, if any, was already dealt with.
    func connectionGone(_ connection: HTTPConnection) {
        if multiplexed === connection { multiplexed = nil }
        state.closed(connection)
        released()
        forgetIfEmpty()
    }

    /// A connection could not be opened: the request that asked for it fails with the reason.
    func connectFailed(_ connection: HTTPConnection, error: NetError) {
        // What the edge did to the opening, counted as simulated time's edge counts it.
        switch error.reason {
        case .connectionRefused: tell(.refused)
        case .connectTimeout: tell(.handshakeTimedOut)
        default: break
        }
        state.openFailed()
        client.releaseConnection()
        if let exchange = takeWaiting() {
            exchange.finish(now: loop.now) { .failure(error, $0) }
        }
        openIfNeeded()
        forgetIfEmpty()
    }

    /// The process-wide budget has room again.
    func budgetAvailable() {
        if state.waitingCount == 0 {
            client.passBudgetTurn()
        } else {
            openIfNeeded()
        }
    }

    func connectSucceeded(_ connection: HTTPConnection) {
        state.opened()
    }

    /// Closes the longest-idle connection; false when none is idle.
    func closeOneIdle() -> Bool {
        guard let connection = state.takeOldestIdle() else { return false }
        connection.close(for: .budget)
        client.releaseConnection()
        forgetIfEmpty()
        return true
    }

    /// The install's connections close for `reason` (its process died, or it was suspended): the
    /// pool leaves its loop's table, so its next request opens a new connection in a new pool;
    /// idle connections close now, and busy ones once they have carried their exchange and any
    /// request waiting here (a request already made is answered, not lost).
    func retire(_ reason: ConnectionCloseReason) {
        guard retiredFor == nil else { return }
        retiredFor = reason
        multiplexed = nil
        home.forget(self)
        idleSweep?.cancel()
        idleSweep = nil
        for connection in state.takeAllIdle() {
            connection.close(for: reason)
            client.releaseConnection()
        }
    }

    /// The TLS session its next connection offers to resume: the install's own (its process's
    /// memory, kept across its pools until the process dies), or the pool's for an address's
    /// shared pool.
    var savedTLSSession: TLSSavedSession? {
        get { key.owner.map { home.savedSession(of: $0) } ?? sharedSession }
        set {
            if let owner = key.owner { home.keep(newValue, for: owner) } else { sharedSession = newValue }
        }
    }
    private var sharedSession: TLSSavedSession?

    /// Tells the loop's watcher of a connection event.
    func tell(_ event: ConnectionEvent) { home.tell(event) }

    func closeIdle() {
        idleSweep?.cancel()
        idleSweep = nil
        for connection in state.takeAllIdle() {
            connection.close()
            client.releaseConnection()
        }
        forgetIfEmpty()
    }

    private func takeWaiting() -> Exchange? {
        while let exchange = state.nextWaiting() {
            exchange.waitTicket = nil
            if exchange.isFinished { continue }
            exchange.timings.queued += loop.now - exchange.enqueuedAt
            return exchange
        }
        return nil
    }

    var waitQueue: (waiting: Int, held: Int) {
        (state.waitingCount, state.waitingHeld)
    }

    /// A waiting request whose time ran out leaves the queue now, not when its turn comes.
    private func leaveQueue(_ exchange: Exchange) {
        guard let ticket = exchange.waitTicket else { return }
        exchange.waitTicket = nil
        state.leave(exchange, ticket: ticket)
    }

    private func openIfNeeded() {
        while state.wantsConnection {
            let address: SocketAddress
            switch client.address(of: key.origin) {
            case .success(let value): address = value
            case .failure(let error):
                takeWaiting()?.finish(now: loop.now) { .failure(error, $0) }
                continue
            }
            guard client.reserveConnection(for: self) else { return }
            state.opening()
            let connection = HTTPConnection(pool: self, limits: client.configuration.limits)
            connection.connect(
                to: address, tls: key.origin.isTLS ? (client.configuration.tls ?? DefaultTLS.context) : nil,
                alpn: client.configuration.httpVersions.alpnOffer
            )
        }
    }

    private func timedOut(_ exchange: Exchange) {
        guard !exchange.isFinished else { return }
        leaveQueue(exchange)
        if let connection = exchange.connection {
            // The answer may still come: HTTP/1.1's connection cannot be reused for the next
            // request; HTTP/2 cancels the stream.
            connection.abandon(exchange)
        }
        exchange.finish(now: loop.now) { .timeout($0) }
        forgetIfEmpty()
    }
}
