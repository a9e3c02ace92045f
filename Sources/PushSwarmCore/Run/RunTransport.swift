/// How a run's requests reach a service, and how its time passes: in simulated time, a mock
/// answers in-process and the clock jumps; in wall time, requests go over sockets and answers
/// arrive while the run waits.
public protocol RunTransport: AnyObject {
    /// Sends `outgoing` for device number `device` of `platform`. A transport that knows the
    /// outcome at once (simulated) returns it with the instant it arrives; otherwise it returns nil
    /// and the completion arrives later through `takeArrived`.
    func send(_ outgoing: OutgoingRequest, device: Int, platform: String, source: SourceAddress, at now: Instant) -> (ExchangeCompletion, Instant)?

    /// Opens a WebSocket for device number `device`; `.opened` or `.failed` arrives later.
    func openSocket(_ open: SocketOpen, device: Int, platform: String, source: SourceAddress, at now: Instant)

    /// Sends a text message on one of the device's sockets (nothing if it has closed meanwhile).
    func sendOnSocket(_ socket: UInt64, text: String, device: Int, at now: Instant)

    /// Closes one of the device's sockets at its request.
    func closeSocket(_ socket: UInt64, device: Int, at now: Instant)

    /// Messages a built-in service sends on its own on open sessions (a campaign's popups).
    func deliverFromService(_ messages: [SessionMessage], platform: Int, at now: Instant)

    /// A timer the transport asked for with an `.timer` arrival is due.
    func timerFired(_ token: UInt64, at now: Instant)

    /// The run ended: closes every socket still open.
    func closeAllSockets()

    /// A device's push token changed (`old` nil: its first); see the extension's default.
    func pushAddressChanged(old: String?, new: String)

    /// The own HTTP connections of `process` (an install's app, or its notification service
    /// extension) close for `reason` (the process died, or the OS suspended it); see the
    /// extension's default.
    func closeConnections(of process: InstallProcess, reason: ConnectionCloseReason, at now: Instant)

    /// Simulated time: what the last calls produced for later (socket replies, service timers),
    /// for the partition to schedule. A live transport delivers through `onArrival` instead.
    func takeArrived() -> [Arrival]

    /// The run's time now (in wall time, the clock; in simulated time, where the run has got to).
    var currentTime: Instant { get }

    /// True once the transport wants the run to stop early: no new requests, report what happened.
    var isInterrupted: Bool { get }
}

extension RunTransport {
    public var isInterrupted: Bool { false }

    /// A device's push token changed (`old` nil: its first). Transports that receive pushes for
    /// devices (`--push-listen`) route by it; others need not know.
    public func pushAddressChanged(old: String?, new: String) {}

    /// Transports without connections of a device's own (simulated time, for now) have none to close.
    public func closeConnections(of process: InstallProcess, reason: ConnectionCloseReason, at now: Instant) {}
}

/// A transport whose answers arrive over real time, on its partition's event loop: it calls the
/// partition back on that thread, as things happen and when the partition asked to be woken.
public protocol LiveTransport: RunTransport, Sendable {
    /// Where arrivals go; set once before the run. Called on the partition's thread.
    func onArrival(_ handler: @escaping (Arrival) -> Void)

    /// Calls `tick` on the partition's thread once `instant` is reached, replacing the wake-up
    /// asked for before.
    func wake(at instant: Instant, _ tick: @escaping () -> Void)

    /// Withdraws the wake-up asked for, if it is still to come: the partition has ended.
    func stopWaking()
}

/// Something a transport delivers to the run, at `at`.
public struct Arrival: Sendable {
    public enum Payload: Sendable {
        /// An HTTP request of device `device` ended.
        case completion(ExchangeCompletion)
        /// Something happened to one of device `device`'s sockets.
        case socket(SocketEvent)
        /// A timer of the transport's own (a simulated service's ping); `device` is unused.
        case timer(UInt64)
        /// A push a real service sent to a device's token (`--push-listen`): its data, and
        /// whether it carried a notification for the OS to show; `device` is unused.
        case push(token: String, data: [String: String], isDataOnly: Bool)
        /// One of the transport's connections opened or closed (counted per run, and opens on
        /// the timeline); `device` is unused.
        case connection(ConnectionEvent)
    }

    public var device: Int
    public var payload: Payload
    public var at: Instant

    public init(device: Int, payload: Payload, at: Instant) {
        self.device = device
        self.payload = payload
        self.at = at
    }

    public init(device: Int, completion: ExchangeCompletion, at: Instant) {
        self.init(device: device, payload: .completion(completion), at: at)
    }
}

