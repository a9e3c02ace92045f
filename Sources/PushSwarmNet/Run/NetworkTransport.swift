import Dispatch
public import PushSwarmCore
import Synchronization

/// Wall time over real sockets: each request goes out through `HTTPClient` to the platform's
/// target, from the device's NAT address when the target is on loopback; answers arrive on the
/// event loops and wake the run.
public final class NetworkTransport: RunTransport, Sendable {
    private struct State {
        var arrived: [Arrival] = []
        var waiter: CheckedContinuation<Void, Never>?
        var generation: UInt64 = 0
        var interrupted = false
        /// The first detail seen for each transport error reason, for the end-of-run message.
        var errorDetails: [String: String] = [:]
    }

    fileprivate struct SocketKey: Hashable {
        var device: Int
        var socket: UInt64
    }

    private struct Sockets {
        var open: [SocketKey: WebSocket] = [:]
        /// Closed by the device before its handshake finished: closed as soon as it opens.
        var closedEarly = Set<SocketKey>()
    }

    public let client: HTTPClient
    public let clock: WallClock
    private let targets: [String: TargetURL]
    private let bindSources: Bool
    private let state = Mutex(State())
    private let sockets = Mutex(Sockets())
    private let serviceSink = Mutex<(@Sendable ([SessionMessage], Int) -> Void)?>(nil)

    /// `targets`: each platform's base URL (request paths are appended to its path).
    /// WebSockets the devices may hold (open or opening) at once: the run's file budget for them.
    public let maxOpenSockets: Int
    private let socketsHeld = Atomic<Int>(0)

    public init(client: HTTPClient, targets: [String: TargetURL], clock: WallClock, maxOpenSockets: Int = 10_000) {
        self.client = client
        self.maxOpenSockets = maxOpenSockets
        self.clock = clock
        self.targets = targets
        // Each target's name is looked up here, once, before any event loop needs it.
        let addresses = targets.values.map { Resolver.address(of: $0.origin) }
        bindSources = addresses.allSatisfy { (try? $0.get().ip.isLoopback) ?? false }
    }

    /// Whether devices bind their NAT group's loopback address (only when every target is on
    /// loopback: from this machine a remote service sees one address whatever is bound).
    public var bindsSourceAddresses: Bool { bindSources }

    private func url(_ target: TargetURL, _ path: String) -> TargetURL {
        let base = target.path == "/" ? "" : (target.path.hasSuffix("/") ? String(target.path.dropLast()) : target.path)
        return TargetURL(origin: target.origin, path: base + path)
    }

