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

    fileprivate init(connection: ServerConnection, loop: EventLoop, upgrade: Bool) {
        self.connection = connection
        self.loop = loop
        self.upgrade = upgrade
    }

    /// Sends `response`, from any thread (one closure: the benchmark's hot path).
    public func respond(_ response: Response) {
        loop.execute { [self] in connection?.respond(response) }
    }

    /// Sends `response` after `nanoseconds` (a mock's latency), from the loop's thread or any.
    public func respond(_ response: Response, afterNanoseconds nanoseconds: UInt64) {
        guard nanoseconds > 0 else { return respond(response) }
        later(nanoseconds) { $0.respond(response) }
    }

    /// Closes without answering, after `nanoseconds` (a fault: the client sees its request
    /// fail); `reset` sends a RST.
    public func dropConnection(reset: Bool, afterNanoseconds nanoseconds: UInt64 = 0) {
        later(nanoseconds) { $0.drop(reset: reset) }
    }

    /// A fault, after `nanoseconds`: the status line, headers and half the body of `response`,
    /// then the connection closes (the client sees the answer end early).
    public func respondTruncated(_ response: Response, afterNanoseconds nanoseconds: UInt64) {
        later(nanoseconds) { connection in
            let bytes = ServerConnection.serialize(response, close: true, omitBody: false)
            connection.respondRaw(Array(bytes.prefix(bytes.count - max(1, (response.body.count + 1) / 2))))
        }
    }

    /// A fault, after `nanoseconds`: bytes that are not HTTP, then the connection closes.
    public func respondMalformed(afterNanoseconds nanoseconds: UInt64) {
        later(nanoseconds) { $0.respondRaw(Array("HTTP/1.1 2OO WHAT\r\nContent-Length: x\r\n\r\n".utf8)) }
    }

    /// A fault, after `nanoseconds`: `response` with its body sent at `bytesPerSecond`, then closed.
    public func respondSlowly(_ response: Response, bytesPerSecond: Int, afterNanoseconds nanoseconds: UInt64) {
        later(nanoseconds) { $0.respondPaced(response, bytesPerSecond: bytesPerSecond) }
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
public final class HTTPServer: Sendable {
    public struct Configuration: Sendable {
        public var limits: HTTPParser.Limits
        /// A request's head and body must arrive within this once its first byte has.
        public var requestReadTimeoutNanoseconds: UInt64
        /// A kept-alive connection with nothing to do is closed after this.
        public var idleTimeoutNanoseconds: UInt64
        /// The largest message an accepted WebSocket takes from its client (1009 above it).
        public var maxWebSocketMessageBytes: Int

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

        /// The counts now, by name.
        public var snapshot: [(name: String, value: Int)] {
            [
                ("connections_accepted_total", connectionsAccepted.load(ordering: .relaxed)),
                ("connections_open", connectionsOpen.load(ordering: .relaxed)),
                ("requests_total", requests.load(ordering: .relaxed)),
                ("malformed_requests_total", malformedRequests.load(ordering: .relaxed)),
                ("websockets_open", webSocketsOpen.load(ordering: .relaxed)),
                ("accept_errors_total", acceptErrors.load(ordering: .relaxed)),
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
    fileprivate func listener(onLoop index: Int) -> Listener? {
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

/// One loop's listening socket and the connections it accepted.
private final class Listener: Selectable, @unchecked Sendable {
    let fd: Int32
    let loop: EventLoop
    let server: HTTPServer
    private var slot = -1
    private var paused = false
    var connections: [ObjectIdentifier: ServerConnection] = [:]

    init(fd: Int32, loop: EventLoop, server: HTTPServer) {
        self.fd = fd
        self.loop = loop
        self.server = server
    }

    func register() {
        slot = loop.register(fd, self, events: UInt32(PS_EPOLLIN))
    }

    func ready(_ events: UInt32) {
        while !paused {
            let (accepted, peer) = Sockets.accept(fd)
            if accepted < 0 {
                let code = errno
                if code == EAGAIN || code == EWOULDBLOCK { return }
                if code == EINTR || code == ECONNABORTED { continue }
                server.statistics.acceptErrors.add(1, ordering: .relaxed)
                // Out of files: stop accepting for a moment instead of spinning on the listener.
                paused = true
                loop.modify(fd, slot: slot, events: 0)
                loop.schedule(afterNanoseconds: 100_000_000) { [self] in
                    guard slot >= 0 else { return }
                    paused = false
                    loop.modify(fd, slot: slot, events: UInt32(PS_EPOLLIN))
                }
                return
            }
            if let owner = server.owner {
                let index = owner(.v4(peer))
                if index != loop.index, let other = server.listener(onLoop: index) {
                    let address = peer
                    other.loop.enqueue { other.adopt(accepted, peer: address) }
                    continue
                }
            }
            adopt(accepted, peer: peer)
        }
    }

    /// Serves an accepted socket on this listener's loop (closes it if the listener has closed).
    func adopt(_ fd: Int32, peer: UInt32) {
        guard slot >= 0 else {
            Glibc.close(fd)
            return
        }
        let serverConnection = ServerConnection(listener: self)
        guard let connection = Connection.accepted(on: loop, fd: fd, peerIPv4: peer, delegate: serverConnection) else { return }
        serverConnection.attach(connection)
        connections[ObjectIdentifier(serverConnection)] = serverConnection
        server.statistics.connectionsAccepted.add(1, ordering: .relaxed)
        server.statistics.connectionsOpen.add(1, ordering: .relaxed)
    }

    func forget(_ connection: ServerConnection) {
        if connections.removeValue(forKey: ObjectIdentifier(connection)) != nil {
            server.statistics.connectionsOpen.subtract(1, ordering: .sequentiallyConsistent)
            server.statistics.ended()
        }
    }

    func close() {
        loop.deregister(fd, slot: slot)
        slot = -1
        Glibc.close(fd)
        for connection in Array(connections.values) { connection.drop(reset: false) }
    }
}

/// One accepted connection: parses requests, calls the handler, writes answers in order.
final class ServerConnection: ConnectionDelegate, @unchecked Sendable {
    private let listener: Listener
    private var connection: Connection?
    private var parser: HTTPParser
    private var awaitingAnswer = false
    private var currentKeepAlive = true
    private var currentIsHead = false
    private var timer: LoopTimer?
    private var webSocket: WebSocket?

    fileprivate init(listener: Listener) {
        self.listener = listener
        parser = HTTPParser(kind: .request, limits: listener.server.configuration.limits)
    }

    func attach(_ connection: Connection) {
        self.connection = connection
        armIdleTimer()
    }

    // MARK: ConnectionDelegate

    func connectionOpened(_ connection: Connection) {}

    func connection(_ connection: Connection, read bytes: Span<UInt8>) {
        let wasIdle = parser.isIdle
        parser.append(bytes)
        if wasIdle && !awaitingAnswer { armReadTimer() }
        processBuffered()
    }

    func connectionClosed(_ connection: Connection, error: NetError?) {
        self.connection = nil
        timer?.cancel()
        listener.forget(self)
    }

    // MARK: requests

    private func processBuffered() {
        guard !awaitingAnswer, webSocket == nil, let connection else { return }
        let message: HTTPMessage?
        do {
            message = try parser.next()
        } catch {
            listener.server.statistics.malformedRequests.add(1, ordering: .relaxed)
            reject(status: error.status, reason: error.reason)
            return
        }
        guard let message else { return }
        timer?.cancel()
        awaitingAnswer = true
        currentKeepAlive = message.keepAlive
        currentIsHead = message.startLine.0 == "HEAD"
        lastHandshakeKey = message.header("sec-websocket-key")
        lastHandshakeVersion = message.header("sec-websocket-version")
        listener.server.statistics.requests.add(1, ordering: .relaxed)
        let request = ServerRequest(
            method: message.startLine.0, target: message.startLine.1, headers: message.headers, body: message.body,
            peer: connection.peerAddress
        )
        let responder = HTTPResponder(connection: self, loop: connection.loop, upgrade: request.isWebSocketUpgrade)
        listener.server.handler(request, responder)
    }

    func respond(_ response: Response) {
        guard awaitingAnswer, let connection else { return }
        awaitingAnswer = false
        let close = !currentKeepAlive || response.header("Connection")?.lowercased() == "close"
        connection.write(Self.serialize(response, close: close, omitBody: currentIsHead))
        if close {
            connection.closeAfterWrites()
            self.connection = nil
            listener.forget(self)
            return
        }
        if parser.isIdle { armIdleTimer() } else { armReadTimer() }
        processBuffered()
    }

    /// Writes `bytes` as the answer and closes after them (a fault).
    func respondRaw(_ bytes: [UInt8]) {
        guard awaitingAnswer, let connection else { return }
        awaitingAnswer = false
        timer?.cancel()
        connection.write(bytes)
        connection.closeAfterWrites()
        self.connection = nil
        listener.forget(self)
    }

    /// Writes the head at once and the body in tenths of a second's worth, then closes (a fault).
    func respondPaced(_ response: Response, bytesPerSecond: Int) {
        guard awaitingAnswer, let connection else { return }
        awaitingAnswer = false
        timer?.cancel()
        let bytes = Self.serialize(response, close: true, omitBody: currentIsHead)
        let headLength = bytes.count - (currentIsHead ? 0 : response.body.count)
        connection.write(Array(bytes.prefix(headLength)))
        self.connection = nil
        listener.forget(self)
        let chunk = max(1, bytesPerSecond / 10)
        var offset = headLength
        func next() {
            guard offset < bytes.count else { return connection.closeAfterWrites() }
            let end = min(bytes.count, offset + chunk)
            connection.write(Array(bytes[offset..<end]))
            offset = end
            connection.loop.schedule(afterNanoseconds: 100_000_000) { next() }
        }
        connection.loop.schedule(afterNanoseconds: 100_000_000) { next() }
    }

    func drop(reset: Bool) {
        guard let connection else { return }
        timer?.cancel()
        connection.close(reset: reset)
        // A WebSocket's end comes back through `webSocketEnded`.
        webSocket?.abort()
        self.connection = nil
        listener.forget(self)
    }

    /// The WebSocket this connection became has ended (either side closed, or the server
    /// stopped): the connection is gone, and the listener forgets it. Before, nothing told the
    /// server, and every finished session stayed in its table (≈ 0.8 KB each, and the
    /// connections_open and websockets_open gauges only grew).
    private func webSocketEnded() {
        guard webSocket != nil else { return }
        webSocket = nil
        listener.server.statistics.webSocketsOpen.subtract(1, ordering: .sequentiallyConsistent)
        timer?.cancel()
        connection = nil
        listener.forget(self)
        listener.server.statistics.ended()
    }

    func acceptWebSocket(_ delegate: any WebSocketDelegate) {
        guard awaitingAnswer, let connection else { return }
        awaitingAnswer = false
        // Parse errors here were caught by `isWebSocketUpgrade`'s caller; the handshake checks
        // the key and version (RFC 6455 section 4.2.1).
        guard let key = lastHandshakeKey, let version = lastHandshakeVersion, version == "13",
              let decoded = Data(base64Encoded: key), decoded.count == 16
        else {
            awaitingAnswer = true
            let response = Response(
                status: 400, headers: [Header("Sec-WebSocket-Version", "13"), Header("Content-Type", "application/json")],
                body: Array(#"{"error":"a WebSocket handshake needs Sec-WebSocket-Key (16 bytes, base64) and Sec-WebSocket-Version: 13"}"#.utf8)
            )
            respond(response)
            return
        }
        timer?.cancel()
        let accept = WebSocketHandshake.acceptValue(for: key)
        connection.write(Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\n\r\n".utf8))
        // From here the socket is the connection's delegate: reads and the close go to it.
        let socket = WebSocket(role: .server, connection: connection, delegate: delegate)
        webSocket = socket
        socket.maxMessageBytes = listener.server.configuration.maxWebSocketMessageBytes
        socket.onFinish = { [weak self] in self?.webSocketEnded() }
        listener.server.statistics.webSocketsOpen.add(1, ordering: .relaxed)
        let remainder = parser.takeRemainder()
        delegate.webSocketOpened(socket)
        if !remainder.isEmpty { socket.connection(connection, read: remainder.span) }
    }

    private var lastHandshakeKey: String?
    private var lastHandshakeVersion: String?

    /// Rejects input the parser refused: the status it gives, a reason, and the connection closed.
    private func reject(status: Int, reason: String) {
        guard let connection else { return }
        let body = JSONWriter.bytes(of: ["error": .string(reason)])
        connection.write(Self.serialize(Response(status: status, headers: [Header("Content-Type", "application/json")], body: body), close: true, omitBody: false))
        connection.closeAfterWrites()
        self.connection = nil
        timer?.cancel()
        listener.forget(self)
    }

    private func armIdleTimer() {
        timer?.cancel()
        timer = listener.loop.schedule(afterNanoseconds: listener.server.configuration.idleTimeoutNanoseconds) { [weak self] in
            self?.drop(reset: false)
        }
    }

    /// A slow client (a slowloris) gets a 408 and the connection closed.
    private func armReadTimer() {
        timer?.cancel()
        timer = listener.loop.schedule(afterNanoseconds: listener.server.configuration.requestReadTimeoutNanoseconds) { [weak self] in
            self?.reject(status: 408, reason: "request not received in time")
        }
    }

    static func serialize(_ response: Response, close: Bool, omitBody: Bool) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128 + response.body.count)
        bytes.append(contentsOf: "HTTP/1.1 \(response.status) \(reasonPhrase(response.status))\r\n".utf8)
        for header in response.headers {
            let name = header.name.lowercased()
            if name == "content-length" || name == "connection" || name == "transfer-encoding" { continue }
            bytes.append(contentsOf: header.name.utf8)
            bytes.append(contentsOf: ": ".utf8)
            bytes.append(contentsOf: header.value.utf8)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        bytes.append(contentsOf: "Content-Length: \(response.body.count)\r\n".utf8)
        if close { bytes.append(contentsOf: "Connection: close\r\n".utf8) }
        bytes.append(contentsOf: "\r\n".utf8)
        if !omitBody { bytes.append(contentsOf: response.body) }
        return bytes
    }

    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 101: "Switching Protocols"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "Status \(status)"
        }
    }
}
