import Foundation
public import PushSwarmCore
public import PushSwarmMetrics
import Synchronization

/// Every built-in mock service on real sockets: the same `MockFleet` as in simulated time,
/// behind `HTTPServer`, answering after each mock's sampled latency. Also serves
/// `GET /metrics` (Prometheus text format), `GET /ledger` (JSON; `?keys=1` lists accepted keys)
/// and a WebSocket echo at `/_pushswarm/echo` for connectivity checks.
///
/// The mocks' state is partitioned by source address: `fleets[partition(source)]` holds an
/// address's limiters, sessions and ledger, and the server hands each accepted connection to the
/// event loop of its address's partition, so that one partition's state is touched by one thread.
public final class MockServer: Sendable {
    /// Each partition's mocks.
    public let fleets: [MockFleet]
    private let partition: @Sendable (SourceAddress) -> Int
    public let server: HTTPServer
    fileprivate let clock: WallClock
    /// Requests answered, by operation and status, per partition (each written by its own loop).
    private let counts: [StatusCounts]
    /// Open platform sessions by session number.
    private let sessions = Mutex<[UInt64: ServiceSocket]>([:])

    /// One set of mocks for every address.
    public convenience init(mocks: MockFleet, group: EventLoopGroup, clock: WallClock) {
        self.init(mocks: [mocks], group: group, clock: clock) { _ in 0 }
    }

    /// `mocks[partition(source)]` serves `source`; `partition` numbers index `group.loops` too.
    /// With `tls`, every connection is TLS, and ALPN agrees HTTP/2 with a client that offers it.
    public init(mocks: [MockFleet], group: EventLoopGroup, clock: WallClock, tls: TLSServerContext? = nil, partition: @escaping @Sendable (SourceAddress) -> Int) {
        precondition(!mocks.isEmpty)
        fleets = mocks
        let count = mocks.count
        self.partition = { source in min(max(0, partition(source)), count - 1) }
        self.clock = clock
        counts = mocks.map { _ in StatusCounts() }
        let box = HandlerBox()
        let loops = group.loops.count
        let chosen = self.partition
        var owner: (@Sendable (IPAddress) -> Int)?
        if count > 1 { owner = { peer in chosen(SourceAddress(peer: peer)) % loops } }
        var configuration = HTTPServer.Configuration()
        configuration.tls = tls
        if let streams = mocks[0].maxConcurrentStreams { configuration.http2MaxConcurrentStreams = streams }
        server = HTTPServer(group: group, configuration: configuration, owner: owner) { request, responder in box.handle?(request, responder) }
        box.handle = { [weak self] request, responder in self?.handle(request, responder) }
    }



    public func start(at address: SocketAddress) throws(NetError) {
        try server.start(at: address)
    }

    public var port: UInt16 { server.port }

    public func stop() { server.stop() }

