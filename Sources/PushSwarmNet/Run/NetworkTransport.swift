import Synchronization
public import PushSwarmCore

/// Wall time over real sockets, for one partition: each request goes out through `HTTPClient` to
/// the platform's target, from the device's NAT address when the target is on loopback, on the
/// partition's own event loop; answers arrive on that loop and go straight to the partition.
///
/// - Important: confined to `loop`'s thread (every call comes from the partition, which runs
///   there, and every callback runs there): no lock, no hand-off per request.
public final class NetworkTransport: LiveTransport, @unchecked Sendable {

    public let client: HTTPClient
    public let clock: WallClock
    public let loop: EventLoop
    /// The largest message a device's WebSocket takes (the scenario's network setting).
    public var maxWebSocketMessageBytes = NetworkSettings.defaultMaxWebSocketMessageBytes
    /// `network.connections: perDevice`: the OS of each device in the partition, from its first
    /// index, whose own connections carry its requests; nil: its address's shared pool.
    public var ownConnections: (first: Int, os: [OperatingSystem])?
    private let targets: [String: TargetURL]
    private let bindSources: Bool
    private var handler: ((Arrival) -> Void)?
    private var wakeTimer: LoopTimer?
    private var wakeDeadline: UInt64 = 0
    private var openSockets: [SocketKey: WebSocket] = [:]
    /// Closed by the device before its handshake finished: closed as soon as it opens.
    private var closedEarly = Set<SocketKey>()
    private var serviceSink: (([SessionMessage], Int) -> Void)?
    /// The first detail seen for each transport error reason, for the end-of-run message (read
    /// once the run is over).
    public private(set) var errorDetails: [String: String] = [:]

    /// WebSockets the run's devices may hold (open or opening) at once, shared by its partitions.
    public let socketBudget: SocketBudget

    /// `targets`: each platform's base URL (request paths are appended to its path).
    /// `bindSources`: whether devices bind their NAT address (every target on loopback).
    public init(client: HTTPClient, loop: EventLoop, targets: [String: TargetURL], clock: WallClock, bindSources: Bool, socketBudget: SocketBudget) {
        self.client = client
        self.loop = loop
        self.socketBudget = socketBudget
        self.clock = clock
        self.targets = targets
        self.bindSources = bindSources
        // Its partition's pools are on its loop (every request is pinned there): their connections'
        // opens and closes are counted in its run's counters (told on a turn of their own).
        client.watchConnections(loop: loop.index) { [weak self] event in
            guard let self else { return }
            deliver(Arrival(device: -1, payload: .connection(event), at: clock.now), detail: nil)
        }
    }

    /// Whether devices should bind their NAT group's loopback address: only when every target is
    /// on loopback (from this machine a remote service sees one address whatever is bound). Looks
    /// each target's name up, once, before any event loop needs it.
    public static func bindsSourceAddresses(_ targets: [String: TargetURL]) -> Bool {
        targets.values.map { Resolver.address(of: $0.origin) }.allSatisfy { (try? $0.get().ip.isLoopback) ?? false }
    }

    private func url(_ target: TargetURL, _ path: String) -> TargetURL {
        TargetURL(origin: target.origin, path: Self.base(of: target) + path)
    }

    /// The target's path without its last `/` (`""` for a target without a path).
    private static func base(of target: TargetURL) -> String {
        target.path == "/" ? "" : (target.path.hasSuffix("/") ? String(target.path.dropLast()) : target.path)
    }

    /// A redirect's next hop: its first URL under the target, then each Location resolved against
    /// the URL before it (RFC 9110 section 10.2.2). A URL on the target's origin is fetched as it
    /// is; one that leaves it (a CDN, the vendor's production host) goes to the target instead,
    /// under the target's path unless it is already there.
    static func url(_ target: TargetURL, _ request: Request) -> TargetURL {
        let base = base(of: target)
        var url = TargetURL(origin: target.origin, path: base + request.path)
        for location in request.locations {
            let next = url.resolving(location)
            if let next, next.origin == target.origin {
                url = next
                continue
            }
            let path = next?.path ?? URIReference.resolve(location, against: url.path).path
            let underTarget = base.isEmpty || path == base || path.hasPrefix(base + "/")
            url = TargetURL(origin: target.origin, path: underTarget ? path : base + path)
        }
        return url
    }

    public func onArrival(_ handler: @escaping (Arrival) -> Void) {
        self.handler = handler
    }

    /// Told of every device token change in this partition (set before the run): `PushReceiver`
    /// routes a push by its token to the partition whose device holds it.
    public var onPushAddress: (@Sendable (_ old: String?, _ new: String) -> Void)?

    public func pushAddressChanged(old: String?, new: String) {
        onPushAddress?(old, new)
    }

