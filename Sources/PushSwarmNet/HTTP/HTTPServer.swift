import CPushSwarmShim
import Dispatch
import Foundation
public import PushSwarmCore
import PushSwarmMetrics
import PushSwarmSystem
import Synchronization

/// A request as the server received it.
public struct ServerRequest: Sendable {
    public var method: String
    /// Path and query as sent.
    public var target: String
    public var headers: [Header]
    public var body: [UInt8]
    /// The client's address (for a NAT group on loopback: its 127.x.y.z).
    public var peer: IPAddress

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The target's path, without its query (searched as bytes, as `Request.pathWithoutQuery`).
    public var path: String {
        target.utf8.firstIndex(of: UInt8(ascii: "?")).map { String(target[..<$0]) } ?? target
    }

    /// A WebSocket opening handshake (RFC 6455 section 4.2.1).
    public var isWebSocketUpgrade: Bool {
        method == "GET" && header("Upgrade")?.lowercased() == "websocket"
            && (header("Connection")?.lowercased().contains("upgrade") ?? false)
    }

    public var request: Request { Request(method: method, path: target, headers: headers, body: body) }
}

/// How a handler answers: now, later, or by accepting a WebSocket. Exactly one answer per request.
public final class HTTPResponder: @unchecked Sendable {
    private weak var connection: ServerConnection?
    private let loop: EventLoop
    private let upgrade: Bool
    /// The request's HTTP/2 stream; 0 over HTTP/1.1.
    let stream: UInt32

    init(connection: ServerConnection, loop: EventLoop, upgrade: Bool, stream: UInt32 = 0) {
        self.connection = connection
        self.loop = loop
        self.upgrade = upgrade
        self.stream = stream
    }

    /// Sends `response`, from any thread (one closure: the benchmark's hot path).
    public func respond(_ response: Response) {
        loop.execute { [self] in connection?.respond(response, stream: stream) }
    }

    /// A fault, after `nanoseconds`: the service drains the connection as a deploy does. Over
    /// HTTP/2, GOAWAY names the stream before this one as the last it processes: this request and
    /// any after it on the connection are unprocessed (the client sends them again on a new
    /// connection), those before are answered, then the connection closes. Over HTTP/1.1 the
    /// connection closes without an answer.
    public func goAway(afterNanoseconds nanoseconds: UInt64 = 0) {
        later(nanoseconds) { [stream] in $0.goAway(before: stream) }
    }

    /// Sends `response` after `nanoseconds` (a mock's latency), from the loop's thread or any.
    public func respond(_ response: Response, afterNanoseconds nanoseconds: UInt64) {
        guard nanoseconds > 0 else { return respond(response) }
        later(nanoseconds) { [stream] in $0.respond(response, stream: stream) }
    }

    /// Closes without answering, after `nanoseconds` (a fault: the client sees its request
    /// fail); `reset` sends a RST. Over HTTP/2 (as for the truncated, malformed and slow faults
    /// below) the request's stream is reset (RST_STREAM INTERNAL_ERROR) and the connection goes
    /// on; a slow body is answered whole after the delay.
    public func dropConnection(reset: Bool, afterNanoseconds nanoseconds: UInt64 = 0) {
        later(nanoseconds) { [stream] in
            // HTTP/2: the request's stream is reset, not the connection its neighbours share.
            stream != 0 ? $0.resetStream(stream) : $0.drop(reset: reset)
        }
    }

    /// A fault, after `nanoseconds`: the status line, headers and half the body of `response`,
    /// then the connection closes (the client sees the answer end early).
    public func respondTruncated(_ response: Response, afterNanoseconds nanoseconds: UInt64) {
        later(nanoseconds) { [stream] connection in
            if stream != 0 { return connection.resetStream(stream) }
            let bytes = ServerConnection.serialize(response, close: true, omitBody: false)
            connection.respondRaw(Array(bytes.prefix(bytes.count - max(1, (response.body.count + 1) / 2))))
        }
    }

    /// A fault, after `nanoseconds`: bytes that are not HTTP, then the connection closes.
    public func respondMalformed(afterNanoseconds nanoseconds: UInt64) {
        later(nanoseconds) { [stream] in
            stream != 0 ? $0.resetStream(stream) : $0.respondRaw(Array("HTTP/1.1 2OO WHAT\r\nContent-Length: x\r\n\r\n".utf8))
        }
    }

    /// A fault, after `nanoseconds`: `response` with its body sent at `bytesPerSecond`, then closed.
    public func respondSlowly(_ response: Response, bytesPerSecond: Int, afterNanoseconds nanoseconds: UInt64) {
        later(nanoseconds) { [stream] in
            stream != 0 ? $0.respond(response, stream: stream) : $0.respondPaced(response, bytesPerSecond: bytesPerSecond)
        }
    }

    /// Runs `action` on the connection's loop after `nanoseconds` (at once for 0), if it is still open.
    private func later(_ nanoseconds: UInt64, _ action: @escaping @Sendable (ServerConnection) -> Void) {
        loop.execute { [self] in
            if nanoseconds == 0 {
                if let connection { action(connection) }
            } else {
                loop.schedule(afterNanoseconds: nanoseconds) { [self] in if let connection { action(connection) } }
            }
        }
    }