    private func handle(_ request: ServerRequest, _ responder: HTTPResponder) {
        let path = request.path
        switch (request.method, path) {
        case ("GET", "/metrics"):
            return responder.respond(Response(status: 200, headers: [Header("Content-Type", "text/plain; version=0.0.4")], body: Array(metricsText().utf8)))
        case ("GET", "/ledger"):
            let body = JSONWriter.bytes(of: ledgerJSON(withKeys: request.target.contains("keys=1")), indent: 2)
            return responder.respond(Response(status: 200, headers: [Header("Content-Type", "application/json")], body: body))
        case (_, "/_pushswarm/echo") where request.isWebSocketUpgrade:
            return responder.acceptWebSocket(EchoSocket())
        default:
            break
        }
        if request.isWebSocketUpgrade { return openSession(request, responder) }
        let source = SourceAddress(peer: request.peer)
        let part = partition(source)
        let mocks = fleets[part]
        guard let (platform, platformPath) = mocks.route(request.target) else {
            let body = JSONWriter.bytes(of: ["error": .string("no platform serves \(path); prefix the path with /<platform>, one of \(mocks.platforms.joined(separator: ", "))")])
            return responder.respond(Response(status: 404, headers: [Header("Content-Type", "application/json")], body: body))
        }
        var forwarded = request.request
        forwarded.path = platformPath
        let answer = mocks.exchange(platform: platform, forwarded, from: source, at: clock.now)
        let delay = UInt64(max(0, answer.latency.microseconds)) * 1_000
        switch answer.fault {
        case nil:
            count(answer.operation, answer.response.status, partition: part)
            responder.respond(answer.response, afterNanoseconds: delay)
        case .reset?:
            count(answer.operation, 0, partition: part)
            responder.dropConnection(reset: true, afterNanoseconds: delay)
        case .truncated?:
            count(answer.operation, 0, partition: part)
            responder.respondTruncated(answer.response, afterNanoseconds: delay)
        case .malformed?:
            count(answer.operation, 0, partition: part)
            responder.respondMalformed(afterNanoseconds: delay)
        case .goAway?:
            count(answer.operation, 0, partition: part)
            responder.goAway()
        case .slowBody(let rate)?:
            count(answer.operation, answer.response.status, partition: part)
            // The simulated answer time includes the trickle; on the wire the trickle itself takes it.
            let trickle = UInt64(Double(answer.response.body.count + 200) / Double(max(rate, 1)) * 1e9)
            responder.respondSlowly(answer.response, bytesPerSecond: rate, afterNanoseconds: delay > trickle ? delay - trickle : 0)
        }
    }

    /// A device's WebSocket handshake: the platform's mock accepts it as a session or refuses it.
    private func openSession(_ request: ServerRequest, _ responder: HTTPResponder) {
        let source = SourceAddress(peer: request.peer)
        let part = partition(source)
        let mocks = fleets[part]
        guard let (platform, platformPath) = mocks.route(request.target, socket: true) else {
            let body = JSONWriter.bytes(of: ["error": .string("no platform takes WebSockets at \(request.target)")])
            return responder.respond(Response(status: 404, headers: [Header("Content-Type", "application/json")], body: body))
        }
        let (session, answer) = mocks.openSocket(platform: platform, path: platformPath, from: source, at: clock.now)
        count(answer.reply.operation, answer.reply.refusal?.status ?? 101, partition: part)
        if let refusal = answer.reply.refusal {
            return responder.respond(refusal, afterNanoseconds: UInt64(max(0, answer.latency.microseconds)) * 1_000)
        }
        let socket = ServiceSocket(server: self, partition: part, platform: platform, session: session, source: source)
        sessions.withLock { $0[session] = socket }
        // The handshake is answered after the mock's latency, as in simulated time, and the
        // service's first reply right after it.
        responder.acceptWebSocket(socket, afterNanoseconds: UInt64(max(0, answer.latency.microseconds)) * 1_000) { [self] accepted in
            if !accepted || !socket.replyFromLoop(answer.reply, after: .zero) {
                sessionEnded(session)
                mocks.socketClosed(platform: platform, session: session, at: clock.now)
            }
        }
    }

    /// Counts an answer of partition number `partition`'s mocks.
    fileprivate func count(_ operation: String, _ status: Int, partition: Int) {
        counts[partition].value.withLock { $0[operation, default: [:]][status, default: 0] += 1 }
    }

    /// Forgets a session whose socket closed (its mocks are told by whoever saw it close).
    fileprivate func sessionEnded(_ session: UInt64) {
        sessions.withLock { $0[session] = nil }
    }

    /// Every partition's ledgers added up, by platform name.
    public var ledgers: [String: Ledger] {
        var merged: [String: Ledger] = [:]
        for fleet in fleets {
            for (platform, ledger) in fleet.ledgers { merged[platform, default: Ledger()].merge(ledger) }
        }
        return merged
    }

    /// Sends messages a service emits on its own (a campaign's popups) on their sessions.
    public func push(_ messages: [SessionMessage]) {
        for message in messages {
            guard let socket = sessions.withLock({ $0[message.session] }) else { continue }
            socket.reply(SocketReply(messages: [message.text], operation: "push"))
        }
    }