/// Simulated time: the mock answers in-process after its sampled latency, injected network
/// errors come from the scenario, and waiting is free. WebSocket sessions live here too: each
/// device socket maps to a mock session, and messages each way arrive after the mock's latency,
/// in order per socket, as over TCP.
public final class SimulatedTransport: RunTransport {

    private struct Session {
        var platform: Int
        var session: UInt64
        var source: SourceAddress
        /// When the last message to the device arrives (later ones may not overtake it).
        var lastDelivery: Instant
    }

    private let mocks: MockFleet
    /// The latest time the partition called with.
    private var latest = Instant.start
    private let network: NetworkSettings
    private let seed: UInt64
    /// Each device's draws (network errors, the mock's latency and faults): a device's answers do
    /// not depend on which other devices are in the run, so a shard answers as the whole run does.
    /// Held in an array by device number from `firstDevice` (40 bytes a device, less than a
    /// dictionary's buckets at its load factor), filled as devices first draw.
    private var deviceRandom: [SeededRandom?] = []
    private let firstDevice: Int
    private var sockets: [SocketKey: Session] = [:]
    private var socketBySession: [UInt64: SocketKey] = [:]
    private var timers: [UInt64: SocketKey] = [:]
    private var nextTimer: UInt64 = 0
    private var arrived: [Arrival] = []
    /// Each install's own connections (`network.connections: perDevice`); nil with the shared
    /// pools of addresses, which simulated time does not model.
    private var connections: SimulatedConnections?
    /// Each platform's edge (by mock index), and when it is free for its next full handshake.
    private var edges: [EdgeSettings] = []
    /// Per mock host, whether an install's connections to it speak HTTP/2: prior knowledge, or
    /// ALPN agreeing h2 with an edge that offers it over TLS (`mock.edge.http2`).
    private var speaksHTTP2: [Bool] = []
    private var edgeFree: [Int: Instant] = [:]
    /// The connections open at each edge with a cap (`mock.edge.maxConnections`), by mock index,
    /// and the mock index of each device (from `firstDevice`) when any edge has a cap.
    private var edgeConnections: [Int: EdgeConnections] = [:]
    private var deviceHosts: [Int] = []
    /// Installs whose app process holds a TLS session (resumed on its next connection); a process
    /// that dies forgets it.
    private var tlsSessions = Set<InstallProcess>()
    /// Due idle sweeps of installs' connections, by timer token: whose they are.
    private var sweeps: [UInt64: InstallProcess] = [:]

    /// - Parameter devices: the fleet numbers of the devices it carries (a partition's).
    public init(scenario: Scenario, mocks: MockFleet, devices: Range<Int>) {
        self.mocks = mocks
        network = scenario.network
        seed = scenario.seed
        firstDevice = devices.lowerBound
        deviceRandom = Array(repeating: nil, count: devices.count)
        if scenario.network.connections == .perDevice {
            let fleet = Fleet(scenario: scenario)
            let groups = devices.map { fleet.groupIndex(at: $0) }
            connections = SimulatedConnections(stacks: groups.map { scenario.groups[$0].os.connectionStack }, firstDevice: devices.lowerBound)
            edges = mocks.platforms.map { scenario.platforms[$0]?.mockBehaviour.edge ?? EdgeSettings() }
            speaksHTTP2 = edges.map { scenario.network.http2.speaksHTTP2(tls: $0.tls != .none, edgeOffersHTTP2: $0.offersHTTP2) }
            if edges.contains(where: { $0.maxConnections != nil }) {
                deviceHosts = groups.map { mocks.index(of: scenario.groups[$0].platform) ?? -1 }
            }
        }
    }

    /// Hands what the install's connections did to the partition: their events, and the sweep
    /// to call back for.
    private func deliver(_ outcome: SimulatedConnections.Outcome) {
        for (at, device, event) in outcome.events {
            if case .closed = event, !deviceHosts.isEmpty {
                let host = deviceHosts[device - firstDevice]
                edgeConnections[host]?.closed(at: at, now: latest)
            }
            arrived.append(Arrival(device: -1, payload: .connection(event), at: at))
        }
        if let sweep = outcome.sweep {
            sweeps[sweep.token] = sweep.process
            arrived.append(Arrival(device: -1, payload: .timer(sweep.token), at: sweep.at))
        }
    }

    /// A new timer token (sockets' service timers and connection sweeps share them).
    private func newToken() -> UInt64 {
        nextTimer += 1
        return nextTimer
    }

