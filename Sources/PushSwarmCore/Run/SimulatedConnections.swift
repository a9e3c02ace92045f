/// Each install's own HTTP connections in simulated time (`network.connections: perDevice`), kept
/// by the rules wall time's client keeps them (docs/connections.md): a request takes the install's
/// warmest free connection, or opens one while fewer than its stack allows are open, or waits for
/// the first to free; a connection idle for its stack's timeout closes (one sweep an install, due
/// at its first expiry, as a wall pool's idle sweep); the app's process death and iOS suspension
/// close them all, a busy one once its answer is in. What it decides goes to the run as connection
/// events at the instants they happen, as a wall run's transport tells them.
///
/// Opening one costs what the transport's `open` says (`network.rtt`'s round trips, the edge's
/// queue for a full TLS handshake), or fails when that passes the client's connect timeout or the
/// edge refuses it.
struct SimulatedConnections {
    private struct Open {
        /// When it is connected (its handshakes done).
        var readyAt: Instant
        /// When its current exchange ends (free from then on); over HTTP/2, its last stream.
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
        /// Each event, when it happens and whose connection it is.
        var events: [(at: Instant, device: Int, event: ConnectionEvent)] = []
        var sweep: (token: UInt64, process: InstallProcess, at: Instant)?
    }

    /// Per install's process (the app, iOS's notification service extension), its connections;
    /// one without any has no entry.
    private var installs: [InstallProcess: Install] = [:]
    /// The stack of each device from `firstDevice`, which keeps its connections.
    private let stacks: [ConnectionStack]
    private let firstDevice: Int

    init(stacks: [ConnectionStack], firstDevice: Int) {
        self.stacks = stacks
        self.firstDevice = firstDevice
    }

    /// How a new connection opened, as the transport's network and the service's edge decide.
    enum Opening {
        /// Connected after `time` (TCP's, then `handshakeTime` of TLS), with the TLS handshake it did.
        case connected(time: TimeSpan, handshakeTime: TimeSpan, tls: TLSHandshake?)
        /// Gave up after `after` (the client's connect timeout).
        case timedOut(after: TimeSpan)
        /// Refused by the edge, known after `after` (its reset's round trip).
        case refused(after: TimeSpan)
    }

    /// The connection a request goes out on, until `release` says how long it holds it.
    struct Acquired {
        fileprivate var slot: Int
        /// An HTTP/2 connection's stream: it does not hold the connection for others.
        var multiplexed = false
        /// When the request reaches the service: now, after opening a connection, or after
        /// waiting for one of the stack's connections to free.
        var start: Instant
        /// The new connection's TCP time, and its TLS handshake's after it; nil on a kept-alive one.
        var connectTime: TimeSpan?
        var handshakeTime: TimeSpan?
    }

    /// The connection the request of `process` at `now` goes out on: its warmest free one, a new
    /// one (opened by `open`) while fewer than its stack allows are open, else the first to free.
    /// A failure, after how long, when opening one timed out or was refused.
    /// `opening` is given the install's stack (its connect timeout).
    /// `multiplexed`: the origin speaks HTTP/2, so the install's one connection carries every
    /// request as a stream from the moment it is connected (as wall time's pool, which opens one
    /// at a time for it; the edge's stream limit is not reached by one install's requests).
    mutating func acquire(
        _ process: InstallProcess, at now: Instant, multiplexed: Bool = false, open opening: (ConnectionStack) -> Opening, into outcome: inout Outcome
    ) -> Result<Acquired, OpenFailed> {
        let device = process.device
        let stack = stacks[device - firstDevice]
        var install = installs[process] ?? Install()
        removeExpired(&install.open, device: device, idle: stack.idleTimeout, at: now, into: &outcome)
        defer { installs[process] = install.open.isEmpty && install.sweep == nil ? nil : install }
        let open = install.open
        if multiplexed, let connection = open.first {
            return .success(Acquired(slot: 0, multiplexed: true, start: max(now, connection.readyAt)))
        }
        if let warmest = open.indices.filter({ open[$0].freeAt <= now }).max(by: { open[$0].lastUsed < open[$1].lastUsed }) {
            return .success(Acquired(slot: warmest, start: now))
        }
        if open.count < max(1, stack.maxConnectionsPerHost) {
            switch opening(stack) {
            case .timedOut(let after):
                outcome.events.append((now + after, device, .handshakeTimedOut))
                return .failure(OpenFailed(after: after, refused: false))
            case .refused(let after):
                outcome.events.append((now + after, device, .refused))
                return .failure(OpenFailed(after: after, refused: true))
            case .connected(let time, let handshakeTime, let tls):
                install.open.append(Open(readyAt: now + time, freeAt: now + time, lastUsed: now + time))
                outcome.events.append((now + time, device, .opened(tls: tls)))
                if multiplexed { outcome.events.append((now + time, device, .speaksHTTP2)) }
                return .success(Acquired(
                    slot: install.open.count - 1, multiplexed: multiplexed, start: now + time, connectTime: time - handshakeTime,
                    handshakeTime: tls == nil ? nil : handshakeTime
                ))
            }
        }
        // Every connection busy: the request waits for the first to free.
        let first = open.indices.min { open[$0].freeAt < open[$1].freeAt }!
        return .success(Acquired(slot: first, start: open[first].freeAt))
    }