    /// Completes a WebSocket handshake and hands the socket to `delegate`; only for requests with
    /// `isWebSocketUpgrade`. Call on the loop's thread, from the handler.
    public func acceptWebSocket(_ delegate: any WebSocketDelegate) {
        precondition(upgrade, "acceptWebSocket on a request that is not a WebSocket handshake")
        connection?.acceptWebSocket(delegate)
    }

    /// The same after `nanoseconds` (a mock's latency), from the loop's thread or any; `then` runs
    /// on the loop with whether the handshake was answered (false when the client left first).
    public func acceptWebSocket(_ delegate: any WebSocketDelegate & Sendable, afterNanoseconds nanoseconds: UInt64, then: @escaping @Sendable (Bool) -> Void) {
        precondition(upgrade, "acceptWebSocket on a request that is not a WebSocket handshake")
        loop.execute { [self] in
            loop.schedule(afterNanoseconds: nanoseconds) { [self] in
                guard let connection else { return then(false) }
                connection.acceptWebSocket(delegate)
                then(true)
            }
        }
    }
}

/// Answers requests on the server's loops. Called on a loop thread: hand long work elsewhere.
public typealias HTTPHandler = @Sendable (ServerRequest, HTTPResponder) -> Void

/// An HTTP/1.1 server on PushSwarm's event loops: one SO_REUSEPORT listener per loop,
/// keep-alive, in-order answers for pipelined requests, limits on header and body size, time
/// limits for slow clients, 4xx on malformed input and never a crash on anything a client sends.
/// A client whose first bytes are HTTP/2's preface speaks HTTP/2 (h2c with prior knowledge,
/// `HTTP2ServerConnection`): its requests are streams, answered in any order, the same handler
/// behind them.
public final class HTTPServer: Sendable {
    public struct Configuration: Sendable {
        public var limits: HTTPParser.Limits
        /// A request's head and body must arrive within this once its first byte has.
        public var requestReadTimeoutNanoseconds: UInt64
        /// A kept-alive connection with nothing to do is closed after this.
        public var idleTimeoutNanoseconds: UInt64
        /// The largest message an accepted WebSocket takes from its client (1009 above it).
        public var maxWebSocketMessageBytes: Int
        /// SETTINGS_MAX_CONCURRENT_STREAMS for a client that speaks HTTP/2 (nginx's 128).
        public var http2MaxConcurrentStreams = 128
        /// TLS on every connection (with ALPN offering `h2` then `http/1.1`); nil: cleartext
        /// (HTTP/1.1, or h2c with prior knowledge).
        public var tls: TLSServerContext?

        public init(
            limits: HTTPParser.Limits = HTTPParser.Limits(), requestReadTimeoutNanoseconds: UInt64 = 10_000_000_000,
            idleTimeoutNanoseconds: UInt64 = 75_000_000_000, maxWebSocketMessageBytes: Int = NetworkSettings.defaultMaxWebSocketMessageBytes
        ) {
            self.limits = limits
            self.requestReadTimeoutNanoseconds = requestReadTimeoutNanoseconds
            self.idleTimeoutNanoseconds = idleTimeoutNanoseconds
            self.maxWebSocketMessageBytes = maxWebSocketMessageBytes
        }
    }

    /// Counts for `/metrics`.
    public final class Statistics: Sendable {
        let connectionsAccepted = Atomic<Int>(0)
        let connectionsOpen = Atomic<Int>(0)
        let requests = Atomic<Int>(0)
        let malformedRequests = Atomic<Int>(0)
        let webSocketsOpen = Atomic<Int>(0)
        let acceptErrors = Atomic<Int>(0)
        /// The most bytes one connection made the server hold at once: requests read and not yet
        /// handled, and answers not yet taken by the peer (bounded per connection; see
        /// `ServerConnection.maxQueuedAnswerBytes`).
        let heldBytesPeak = Atomic<Int>(0)
        private let untilIdle = Mutex<[CheckedContinuation<Void, Never>]>([])