    /// Calls `body` with device `device`'s draws, in place in `deviceRandom` (a copy out and
    /// back was two 40-byte copies a request).
    private func withDraws<Result>(for device: Int, _ body: (inout SeededRandom) -> Result) -> Result {
        let slot = device - firstDevice
        if deviceRandom[slot] == nil { deviceRandom[slot] = SeededRandom(seed: seed, stream: .network, index: UInt64(device) + 1) }
        return body(&deviceRandom[slot]!)
    }

    public func send(_ outgoing: OutgoingRequest, device: Int, platform: String, source: SourceAddress, at now: Instant) -> (ExchangeCompletion, Instant)? {
        latest = now
        return withDraws(for: device) { random in send(outgoing, platform: platform, source: source, device: device, at: now, random: &random) }
    }

    private func send(_ outgoing: OutgoingRequest, platform: String, source: SourceAddress, device: Int, at now: Instant, random: inout SeededRandom) -> (ExchangeCompletion, Instant)? {
        let outcome: ExchangeOutcome
        let completedAt: Instant
        var connect: TimeSpan?
        var handshake: TimeSpan?
        var http2: Bool?
        /// When the request reached the service (after its connection opened or freed).
        var reached = now
        if random.chance(network.errorRate) {
            // No route or a dropped connection: the client learns quickly, the service sees nothing.
            outcome = .transportError(reason: "networkError")
            completedAt = now + .milliseconds(200)
        } else if let host = mocks.index(of: platform) {
            // With connections of its own, the install's request goes out on one of them: a
            // kept-alive one, a new one (which may time out at the edge), or one it waits for.
            var events = SimulatedConnections.Outcome()
            defer { deliver(events) }
            var acquired: SimulatedConnections.Acquired?
            let process = InstallProcess(device: device, role: outgoing.sender)
            if connections != nil {
                switch connections!.acquire(process, at: now, multiplexed: speaksHTTP2[host], open: { open(process, stack: $0, host: host, timeout: outgoing.timeout, at: now, random: &random) }, into: &events) {
                case .failure(let failed):
                    let completion = ExchangeCompletion(
                        requestID: outgoing.id, operation: outgoing.operation, sentAt: outgoing.intendedStart ?? now,
                        outcome: failed.refused ? .transportError(reason: "connectionRefused") : .timeout,
                        timings: TransportTimings(connect: nil, firstByte: .zero, service: .zero)
                    )
                    return (completion, now + failed.after)
                case .success(let taken):
                    acquired = taken
                    reached = taken.start
                    connect = taken.connectTime
                    handshake = taken.handshakeTime
                    if taken.multiplexed { http2 = true }
                }
            }
            // The service answers as of now (its limiters see the partition's time in order).
            let answer = mocks.exchange(platform: host, outgoing.request.resolved, from: source, at: now, random: &random)
            // The request's way out and its answer's way back (`network.rtt`, a draw each
            // exchange: a carrier network's jitter), besides the service's own time.
            let answered = (network.roundTrip.map { $0.sampleSpan(using: &random) } ?? .zero) + answer.latency
            if (reached - now) + answered > outgoing.timeout {
                outcome = .timeout
                completedAt = now + outgoing.timeout
            } else if let reason = answer.fault?.transportReason {
                // A reset, truncated or malformed answer: the client sees the connection fail.
                outcome = .transportError(reason: reason)
                completedAt = reached + answered
            } else {
                outcome = .response(answer.response)
                completedAt = reached + answered
            }
            if let acquired { connections!.release(process, acquired, until: completedAt, token: newToken(), into: &events) }
        } else {
            outcome = .transportError(reason: "noService")
            completedAt = now
        }
        // Latency counts from when the request was due; the service's own time is the mock's answer time.
        // Over HTTP/2 the request says so, as a wall run's socket does; HTTP/1.1 stays unsaid
        // (simulated time's summaries before HTTP/2 are unchanged).
        let timings = TransportTimings(
            connect: connect, tlsHandshake: handshake, firstByte: completedAt - reached, service: completedAt - reached,
            http2: http2
        )
        let completion = ExchangeCompletion(requestID: outgoing.id, operation: outgoing.operation, sentAt: outgoing.intendedStart ?? now, outcome: outcome, timings: timings)
        return (completion, completedAt)
    }

