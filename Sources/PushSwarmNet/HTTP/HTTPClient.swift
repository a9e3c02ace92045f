public import PushSwarmCore
import PushSwarmSystem
import PushSwarmMetrics
import Synchronization

/// An HTTP client on PushSwarm's event loops: keep-alive pools per (source address, origin) or
/// per install; HTTP/1.1 with Content-Length and chunked bodies, or HTTP/2 (ALPN, or prior
/// knowledge) with every request of a pool a stream on one connection; connect and request
/// timeouts. A 3xx is an answer like any
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
        /// Which HTTP the connections speak: what ALPN agrees over TLS (`h2` first, as phones
        /// offer it), HTTP/2 with prior knowledge, or HTTP/1.1 only.
        public var httpVersions: HTTPVersionPolicy

        public init(
            maxConnectionsPerPool: Int = 64, connectTimeoutNanoseconds: UInt64 = 10_000_000_000, tls: TLSContext? = nil,
            limits: HTTPParser.Limits = HTTPParser.Limits(maxHeaderBytes: 65_536, maxBodyBytes: 16 << 20),
            idleTimeoutNanoseconds: UInt64 = 300_000_000_000, maxOpenConnections: Int = Int.max,
            httpVersions: HTTPVersionPolicy = .negotiate
        ) {
            self.httpVersions = httpVersions
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

    /// Pools across the loops (read on each loop): an install's own pool goes once it is empty.
    func poolCount() async -> Int {
        var total = 0
        for state in states {
            total += await withCheckedContinuation { continuation in
                state.loop.execute { continuation.resume(returning: state.poolCount) }
            }
        }
        return total
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
        let key = PoolKey(source: request.source, origin: request.url.origin, owner: request.owner?.process)
        let state = states[request.loop.map { $0 % states.count } ?? abs(key.hashValue % states.count)]
        let exchange = Exchange(request: request, completion: completion, startedAt: state.loop.now)
        if state.loop.inLoop {
            state.pool(for: key, owner: request.owner, client: self).submit(exchange)
        } else {
            state.loop.enqueue { [self] in state.pool(for: key, owner: request.owner, client: self).submit(exchange) }
        }
    }

    /// Closes the own connections of an install's process on loop number `loop` (where its
    /// requests went) for `reason`. Call on that loop.
    public func closeConnections(owner process: InstallProcess, loop: Int, reason: ConnectionCloseReason) {
        let state = states[loop % states.count]
        precondition(state.loop.inLoop, "closeConnections(owner:) runs on the owner's loop")
        state.closeConnections(owner: process, reason: reason)
    }

    /// Calls `handler` on loop number `loop` for each connection of its pools opened and closed,
    /// each on a turn of the loop of its own.
    public func watchConnections(loop: Int, _ handler: @escaping @Sendable (ConnectionEvent) -> Void) {
        let state = states[loop % states.count]
        state.loop.execute { state.onConnection = handler }
    }

    /// Closes idle connections; call when no request is in flight.
    public func shutdown() {
        for state in states {
            state.loop.execute { state.closeAll() }
        }
    }

    func address(of origin: Origin) -> Result<SocketAddress, NetError> {
        Resolver.address(of: origin)
    }
}

struct PoolKey: Hashable {
    let source: IPAddress?
    let origin: Origin
    /// The install's process whose own pool it is; nil for its source address's shared pool.
    let owner: InstallProcess?
    /// Computed once: a pool is looked up on every request.
    private let hash: Int

    init(source: IPAddress?, origin: Origin, owner: InstallProcess? = nil) {
        self.source = source
        self.origin = origin
        self.owner = owner
        var hasher = Hasher()
        hasher.combine(source)
        hasher.combine(origin)
        hasher.combine(owner)
        hash = hasher.finalize()
    }

    static func == (lhs: PoolKey, rhs: PoolKey) -> Bool {
        lhs.hash == rhs.hash && lhs.owner == rhs.owner && lhs.source == rhs.source && lhs.origin == rhs.origin
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
    /// Each install process's own pools (one per origin it talks to), for closing them all at once.
    private var ownerPools: [InstallProcess: [ConnectionPool]] = [:]
    /// Each install process's TLS session, kept as the process keeps it: across idle timeouts
    /// and suspensions, gone when the process dies (`closeConnections(owner:reason:)`).
    private var ownerSessions: [InstallProcess: TLSSavedSession] = [:]

    func savedSession(of process: InstallProcess) -> TLSSavedSession? { ownerSessions[process] }

    func keep(_ session: TLSSavedSession?, for process: InstallProcess) { ownerSessions[process] = session }

    /// Told of each connection opened and each one closed (by why).
    var onConnection: (@Sendable (ConnectionEvent) -> Void)?

    init(loop: EventLoop) { self.loop = loop }

    func pool(for key: PoolKey, owner: ConnectionOwner? = nil, client: HTTPClient) -> ConnectionPool {
        if let pool = pools[key] { return pool }
        let pool = ConnectionPool(key: key, owner: owner, home: self, client: client)
        pools[key] = pool
        if let process = key.owner { ownerPools[process, default: []].append(pool) }
        return pool
    }

    /// An install's own pool with no connection and no request left goes: a fleet's devices would
    /// otherwise each leave one behind (an address's shared pool stays, one per address).
    func forget(_ pool: ConnectionPool) {
        guard pools[pool.key] === pool else { return }
        pools[pool.key] = nil
        guard let process = pool.key.owner, var owned = ownerPools[process] else { return }
        owned.removeAll { $0 === pool }
        ownerPools[process] = owned.isEmpty ? nil : owned
    }

    /// Closes the own connections of an install's process for `reason`: its pools leave the
    /// table (its next request opens a new connection), idle connections close now, busy ones
    /// once their exchanges and those waiting for them are done.
    func closeConnections(owner process: InstallProcess, reason: ConnectionCloseReason) {
        // A new process has no TLS session: its first connection's handshake is full.
        if reason == .processDied { ownerSessions[process] = nil }
        guard let owned = ownerPools[process] else { return }
        for pool in owned { pool.retire(reason) }
    }

    /// Tells of a connection event (`onConnection`) on the loop's next turn, never from inside the
    /// pool that tells it: a watcher may send requests when it hears of one (a partition does),
    /// and a pool part way through closing a connection must not take them then (it counted the
    /// connection gone twice, and a wall run once never ended, a request lost in such a turn).
    func tell(_ event: ConnectionEvent) {
        guard let onConnection else { return }
        loop.enqueue { onConnection(event) }
    }

    /// Pools on this loop now (a test's view).
    var poolCount: Int { pools.count }

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
