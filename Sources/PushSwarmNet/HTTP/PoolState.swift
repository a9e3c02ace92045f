/// What one connection pool knows and decides, apart from its sockets, timers and the process's
/// connection budget: which request a free connection takes, when another connection is wanted,
/// which idle connections have expired. `ConnectionPool` carries the decisions out on its loop;
/// this value is tested alone (`PoolStateTests`), as SwiftNIO and AsyncHTTPClient test their
/// pools' state machines.
///
/// Connections are counted from the moment one is asked for (`opening`) until it is gone
/// (`closed`, `openFailed`, or taken out by `expired`, `takeOldestIdle`, `takeAllIdle`), so
/// `open` never exceeds `maxConnections`.
struct PoolState<Connection: AnyObject, Request: AnyObject> {
    let maxConnections: Int
    let idleTimeout: UInt64
    /// Idle connections, longest idle first, with when each became idle: a request takes the
    /// last (the warmest), and those that expire are a prefix.
    private var idle: [(connection: Connection, since: UInt64)] = []
    /// Requests waiting for a connection; one whose time runs out leaves at once.
    private var waiting = WaitQueue<Request>()
    /// Connections counted: connecting, busy or idle.
    private(set) var open = 0
    /// Of those, not yet connected.
    private(set) var connecting = 0

    init(maxConnections: Int, idleTimeout: UInt64) {
        self.maxConnections = maxConnections
        self.idleTimeout = idleTimeout
    }

    // MARK: requests

    /// Requests waiting now.
    var waitingCount: Int { waiting.count }

    /// Request objects the queue still holds: `waitingCount`, unless one was lost track of.
    var waitingHeld: Int { waiting.held }

    /// A request joins the queue (at the front: a retry keeps its turn); its ticket, for `leave`.
    mutating func wait(_ request: Request, atFront: Bool = false) -> Int {
        waiting.push(request, atFront: atFront)
    }

    /// A waiting request leaves now (its time ran out); false when it was no longer waiting.
    @discardableResult
    mutating func leave(_ request: Request, ticket: Int) -> Bool {
        waiting.remove(request, ticket: ticket)
    }

    /// The oldest waiting request, out of the queue: for a connection that became free.
    mutating func nextWaiting() -> Request? {
        waiting.pop()
    }

    // MARK: opening connections

    /// Opens one connection at a time: its origin speaks HTTP/2 (one connection carries every
    /// request as a stream, so requests that wait wait for it, not for a connection each), or may
    /// (ALPN has not said yet: the first connection tells, as browsers wait for it).
    var opensOneAtATime = false

    /// Whether another connection should be opened: fewer are connecting than requests wait (or,
    /// one at a time, none is), and the pool has room.
    var wantsConnection: Bool {
        guard open < maxConnections else { return false }
        return opensOneAtATime ? connecting == 0 && waiting.count > 0 : connecting < waiting.count
    }

    /// A connection is being opened (after the process's budget allowed it).
    mutating func opening() {
        precondition(open < maxConnections, "a pool opened more connections than it may")
        open += 1
        connecting += 1
    }

    /// The connection being opened is connected.
    mutating func opened() {
        connecting -= 1
    }

    /// The connection being opened could not be.
    mutating func openFailed() {
        connecting -= 1
        open -= 1
    }

    // MARK: free, idle and closed connections

    /// Takes the warmest idle connection, for a request.
    mutating func takeIdle() -> Connection? {
        idle.popLast()?.connection
    }

    /// A connection with nothing to do becomes idle at `now`.
    mutating func becameIdle(_ connection: Connection, at now: UInt64) {
        idle.append((connection, now))
    }

    /// When the longest idle connection expires; nil when none is idle.
    var nextExpiry: UInt64? {
        idle.first.map { $0.since &+ idleTimeout }
    }

    /// Takes out the connections idle for the idle timeout at `now`; the caller closes them.
    mutating func expired(at now: UInt64) -> [Connection] {
        let count = idle.prefix { now &- $0.since >= idleTimeout }.count
        guard count > 0 else { return [] }
        let expired = idle.prefix(count).map(\.connection)
        idle.removeFirst(count)
        open -= count
        return expired
    }

    /// Takes out the longest idle connection (another pool needs the budget); the caller closes it.
    mutating func takeOldestIdle() -> Connection? {
        guard !idle.isEmpty else { return nil }
        open -= 1
        return idle.removeFirst().connection
    }

    /// Takes out every idle connection; the caller closes them.
    mutating func takeAllIdle() -> [Connection] {
        let all = idle.map(\.connection)
        idle.removeAll()
        open -= all.count
        return all
    }

    /// A counted connection closed (busy, or idle and found unusable).
    mutating func closed(_ connection: Connection) {
        idle.removeAll { $0.connection === connection }
        open -= 1
    }
}
