/// Each install's own HTTP connections in simulated time (`network.connections: perDevice`), kept
/// by the rules wall time's client keeps them (docs/connections.md): a request takes the install's
/// warmest free connection, or opens one while fewer than its stack allows are open, or waits for
/// the first to free; a connection idle for its stack's timeout closes (one sweep an install, due
/// at its first expiry, as a wall pool's idle sweep); the app's process death and iOS suspension
/// close them all, a busy one once its answer is in. What it decides goes to the run as connection
/// events at the instants they happen, as a wall run's transport tells them.
///
/// Opening one costs what the transport's `open` says (`network.rtt`'s round trips, the edge's
/// queue for a full TLS handshake), or fails when that passes the client's connect timeout.
struct SimulatedConnections {
    private struct Open {
        /// When its current exchange ends (free from then on).
        var freeAt: Instant
        /// When it was last used (idle since, once free).
        var lastUsed: Instant
    }

    private struct Install {
        var open: [Open] = []
        /// The sweep due for its idle connections (its token), if one is.
        var sweep: UInt64?
    }

    /// What happened, and the sweep the run should call back for (`sweep`), if one is due.
    struct Outcome {
        var events: [(Instant, ConnectionEvent)] = []
        var sweep: (token: UInt64, device: Int, at: Instant)?
    }

    /// Per install, its connections; an install without any has no entry.
    private var installs: [Int: Install] = [:]
    /// The stack of each device from `firstDevice`, which keeps its connections.
    private let stacks: [ConnectionStack]
    private let firstDevice: Int

    init(stacks: [ConnectionStack], firstDevice: Int) {
        self.stacks = stacks
        self.firstDevice = firstDevice
    }

    /// How a new connection opened, as the transport's network and the service's edge decide.
    enum Opening {
        /// Connected after `time` (TCP and TLS), with the TLS handshake it did.
        case connected(time: TimeSpan, tls: TLSHandshake?)
        /// Gave up after `after` (the client's connect timeout).
        case timedOut(after: TimeSpan)
    }

    /// The connection a request goes out on, until `release` says how long it holds it.
    struct Acquired {
        fileprivate var slot: Int
        /// When the request reaches the service: now, after opening a connection, or after
        /// waiting for one of the stack's connections to free.
        var start: Instant
        /// The new connection's opening time; nil on a kept-alive one.
        var connectTime: TimeSpan?
    }

    /// The connection device `device`'s request at `now` goes out on: its warmest free one, a new
    /// one (opened by `open`) while fewer than its stack allows are open, else the first to free.
    /// Nil, after how long, when opening one timed out.
    mutating func acquire(device: Int, at now: Instant, open opening: () -> Opening, into outcome: inout Outcome) -> Result<Acquired, TimedOut> {
        let stack = stacks[device - firstDevice]
        var install = installs[device] ?? Install()
        removeExpired(&install.open, idle: stack.idleTimeout, at: now, into: &outcome)
        defer { installs[device] = install.open.isEmpty && install.sweep == nil ? nil : install }
        let open = install.open
        if let warmest = open.indices.filter({ open[$0].freeAt <= now }).max(by: { open[$0].lastUsed < open[$1].lastUsed }) {
            return .success(Acquired(slot: warmest, start: now, connectTime: nil))
        }
        if open.count < max(1, stack.maxConnectionsPerHost) {
            switch opening() {
            case .timedOut(let after):
                outcome.events.append((now + after, .handshakeTimedOut))
                return .failure(TimedOut(after: after))
            case .connected(let time, let tls):
                install.open.append(Open(freeAt: now + time, lastUsed: now + time))
                outcome.events.append((now + time, .opened(tls: tls)))
                return .success(Acquired(slot: install.open.count - 1, start: now + time, connectTime: time))
            }
        }
        // Every connection busy: the request waits for the first to free.
        let first = open.indices.min { open[$0].freeAt < open[$1].freeAt }!
        return .success(Acquired(slot: first, start: open[first].freeAt, connectTime: nil))
    }

    struct TimedOut: Error {
        var after: TimeSpan
    }

    /// The request that `acquired` its connection holds it until `until`; `token` names the
    /// install's idle sweep, should one be armed.
    mutating func release(device: Int, _ acquired: Acquired, until: Instant, token: UInt64, into outcome: inout Outcome) {
        guard var install = installs[device], install.open.indices.contains(acquired.slot) else { return }
        install.open[acquired.slot].freeAt = until
        install.open[acquired.slot].lastUsed = until
        if install.sweep == nil {
            install.sweep = token
            outcome.sweep = (token, device, Self.firstExpiry(install.open, idle: stacks[device - firstDevice].idleTimeout))
        }
        installs[device] = install
    }

    /// The sweep `token` of device `device` is due: its connections idle for the stack's timeout
    /// close, and the next sweep is armed (with `next`) while any is open.
    mutating func sweep(device: Int, token: UInt64, at now: Instant, next: UInt64, into outcome: inout Outcome) {
        guard var install = installs[device], install.sweep == token else { return }
        let idle = stacks[device - firstDevice].idleTimeout
        removeExpired(&install.open, idle: idle, at: now, into: &outcome)
        if install.open.isEmpty {
            installs[device] = nil
            return
        }
        install.sweep = next
        outcome.sweep = (next, device, Self.firstExpiry(install.open, idle: idle))
        installs[device] = install
    }

    /// Device `device`'s connections close for `reason`: idle ones now, busy ones when their
    /// exchange ends (its pending sweep finds nothing).
    mutating func close(device: Int, reason: ConnectionCloseReason, at now: Instant, into outcome: inout Outcome) {
        guard var install = installs.removeValue(forKey: device) else { return }
        removeExpired(&install.open, idle: stacks[device - firstDevice].idleTimeout, at: now, into: &outcome)
        for connection in install.open { outcome.events.append((max(now, connection.freeAt), .closed(reason))) }
    }

    private func removeExpired(_ open: inout [Open], idle: TimeSpan, at now: Instant, into outcome: inout Outcome) {
        open.removeAll { connection in
            let expiry = connection.lastUsed + idle
            guard connection.freeAt <= now, expiry <= now else { return false }
            outcome.events.append((expiry, .closed(.idle)))
            return true
        }
    }

    private static func firstExpiry(_ open: [Open], idle: TimeSpan) -> Instant {
        open.map { $0.lastUsed + idle }.min() ?? .start
    }
}