    /// The own connections of an install's process close (`network.connections: perDevice`);
    /// with the shared pools of addresses, a device's app has none of its own to close.
    public func closeConnections(of process: InstallProcess, reason: ConnectionCloseReason, at now: Instant) {
        guard ownConnections != nil else { return }
        client.closeConnections(owner: process, loop: loop.index, reason: reason)
    }

    /// From any thread: a push a service posted for `token`, handed to the partition on its loop.
    public func receivePush(token: String, data: [String: String], isDataOnly: Bool) {
        loop.execute { [self] in
            deliver(Arrival(device: -1, payload: .push(token: token, data: data, isDataOnly: isDataOnly), at: clock.now), detail: nil)
        }
    }

    public func wake(at instant: Instant, _ tick: @escaping () -> Void) {
        let delay = UInt64(max(0, (instant - clock.now).microseconds)) * 1_000
        let deadline = loop.now &+ delay
        // The same wake-up again (a tick that found nothing new due) keeps its timer.
        if let wakeTimer, wakeTimer.isPending, wakeDeadline <= deadline, deadline - wakeDeadline < 200_000 { return }
        wakeTimer?.cancel()
        wakeDeadline = deadline
        wakeTimer = loop.schedule(at: deadline, tick)
    }

    public func stopWaking() {
        wakeTimer?.cancel()
        wakeTimer = nil
    }

    private func deliver(_ arrival: Arrival, detail: (String, String)?) {
        if let (reason, text) = detail, errorDetails[reason] == nil { errorDetails[reason] = text }
        handler?(arrival)
    }

    public func send(_ outgoing: OutgoingRequest, device: Int, platform: String, source: SourceAddress, at now: Instant) -> (ExchangeCompletion, Instant)? {
        guard let target = targets[platform] else {
            let completion = ExchangeCompletion(requestID: outgoing.id, operation: outgoing.operation, sentAt: now, outcome: .transportError(reason: "noTarget"))
            return (completion, clock.now)
        }
        var request = HTTPClientRequest(
            method: outgoing.request.method, url: Self.url(target, outgoing.request),
            headers: outgoing.request.headers, body: outgoing.request.body, source: bindSources ? source.loopbackIP : nil,
            timeoutNanoseconds: UInt64(max(1, outgoing.timeout.microseconds)) * 1_000, loop: loop.index
        )
        if let (first, os) = ownConnections, os.indices.contains(device - first) {
            request.owner = ConnectionOwner(device: device, role: outgoing.sender, stack: os[device - first].connectionStack)
        }
        let id = outgoing.id
        let operation = outgoing.operation
        let intended = outgoing.intendedStart ?? now
        client.execute(request) { [self] result in
            let outcome: ExchangeOutcome
            var detail: (String, String)?
            switch result {
            case .response(let response, _):
                outcome = .response(response)
            case .failure(let error, _):
                outcome = .transportError(reason: error.reason.rawValue)
                detail = (error.reason.rawValue, error.detail)
            case .timeout:
                outcome = .timeout
            }
            let measured = result.timings
            let timings = TransportTimings(
                connect: measured.connectionsOpened > 0 ? TimeSpan(microseconds: Int64(measured.connect / 1_000)) : nil,
                tlsHandshake: measured.tlsHandshake > 0 ? TimeSpan(microseconds: Int64(measured.tlsHandshake / 1_000)) : nil,
                firstByte: TimeSpan(microseconds: Int64(measured.firstByte / 1_000)),
                service: TimeSpan(microseconds: Int64(measured.service / 1_000)),
                http2: measured.wentOut ? measured.http2 : nil
            )
            let completion = ExchangeCompletion(requestID: id, operation: operation, sentAt: intended, outcome: outcome, timings: timings)
            deliver(Arrival(device: device, completion: completion, at: clock.now), detail: detail)
        }
        return nil
    }

    // MARK: - WebSockets

    public func openSocket(_ open: SocketOpen, device: Int, platform: String, source: SourceAddress, at now: Instant) {
        let key = SocketKey(device: device, socket: open.id)
        guard let target = targets[platform] else {
            return failLater(key, .transportError(reason: "noTarget"), detail: nil)
        }
        // Over the file budget: refused here, counted, and retried as the device's SDK does,
        // rather than running the process out of files.
        guard socketBudget.take() else {
            return failLater(key, .transportError(reason: "socketBudget"), detail: ("socketBudget", "more WebSockets at once than this process's file budget allows (\(socketBudget.limit))"))
        }
        let handler = DeviceSocket(transport: self, key: key)
        WebSocketClient.connect(
            to: url(target, open.path), on: loop, tls: client.configuration.tls,
            source: bindSources ? source.loopbackIP : nil,
            connectTimeoutNanoseconds: UInt64(max(1, open.timeout.microseconds)) * 1_000, maxMessageBytes: maxWebSocketMessageBytes,
            delegate: handler
        )
    }