    /// Opens a connection of device `device` to platform `host` at `now`: TCP's round trip and
    /// the TLS handshake's (`network.rtt`), a full handshake waiting its turn at the edge
    /// (`mock.edge.handshakesPerSecond`); past the client's connect timeout, it fails. An edge
    /// holding its cap of connections (`mock.edge.maxConnections`) refuses it after TCP's round trip.
    private func open(_ process: InstallProcess, stack: ConnectionStack, host: Int, timeout: TimeSpan, at now: Instant, random: inout SeededRandom) -> SimulatedConnections.Opening {
        let edge = edges[host]
        let roundTrip = network.roundTrip.map { $0.sampleSpan(using: &random) } ?? .zero
        if let cap = edge.maxConnections {
            var held = edgeConnections[host] ?? EdgeConnections()
            let full = held.open(at: now) >= cap
            // Counted from its SYN: the edge holds it while the handshake goes on.
            if !full { held.count += 1 }
            edgeConnections[host] = held
            if full { return .refused(after: roundTrip) }
        }
        let resumed = edge.tls != .none && tlsSessions.contains(process)
        var time = roundTrip * Double(1 + edge.tls.roundTrips(resumed: resumed))
        if edge.tls != .none, !resumed, let rate = edge.handshakesPerSecond {
            // The edge does full handshakes one after another at its rate; this one's turn
            // comes after TCP's round trip, or when the edge has done those before it.
            let arrives = now + roundTrip
            let turn = max(arrives, edgeFree[host] ?? arrives)
            edgeFree[host] = turn + TimeSpan(microseconds: Int64((1_000_000 / rate).rounded(.up)))
            time = time + (turn - arrives)
        }
        let limit = min(timeout, stack.connectTimeout ?? timeout)
        guard time <= limit else {
            // The client gives up: the edge's connection goes with it.
            if edge.maxConnections != nil { edgeConnections[host]?.closed(at: now + limit, now: now) }
            return .timedOut(after: limit)
        }
        guard edge.tls != .none else { return .connected(time: time, handshakeTime: .zero, tls: nil) }
        tlsSessions.insert(process)
        return .connected(time: time, handshakeTime: time - roundTrip, tls: resumed ? .resumed : .full)
    }
    public func openSocket(_ open: SocketOpen, device: Int, platform: String, source: SourceAddress, at now: Instant) {
        latest = now
        let key = SocketKey(device: device, socket: open.id)
        func fail(_ outcome: ExchangeOutcome, at time: Instant) {
            arrived.append(Arrival(device: device, payload: .socket(.failed(socket: open.id, outcome: outcome)), at: time))
        }
        withDraws(for: device) { random in
            if random.chance(network.errorRate) { return fail(.transportError(reason: "networkError"), at: now + .milliseconds(200)) }
            guard let host = mocks.index(of: platform) else { return fail(.transportError(reason: "noService"), at: now) }
            openSession(open, key: key, host: host, source: source, at: now, random: &random, fail: fail)
        }
    }

    /// The rest of `openSocket`, once the network let the handshake through to a mock.
    private func openSession(_ open: SocketOpen, key: SocketKey, host: Int, source: SourceAddress, at now: Instant, random: inout SeededRandom, fail: (ExchangeOutcome, Instant) -> Void) {
        let device = key.device
        let (session, answer) = mocks.openSocket(platform: host, path: open.path, from: source, at: now, random: &random)
        if let refusal = answer.reply.refusal { return fail(.response(refusal), now + min(answer.latency, open.timeout)) }
        guard answer.latency <= open.timeout else {
            mocks.socketClosed(platform: host, session: session, at: now)
            return fail(.timeout, now + open.timeout)
        }
        sockets[key] = Session(platform: host, session: session, source: source, lastDelivery: now + answer.latency)
        socketBySession[session] = key
        arrived.append(Arrival(device: device, payload: .socket(.opened(socket: open.id)), at: now + answer.latency))
        apply(answer.reply, to: key, at: now + answer.latency, now: now)
    }

    public func sendOnSocket(_ socket: UInt64, text: String, device: Int, at now: Instant) {
        let key = SocketKey(device: device, socket: socket)
        guard let session = sockets[key] else { return }
        let answer = withDraws(for: device) { random in
            mocks.socketMessage(platform: session.platform, session: session.session, text: text, from: session.source, at: now, random: &random)
        }
        apply(answer.reply, to: key, at: now + answer.latency, now: now)
    }

    public func closeSocket(_ socket: UInt64, device: Int, at now: Instant) {
        guard let session = sockets.removeValue(forKey: SocketKey(device: device, socket: socket)) else { return }
        socketBySession[session.session] = nil
        mocks.socketClosed(platform: session.platform, session: session.session, at: now)
    }

    public func deliverFromService(_ messages: [SessionMessage], platform: Int, at now: Instant) {
        for message in messages {
            guard let key = socketBySession[message.session] else { continue }
            apply(SocketReply(messages: [message.text], operation: "push"), to: key, at: now, now: now)
        }
    }