    /// Sessions open now.
    public var openSessionCount: Int { sessions.withLock { $0.count } }

    /// Requests answered by operation and status, ledger counts, and the server's connections.
    public func metricsText() -> String {
        var out = PrometheusText()
        out.family("pushswarm_mock_requests_total", .counter, help: "Requests the mock answered, by operation and status.")
        var all: [String: [Int: UInt64]] = [:]
        for partition in counts {
            for (operation, statuses) in partition.value.withLock({ $0 }) { all[operation, default: [:]].merge(statuses, uniquingKeysWith: +) }
        }
        for (operation, statuses) in all.sorted(by: { $0.key < $1.key }) {
            for (status, count) in statuses.sorted(by: { $0.key < $1.key }) {
                out.sample("pushswarm_mock_requests_total", PrometheusText.Labels([("operation", operation), ("status", "\(status)")]), count)
            }
        }
        let ledgers = self.ledgers.sorted { $0.key < $1.key }
        out.family("pushswarm_mock_ledger_accepted_total", .counter, help: "Distinct items the mock accepted, by operation.")
        for (_, ledger) in ledgers {
            for (operation, count) in ledger.acceptedByOperation.sorted(by: { $0.key < $1.key }) {
                out.sample("pushswarm_mock_ledger_accepted_total", PrometheusText.Labels([("operation", operation)]), count)
            }
        }
        out.family("pushswarm_mock_ledger_duplicates_total", .counter, help: "Items accepted again (same fingerprint), by operation.")
        for (_, ledger) in ledgers {
            for (operation, count) in ledger.duplicatesByOperation.sorted(by: { $0.key < $1.key }) {
                out.sample("pushswarm_mock_ledger_duplicates_total", PrometheusText.Labels([("operation", operation)]), count)
            }
        }
        out.family("pushswarm_mock_sessions_open", .gauge, help: "WebSocket sessions open now.")
        out.sample("pushswarm_mock_sessions_open", PrometheusText.Labels(), openSessionCount)
        // The HTTP server's own counts, apart from the services' (its requests_total counts every
        // request, /metrics and /ledger too, and once clashed with the family above).
        for (name, value) in server.statistics.snapshot {
            out.family("pushswarm_mock_http_\(name)", name.hasSuffix("_total") ? .counter : .gauge, help: "The mock's HTTP server: \(name.replacingOccurrences(of: "_", with: " ")).")
            out.sample("pushswarm_mock_http_\(name)", PrometheusText.Labels(), value)
        }
        return out.text
    }

    public func ledgerJSON(withKeys: Bool) -> JSONValue {
        var platforms = JSONObject()
        for (name, ledger) in ledgers.sorted(by: { $0.key < $1.key }) {
            var entry: JSONObject = [
                "accepted": .number(Double(ledger.accepted)), "duplicates": .number(Double(ledger.duplicates)),
            ]
            var byOperation = JSONObject()
            for (operation, count) in ledger.acceptedByOperation.sorted(by: { $0.key < $1.key }) { byOperation[operation] = .number(Double(count)) }
            entry["acceptedByOperation"] = .object(byOperation)
            if withKeys {
                entry["keys"] = .array(ledger.keys.map(\.description).sorted().map { JSONValue.string($0) })
            }
            platforms[name] = .object(entry)
        }
        return ["platforms": .object(platforms)]
    }
}

/// One partition's answers by operation and status (a lock its own loop alone takes, but for a scrape).
private final class StatusCounts: Sendable {
    let value = Mutex<[String: [Int: UInt64]]>([:])
}

/// Lets the server's handler reach the MockServer that owns the server.
private final class HandlerBox: @unchecked Sendable {
    var handle: HTTPHandler?
}