    /// A socket that fails before it is tried still fails after the call that asked for it, as a
    /// real one would: the partition is not re-entered from inside its own call.
    private func failLater(_ key: SocketKey, _ outcome: ExchangeOutcome, detail: (String, String)?) {
        loop.enqueue { [self] in
            deliver(Arrival(device: key.device, payload: .socket(.failed(socket: key.socket, outcome: outcome)), at: clock.now), detail: detail)
        }
    }

    public func sendOnSocket(_ socket: UInt64, text: String, device: Int, at now: Instant) {
        openSockets[SocketKey(device: device, socket: socket)]?.send(text: text)
    }

    public func closeSocket(_ socket: UInt64, device: Int, at now: Instant) {
        let key = SocketKey(device: device, socket: socket)
        guard let webSocket = openSockets.removeValue(forKey: key) else {
            closedEarly.insert(key)
            return
        }
        webSocket.close(code: 1000)
    }

    /// Where a built-in service's own messages go: the loopback mock server that holds the
    /// sessions (a real target sends its own).
    public func forwardServiceMessages(to sink: @escaping ([SessionMessage], Int) -> Void) {
        serviceSink = sink
    }

    public func deliverFromService(_ messages: [SessionMessage], platform: Int, at now: Instant) {
        serviceSink?(messages, platform)
    }

    /// Wall time has no transport timers: a real service keeps its own.
    public func timerFired(_ token: UInt64, at now: Instant) {}

    public func closeAllSockets() {
        let open = openSockets.values
        openSockets = [:]
        for webSocket in open { webSocket.close(code: 1001) }
    }

    public func takeArrived() -> [Arrival] { [] }

    public var currentTime: Instant { clock.now }

    /// Sockets this partition's devices hold open now.
    public var openSocketCount: Int { openSockets.count }

    fileprivate func socketOpened(_ key: SocketKey, _ webSocket: WebSocket) {
        if closedEarly.remove(key) != nil {
            webSocket.close(code: 1000)
        } else {
            openSockets[key] = webSocket
        }
        deliver(Arrival(device: key.device, payload: .socket(.opened(socket: key.socket)), at: clock.now), detail: nil)
    }

    fileprivate func socketFailed(_ key: SocketKey, _ outcome: ExchangeOutcome, detail: (String, String)?) {
        socketBudget.give()
        closedEarly.remove(key)
        deliver(Arrival(device: key.device, payload: .socket(.failed(socket: key.socket, outcome: outcome)), at: clock.now), detail: detail)
    }

    fileprivate func socketMessage(_ key: SocketKey, _ text: String) {
        deliver(Arrival(device: key.device, payload: .socket(.message(socket: key.socket, text: text)), at: clock.now), detail: nil)
    }

    /// A socket ended; the device hears of it only when it did not close it itself.
    fileprivate func socketEnded(_ key: SocketKey, _ webSocket: WebSocket, code: UInt16?, reason: String) {
        socketBudget.give()
        guard openSockets[key] === webSocket else { return }
        openSockets[key] = nil
        deliver(Arrival(device: key.device, payload: .socket(.closed(socket: key.socket, code: code.map(Int.init), reason: reason)), at: clock.now), detail: nil)
    }
}

/// WebSockets a run may hold at once, counted across its partitions with one atomic (taken once
/// per socket opened, never per message).
public final class SocketBudget: Sendable {
    public let limit: Int
    private let held = Atomic<Int>(0)

    public init(limit: Int) { self.limit = limit }

    /// Takes one socket's share; false when the budget is spent.
    func take() -> Bool {
        guard held.add(1, ordering: .relaxed).newValue <= limit else {
            held.subtract(1, ordering: .relaxed)
            return false
        }
        return true
    }

    func give() { held.subtract(1, ordering: .relaxed) }
}

/// One device socket's callbacks, on its loop, passed to the transport.
private final class DeviceSocket: WebSocketDelegate, @unchecked Sendable {
    let transport: NetworkTransport
    let key: SocketKey

    init(transport: NetworkTransport, key: SocketKey) {
        self.transport = transport
        self.key = key
    }

    func webSocketOpened(_ socket: WebSocket) { transport.socketOpened(key, socket) }

    func webSocket(_ socket: WebSocket, receivedText text: String) { transport.socketMessage(key, text) }

    func webSocketClosed(_ socket: WebSocket, code: UInt16?, reason: String, error: NetError?) {
        transport.socketEnded(key, socket, code: code, reason: error.map { "\($0.reason.rawValue): \($0.detail)" } ?? reason)
    }

    func webSocketDidNotOpen(_ error: NetError) {
        transport.socketFailed(key, .transportError(reason: error.reason.rawValue), detail: (error.reason.rawValue, error.detail))
    }

    func webSocketRefused(_ response: Response) { transport.socketFailed(key, .response(response), detail: nil) }
}