    /// An opening that failed: after how long, and whether the edge refused it (else it timed out).
    struct OpenFailed: Error {
        var after: TimeSpan
        var refused: Bool
    }

    /// The request that `acquired` its connection holds it until `until`; `token` names the
    /// install's idle sweep, should one be armed.
    mutating func release(_ process: InstallProcess, _ acquired: Acquired, until: Instant, token: UInt64, into outcome: inout Outcome) {
        guard var install = installs[process], install.open.indices.contains(acquired.slot) else { return }
        // A stream holds its HTTP/2 connection busy until the last stream on it ends.
        install.open[acquired.slot].freeAt = acquired.multiplexed ? max(install.open[acquired.slot].freeAt, until) : until
        install.open[acquired.slot].lastUsed = install.open[acquired.slot].freeAt
        if install.sweep == nil {
            install.sweep = token
            outcome.sweep = (token, process, Self.firstExpiry(install.open, idle: stacks[process.device - firstDevice].idleTimeout))
        }
        installs[process] = install
    }

    /// The sweep `token` of `process` is due: its connections idle for the stack's timeout
    /// close, and the next sweep is armed (with `next`) while any is open.
    mutating func sweep(_ process: InstallProcess, token: UInt64, at now: Instant, next: UInt64, into outcome: inout Outcome) {
        guard var install = installs[process], install.sweep == token else { return }
        let idle = stacks[process.device - firstDevice].idleTimeout
        removeExpired(&install.open, device: process.device, idle: idle, at: now, into: &outcome)
        if install.open.isEmpty {
            installs[process] = nil
            return
        }
        install.sweep = next
        outcome.sweep = (next, process, Self.firstExpiry(install.open, idle: idle))
        installs[process] = install
    }

    /// The connections of `process` close for `reason`: idle ones now, busy ones when their
    /// exchange ends (its pending sweep finds nothing).
    mutating func close(_ process: InstallProcess, reason: ConnectionCloseReason, at now: Instant, into outcome: inout Outcome) {
        guard var install = installs.removeValue(forKey: process) else { return }
        let device = process.device
        removeExpired(&install.open, device: device, idle: stacks[device - firstDevice].idleTimeout, at: now, into: &outcome)
        for connection in install.open { outcome.events.append((max(now, connection.freeAt), device, .closed(reason))) }
    }

    private func removeExpired(_ open: inout [Open], device: Int, idle: TimeSpan, at now: Instant, into outcome: inout Outcome) {
        open.removeAll { connection in
            let expiry = connection.lastUsed + idle
            guard connection.freeAt <= now, expiry <= now else { return false }
            outcome.events.append((expiry, device, .closed(.idle)))
            return true
        }
    }

    private static func firstExpiry(_ open: [Open], idle: TimeSpan) -> Instant {
        open.map { $0.lastUsed + idle }.min() ?? .start
    }
}