        /// Returns once no connection or WebSocket is open: at once if none is, else when the
        /// last one ends (a drain, and what a test awaits instead of polling the gauges).
        public func noConnectionOpen() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let idle = untilIdle.withLock { waiting -> Bool in
                    if isIdle { return true }
                    waiting.append(continuation)
                    return false
                }
                if idle { continuation.resume() }
            }
        }

        /// Sequentially consistent, as the two gauges' decrements are: two loops that each take
        /// one gauge to zero and then read the other must not both read it stale (and both miss
        /// that they left none open).
        private var isIdle: Bool {
            connectionsOpen.load(ordering: .sequentiallyConsistent) == 0 && webSocketsOpen.load(ordering: .sequentiallyConsistent) == 0
        }

        /// A connection or WebSocket ended (its gauge is down already): wakes the drain's waiters
        /// if it was the last.
        func ended() {
            guard isIdle else { return }
            let waiting = untilIdle.withLock { waiting -> [CheckedContinuation<Void, Never>] in
                guard !waiting.isEmpty, isIdle else { return [] }
                defer { waiting.removeAll() }
                return waiting
            }
            for continuation in waiting { continuation.resume() }
        }

        func held(_ bytes: Int) {
            var peak = heldBytesPeak.load(ordering: .relaxed)
            while bytes > peak {
                let (exchanged, original) = heldBytesPeak.compareExchange(expected: peak, desired: bytes, ordering: .relaxed)
                if exchanged { return }
                peak = original
            }
        }

        /// The counts now, by name.
        public var snapshot: [(name: String, value: Int)] {
            [
                ("connections_accepted_total", connectionsAccepted.load(ordering: .relaxed)),
                ("connections_open", connectionsOpen.load(ordering: .relaxed)),
                ("requests_total", requests.load(ordering: .relaxed)),
                ("malformed_requests_total", malformedRequests.load(ordering: .relaxed)),
                ("websockets_open", webSocketsOpen.load(ordering: .relaxed)),
                ("accept_errors_total", acceptErrors.load(ordering: .relaxed)),
                ("connection_held_bytes_peak", heldBytesPeak.load(ordering: .relaxed)),
            ]
        }
    }

    public let group: EventLoopGroup
    public let configuration: Configuration
    public let statistics = Statistics()
    let handler: HTTPHandler
    /// The loop that serves a peer's connections, when the handler's state is partitioned by
    /// peer address; nil: the loop that accepted it.
    let owner: (@Sendable (IPAddress) -> Int)?
    private let listeners = Mutex<[Listener]>([])
    private let boundPort = Atomic<Int>(0)

    /// `owner`: the index of the loop each peer's connections belong on; a connection accepted on
    /// another loop is handed there once, at accept (one hand-off per connection, none per request).
    public init(
        group: EventLoopGroup, configuration: Configuration = Configuration(), owner: (@Sendable (IPAddress) -> Int)? = nil,
        handler: @escaping HTTPHandler
    ) {
        self.group = group
        self.configuration = configuration
        self.owner = owner
        self.handler = handler
    }

    /// The listener on loop number `index`, if the server listens there.
    func listener(onLoop index: Int) -> Listener? {
        listeners.withLock { $0.first { $0.loop.index == index } }
    }

    /// The port listened on (useful after binding port 0).
    public var port: UInt16 { UInt16(boundPort.load(ordering: .acquiring)) }

    /// Binds `address` (port 0: an ephemeral one) on every loop and starts accepting.
    public func start(at address: SocketAddress) throws(NetError) {
        if case .v6 = address.ip, !address.ip.isLoopback {
            throw NetError(.addressUnavailable, detail: "IPv6 listening is on ::1 only; use [::1]:PORT or an IPv4 address")
        }
        var port = address.port
        var created: [(Int32, EventLoop)] = []
        for loop in group.loops {
            let fd: Int32
            switch address.ip {
            case .v4: fd = ps_socket(AF_INET, Int32(SOCK_STREAM.rawValue))
            case .v6: fd = ps_socket(AF_INET6, Int32(SOCK_STREAM.rawValue))
            }
            guard fd >= 0 else { throw closing(created, .errno(errno, during: "socket")) }
            _ = ps_reuse_address(fd)
            _ = ps_reuse_port(fd)
            let bound: Int32
            switch address.ip {
            case .v4(let value): bound = ps_bind_ipv4(fd, value, port)
            case .v6: bound = ps_bind_ipv6_loopback(fd, port)
            }
            guard bound == 0, listen(fd, 4096) == 0 else {
                let error = NetError.errno(errno, during: "listen on \(SocketAddress(ip: address.ip, port: port))")
                close(fd)
                throw closing(created, error)
            }
            if port == 0 { port = UInt16(ps_local_port(fd)) }
            created.append((fd, loop))
        }
        boundPort.store(Int(port), ordering: .releasing)
        for (fd, loop) in created {
            let listener = Listener(fd: fd, loop: loop, server: self)
            listeners.withLock { $0.append(listener) }
            loop.execute { listener.register() }
        }
    }

    /// Serves `fd`, a stream socket connected already (one end of a socketpair: the fuzzer's
    /// pipelined input), on the first loop's listener, as if it had been accepted there. Closes
    /// it when the server does not listen.
    public func serve(connectedSocket fd: Int32) {
        guard let listener = listeners.withLock({ $0.first }) else {
            close(fd)
            return
        }
        listener.loop.execute { listener.adopt(fd, peer: 0) }
    }

    /// Stops accepting and closes every connection.
    public func stop() {
        let all = listeners.withLock { list -> [Listener] in
            let taken = list
            list.removeAll()
            return taken
        }
        let done = DispatchGroup()
        for listener in all {
            done.enter()
            listener.loop.execute {
                listener.close()
                done.leave()
            }
        }
        done.wait()
    }

    private func closing(_ created: [(Int32, EventLoop)], _ error: NetError) -> NetError {
        for (fd, _) in created { close(fd) }
        return error
    }
}