/// One platform session on a real WebSocket: messages go to the platform's mock, its replies come
/// back after the mock's latency, in order, and its timers (server pings) run on the socket's loop.
private final class ServiceSocket: WebSocketDelegate, @unchecked Sendable {
    /// Weak: a session's socket lives on the server's loops and can outlive a server released
    /// without `stop()`; then it closes (1001) at its next message instead of reaching it.
    private weak var server: MockServer?
    /// The partition whose mocks hold the session.
    let partition: Int
    let mocks: MockFleet
    private let clock: WallClock
    let platform: Int
    let session: UInt64
    let source: SourceAddress
    /// Touched on the socket's loop only.
    private var socket: WebSocket?
    private let loop = Mutex<EventLoop?>(nil)
    private var lastSendAt: UInt64 = 0
    private var timer: LoopTimer?
    private var isClosed = false

    init(server: MockServer, partition: Int, platform: Int, session: UInt64, source: SourceAddress) {
        self.server = server
        self.partition = partition
        mocks = server.fleets[partition]
        clock = server.clock
        self.platform = platform
        self.session = session
        self.source = source
    }

    func webSocketOpened(_ socket: WebSocket) {
        self.socket = socket
        loop.withLock { $0 = socket.loop }
    }

    func webSocket(_ socket: WebSocket, receivedText text: String) {
        guard let server else { return socket.close(code: 1001, reason: "the mock service stopped") }
        let answer = mocks.socketMessage(platform: platform, session: session, text: text, from: source, at: clock.now)
        server.count(answer.reply.operation, answer.reply.close == nil ? 200 : 400, partition: partition)
        schedule(answer.reply, after: answer.latency, on: socket)
    }

    func webSocketClosed(_ socket: WebSocket, code: UInt16?, reason: String, error: NetError?) {
        isClosed = true
        timer?.cancel()
        self.socket = nil
        loop.withLock { $0 = nil }
        server?.sessionEnded(session)
        mocks.socketClosed(platform: platform, session: session, at: clock.now)
    }

    /// On the socket's loop: sends the reply if the socket opened; false if it did not.
    func replyFromLoop(_ reply: SocketReply, after delay: TimeSpan) -> Bool {
        guard let socket else { return false }
        schedule(reply, after: delay, on: socket)
        return true
    }

    /// From any thread: hands the reply to the socket's loop (nothing if the socket has closed).
    func reply(_ reply: SocketReply) {
        guard let loop = loop.withLock({ $0 }) else { return }
        loop.execute { [self] in
            if let socket { schedule(reply, after: .zero, on: socket) }
        }
    }

    /// Sends the reply's messages no earlier than the last ones (a socket keeps order), then its
    /// close; arms its timer.
    private func schedule(_ reply: SocketReply, after delay: TimeSpan, on socket: WebSocket) {
        let due = max(socket.loop.now + UInt64(max(0, delay.microseconds)) * 1_000, lastSendAt)
        lastSendAt = due
        let send = { [self] in
            guard !isClosed else { return }
            for text in reply.messages { socket.send(text: text) }
            if let close = reply.close { socket.close(code: close.code, reason: close.reason) }
        }
        if due <= socket.loop.now { send() } else { _ = socket.loop.schedule(at: due) { send() } }
        if let wake = reply.wake {
            timer?.cancel()
            timer = socket.loop.schedule(afterNanoseconds: UInt64(max(0, wake.microseconds)) * 1_000) { [self] in
                guard !isClosed, let socket = self.socket else { return }
                schedule(mocks.socketTimer(platform: platform, session: session, at: clock.now), after: .zero, on: socket)
            }
        }
    }
}

/// Answers every text and binary message with itself.
private final class EchoSocket: WebSocketDelegate {
    func webSocketOpened(_ socket: WebSocket) {}
    func webSocket(_ socket: WebSocket, receivedText text: String) { socket.send(text: text) }
    func webSocket(_ socket: WebSocket, receivedBinary data: [UInt8]) { socket.send(binary: data) }
    func webSocketClosed(_ socket: WebSocket, code: UInt16?, reason: String, error: NetError?) {}
}
