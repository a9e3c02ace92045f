/// Each install's own HTTP connections in simulated time (`network.connections: perDevice`), kept
/// by the rules wall time's client keeps them (docs/connections.md): a request takes the install's
/// warmest free connection, or opens one while fewer than its stack allows are open, or waits for
/// the first to free; a connection idle for its stack's timeout closes (one sweep an install, due
/// at its first expiry, as a wall pool's idle sweep); the app's process death and iOS suspension
/// close them all, a busy one once its answer is in. What it decides goes to the run as connection
/// events at the instants they happen, as a wall run's transport tells them.
///
/// Connections cost no time here (the simulated network has no round trips yet): a new
/// connection's request is timed as a reused one's.
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

    /// The connection device `device`'s request at `now` goes out on, lasting `duration` once it
    /// starts: when it starts (later than `now` when it waits for one of the stack's connections),
    /// and whether it opened a new connection. `token` names the sweep, should one be armed.
    mutating func take(device: Int, at now: Instant, for duration: TimeSpan, token: UInt64, into outcome: inout Outcome) -> (start: Instant, opened: Bool) {
        let stack = stacks[device - firstDevice]
        var install = installs[device] ?? Install()
        removeExpired(&install.open, idle: stack.idleTimeout, at: now, into: &outcome)
        var open = install.open
        let start: Instant
        let opened: Bool
        if let warmest = open.indices.filter({ open[$0].freeAt <= now }).max(by: { open[$0].lastUsed < open[$1].lastUsed }) {
            (start, opened) = (now, false)
            open[warmest].freeAt = now + duration
            open[warmest].lastUsed = now + duration
        } else if open.count < max(1, stack.maxConnectionsPerHost) {
            (start, opened) = (now, true)
            open.append(Open(freeAt: now + duration, lastUsed: now + duration))
            outcome.events.append((now, .opened(tls: nil)))
        } else {
            // Every connection busy: the request waits for the first to free.
            let first = open.indices.min { open[$0].freeAt < open[$1].freeAt }!
            (start, opened) = (open[first].freeAt, false)
            open[first].freeAt = start + duration
            open[first].lastUsed = start + duration
        }
        install.open = open
        if install.sweep == nil {
            install.sweep = token
            outcome.sweep = (token, device, Self.firstExpiry(open, idle: stack.idleTimeout))
        }
        installs[device] = install
        return (start, opened)
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