    public func timerFired(_ token: UInt64, at now: Instant) {
        if let process = sweeps.removeValue(forKey: token) {
            var outcome = SimulatedConnections.Outcome()
            connections?.sweep(process, token: token, at: now, next: newToken(), into: &outcome)
            return deliver(outcome)
        }
        guard let key = timers.removeValue(forKey: token), let session = sockets[key] else { return }
        apply(mocks.socketTimer(platform: session.platform, session: session.session, at: now), to: key, at: now, now: now)
    }

    public func closeConnections(of process: InstallProcess, reason: ConnectionCloseReason, at now: Instant) {
        if reason == .processDied { tlsSessions.remove(process) }
        var outcome = SimulatedConnections.Outcome()
        connections?.close(process, reason: reason, at: now, into: &outcome)
        deliver(outcome)
    }

    public func closeAllSockets() {
        for (_, session) in sockets { mocks.socketClosed(platform: session.platform, session: session.session, at: latest) }
        sockets = [:]
        socketBySession = [:]
    }

    /// Delivers a service's reply on a session: its messages (no earlier than the last one
    /// delivered), its close, its next timer.
    private func apply(_ reply: SocketReply, to key: SocketKey, at time: Instant, now: Instant) {
        guard var session = sockets[key] else { return }
        let at = max(time, session.lastDelivery)
        session.lastDelivery = at
        sockets[key] = session
        for text in reply.messages {
            arrived.append(Arrival(device: key.device, payload: .socket(.message(socket: key.socket, text: text)), at: at))
        }
        if let close = reply.close {
            sockets[key] = nil
            socketBySession[session.session] = nil
            mocks.socketClosed(platform: session.platform, session: session.session, at: now)
            arrived.append(Arrival(device: key.device, payload: .socket(.closed(socket: key.socket, code: Int(close.code), reason: close.reason)), at: at))
            return
        }
        if let wake = reply.wake {
            nextTimer += 1
            timers[nextTimer] = key
            arrived.append(Arrival(device: key.device, payload: .timer(nextTimer), at: now + wake))
        }
    }

    public func takeArrived() -> [Arrival] {
        guard !arrived.isEmpty else { return [] }
        defer { arrived.removeAll(keepingCapacity: true) }
        return arrived
    }

    public var currentTime: Instant { latest }
}

/// A simulated transport seen through another: every call goes to `inner`, and a subclass
/// overrides what it watches or changes (the request sampler captures what devices send first;
/// tests stall a loop or record closes).
open class ForwardingTransport: RunTransport {
    public let inner: SimulatedTransport

    public init(inner: SimulatedTransport) { self.inner = inner }

    open func send(_ outgoing: OutgoingRequest, device: Int, platform: String, source: SourceAddress, at now: Instant) -> (ExchangeCompletion, Instant)? {
        inner.send(outgoing, device: device, platform: platform, source: source, at: now)
    }
    open func openSocket(_ open: SocketOpen, device: Int, platform: String, source: SourceAddress, at now: Instant) {
        inner.openSocket(open, device: device, platform: platform, source: source, at: now)
    }
    open func sendOnSocket(_ socket: UInt64, text: String, device: Int, at now: Instant) { inner.sendOnSocket(socket, text: text, device: device, at: now) }
    open func closeSocket(_ socket: UInt64, device: Int, at now: Instant) { inner.closeSocket(socket, device: device, at: now) }
    open func deliverFromService(_ messages: [SessionMessage], platform: Int, at now: Instant) { inner.deliverFromService(messages, platform: platform, at: now) }
    open func timerFired(_ token: UInt64, at now: Instant) { inner.timerFired(token, at: now) }
    open func closeAllSockets() { inner.closeAllSockets() }
    open func closeConnections(of process: InstallProcess, reason: ConnectionCloseReason, at now: Instant) {
        inner.closeConnections(of: process, reason: reason, at: now)
    }
    open func takeArrived() -> [Arrival] { inner.takeArrived() }
    open var currentTime: Instant { inner.currentTime }
    open var isInterrupted: Bool { inner.isInterrupted }
}

/// The connections one capped edge holds in simulated time: those open, less those told closed
/// at an instant still to come (a busy connection closes after its answer), which count until
/// then.
private struct EdgeConnections {
    var count = 0
    private var closing: [Instant] = []

    /// The connections open at `now`.
    mutating func open(at now: Instant) -> Int {
        if !closing.isEmpty {
            let before = closing.count
            closing.removeAll { $0 <= now }
            count -= before - closing.count
        }
        return count
    }

    mutating func closed(at instant: Instant, now: Instant) {
        if instant <= now { count -= 1 } else { closing.append(instant) }
    }
}