    public func send(_ outgoing: OutgoingRequest, device: Int, platform: String, source: SourceAddress, at now: Instant) -> (ExchangeCompletion, Instant)? {
        guard let target = targets[platform] else {
            let completion = ExchangeCompletion(requestID: outgoing.id, operation: outgoing.operation, sentAt: now, outcome: .transportError(reason: "noTarget"))
            return (completion, clock.now)
        }
        let request = HTTPClientRequest(
            method: outgoing.request.method, url: url(target, outgoing.request.path),
            headers: outgoing.request.headers, body: outgoing.request.body, source: bindSources ? source.loopbackIP : nil,
            timeoutNanoseconds: UInt64(max(1, outgoing.timeout.microseconds)) * 1_000
        )
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
                connect: measured.connect > 0 ? TimeSpan(microseconds: Int64(measured.connect / 1_000)) : nil,
                firstByte: TimeSpan(microseconds: Int64(measured.firstByte / 1_000)),
                service: TimeSpan(microseconds: Int64(measured.service / 1_000))
            )
            let completion = ExchangeCompletion(requestID: id, operation: operation, sentAt: intended, outcome: outcome, timings: timings)
            deliver(Arrival(device: device, completion: completion, at: clock.now), detail: detail)
        }
        return nil
    }

    // MARK: - WebSockets

    public func openSocket(_ open: SocketOpen, device: Int, platform: String, source: SourceAddress, at now: Instant) {
        guard let target = targets[platform] else {
            return deliver(Arrival(device: device, payload: .socket(.failed(socket: open.id, outcome: .transportError(reason: "noTarget"))), at: clock.now), detail: nil)
        }
        // Over the file budget: refused here, counted, and retried as the device's SDK does,
        // rather than running the process out of files.
        guard socketsHeld.add(1, ordering: .relaxed).newValue <= maxOpenSockets else {
            socketsHeld.subtract(1, ordering: .relaxed)
            return deliver(Arrival(device: device, payload: .socket(.failed(socket: open.id, outcome: .transportError(reason: "socketBudget"))), at: clock.now), detail: ("socketBudget", "more WebSockets at once than this process's file budget allows (\(maxOpenSockets))"))
        }
        let handler = DeviceSocket(transport: self, key: SocketKey(device: device, socket: open.id))
        WebSocketClient.connect(
            to: url(target, open.path), on: client.group.loop(for: device), tls: client.configuration.tls,
            source: bindSources ? source.loopbackIP : nil,
            connectTimeoutNanoseconds: UInt64(max(1, open.timeout.microseconds)) * 1_000, delegate: handler
        )
    }

    public func sendOnSocket(_ socket: UInt64, text: String, device: Int, at now: Instant) {
        guard let webSocket = sockets.withLock({ $0.open[SocketKey(device: device, socket: socket)] }) else { return }
        webSocket.loop.execute { webSocket.send(text: text) }
    }

    public func closeSocket(_ socket: UInt64, device: Int, at now: Instant) {
        let key = SocketKey(device: device, socket: socket)
        let webSocket = sockets.withLock { sockets -> WebSocket? in
            guard let webSocket = sockets.open.removeValue(forKey: key) else {
                sockets.closedEarly.insert(key)
                return nil
            }
            return webSocket
        }
        if let webSocket { webSocket.loop.execute { webSocket.close(code: 1000) } }
    }

    /// Where a built-in service's own messages go: the loopback mock server that holds the
    /// sessions (a real target sends its own).
    public func forwardServiceMessages(to sink: @escaping @Sendable ([SessionMessage], Int) -> Void) {
        serviceSink.withLock { $0 = sink }
    }

    public func deliverFromService(_ messages: [SessionMessage], platform: Int, at now: Instant) {
        serviceSink.withLock { $0 }?(messages, platform)
    }

    /// Wall time has no transport timers: a real service keeps its own.
    public func timerFired(_ token: UInt64, at now: Instant) {}

    public func closeAllSockets() {
        let open = sockets.withLock { sockets in
            defer { sockets.open = [:] }
            return Array(sockets.open.values)
        }
        for webSocket in open { webSocket.loop.execute { webSocket.close(code: 1001) } }
    }

    /// Sockets the devices hold open now.
    public var openSocketCount: Int { sockets.withLock { $0.open.count } }

    fileprivate func socketOpened(_ key: SocketKey, _ webSocket: WebSocket) {
        let closeNow = sockets.withLock { sockets -> Bool in
            if sockets.closedEarly.remove(key) != nil { return true }
            sockets.open[key] = webSocket
            return false
        }
        if closeNow { webSocket.close(code: 1000) }
        deliver(Arrival(device: key.device, payload: .socket(.opened(socket: key.socket)), at: clock.now), detail: nil)
    }

    fileprivate func socketFailed(_ key: SocketKey, _ outcome: ExchangeOutcome, detail: (String, String)?) {
        socketsHeld.subtract(1, ordering: .relaxed)
        _ = sockets.withLock { $0.closedEarly.remove(key) }
        deliver(Arrival(device: key.device, payload: .socket(.failed(socket: key.socket, outcome: outcome)), at: clock.now), detail: detail)
    }

    fileprivate func socketMessage(_ key: SocketKey, _ text: String) {
        deliver(Arrival(device: key.device, payload: .socket(.message(socket: key.socket, text: text)), at: clock.now), detail: nil)
    }

    /// A socket ended; the device hears of it only when it did not close it itself.
    fileprivate func socketEnded(_ key: SocketKey, _ webSocket: WebSocket, code: UInt16?, reason: String) {
        socketsHeld.subtract(1, ordering: .relaxed)
        let wasOpen = sockets.withLock { sockets -> Bool in
            guard sockets.open[key] === webSocket else { return false }
            sockets.open[key] = nil
            return true
        }
        guard wasOpen else { return }
        deliver(Arrival(device: key.device, payload: .socket(.closed(socket: key.socket, code: code.map(Int.init), reason: reason)), at: clock.now), detail: nil)
    }

    public func takeArrived() -> [Arrival] {
        state.withLock { state in
            let taken = state.arrived
            state.arrived.removeAll(keepingCapacity: true)
            return taken
        }
    }

    public func wait(until instant: Instant?) async -> Instant {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let generation: UInt64? = state.withLock { state in
                if !state.arrived.isEmpty || state.interrupted { return nil }
                state.generation += 1
                state.waiter = continuation
                return state.generation
            }
            guard let generation else { return continuation.resume() }
            if let instant {
                let delay = max(0, (instant - clock.now).microseconds)
                DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(Int(delay))) { [self] in
                    wake(generation: generation)
                }
            }
        }
        return clock.now
    }

    public var isInterrupted: Bool { state.withLock { $0.interrupted } }

    public var currentTime: Instant { clock.now }

    /// Asks the run to stop (Ctrl-C): requests in flight finish, nothing new starts.
    public func interrupt() {
        state.withLock { $0.interrupted = true }
        wake(generation: nil)
    }

    /// Each transport error reason seen, with the first detail (`certificate verification
    /// failed: self-signed certificate`).
    public var errorDetails: [String: String] { state.withLock { $0.errorDetails } }

    private func deliver(_ arrival: Arrival, detail: (String, String)?) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.arrived.append(arrival)
            if let (reason, text) = detail, state.errorDetails[reason] == nil { state.errorDetails[reason] = text }
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Resumes the run if it is still in the wait numbered `generation` (nil: any wait).
    private func wake(generation: UInt64?) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard generation == nil || generation == state.generation else { return nil }
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }
}

/// One device socket's callbacks, on its loop, passed to the transport.
private final class DeviceSocket: WebSocketDelegate, @unchecked Sendable {
    let transport: NetworkTransport
    let key: NetworkTransport.SocketKey

    init(transport: NetworkTransport, key: NetworkTransport.SocketKey) {
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
