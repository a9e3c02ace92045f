import CPushSwarmShim
import Dispatch
import Foundation
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmSystem
import Synchronization

/// One loop's listening socket and the connections it accepted.
final class Listener: Selectable, @unchecked Sendable {
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
        guard let connection = Connection.accepted(on: loop, fd: fd, peerIPv4: peer, tls: server.configuration.tls, delegate: serverConnection) else { return }
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
    /// Set while `processBuffered` runs: an answer given inline by the handler returns to its
    /// loop instead of recursing into the next request (a pipelining client once overflowed the
    /// stack after about 1,000 requests).
    private var processing = false

    /// Answers written and not yet taken by the peer past which no further pipelined request is
    /// handled until they drain, and unhandled request bytes past which the socket is not read:
    /// what one connection can make the server hold, as nginx bounds it with its buffers and
    /// HTTP/2 with its stream limit.
    static let maxQueuedAnswerBytes = 1 << 20
    static let maxBufferedRequestBytes = 1 << 18

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
        if http2 != nil { return readHTTP2(Array(decodingSpan: bytes)) }
        if !receivedAny {
            receivedAny = true
            // RFC 9113 section 3.3: prior knowledge; "PRI" is no HTTP/1.1 method.
            if bytes.count >= 3 && bytes[0] == UInt8(ascii: "P") && bytes[1] == UInt8(ascii: "R") && bytes[2] == UInt8(ascii: "I") {
                timer?.cancel()
                var limits = HTTP2ServerConnection.Limits()
                limits.maxConcurrentStreams = listener.server.configuration.http2MaxConcurrentStreams
                limits.maxBodyBytes = listener.server.configuration.limits.maxBodyBytes
                http2 = HTTP2ServerConnection(limits: limits)
                return readHTTP2(Array(decodingSpan: bytes))
            }
        }
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

    /// Handles the requests buffered, one after another, while each is answered at once; stops
    /// at one answered later (`respond` comes back here), at answers the peer is not taking
    /// (`connectionDrained` comes back here), or at an incomplete request (the next read does).
    private func processBuffered() {
        guard !processing else { return }
        processing = true
        defer { processing = false }
        while !awaitingAnswer, webSocket == nil, let connection {
            if connection.queuedWriteBytes > Self.maxQueuedAnswerBytes {
                // The peer sends but does not read: wait for the drain, as long as a request may
                // take to arrive.
                armWriteTimer()
                break
            }
            let message: HTTPMessage?
            do {
                message = try parser.next()
            } catch {
                listener.server.statistics.malformedRequests.add(1, ordering: .relaxed)
                reject(status: error.status, reason: error.reason)
                return
            }
            guard let message else { break }
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
        // What is left unparsed is one incomplete request (the parser's limits bound it) unless
        // answers are outstanding; then the socket waits.
        if let connection, webSocket == nil {
            listener.server.statistics.held(parser.bufferedCount + connection.queuedWriteBytes)
            connection.pauseReads(
                (awaitingAnswer || connection.queuedWriteBytes > Self.maxQueuedAnswerBytes)
                    && parser.bufferedCount > Self.maxBufferedRequestBytes
            )
        }
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
        // Inside `processBuffered` (the handler answered at once) its loop takes the next request.
        processBuffered()
    }

    func connectionDrained(_ connection: Connection) {
        guard webSocket == nil else { return }
        if !awaitingAnswer {
            if parser.isIdle { armIdleTimer() } else { armReadTimer() }
        }
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

    // MARK: HTTP/2 (h2c with prior knowledge: the client's first bytes are the preface)

    /// Set once the client spoke HTTP/2.
    private var http2: HTTP2ServerConnection?
    private var receivedAny = false

    private func readHTTP2(_ bytes: [UInt8]) {
        guard var state = http2, let connection else { return }
        let events = state.receive(bytes)
        http2 = state
        for event in events {
            switch event {
            case .request(let stream, let fields, let body):
                listener.server.statistics.requests.add(1, ordering: .relaxed)
                var method = "", target = "", headers: [Header] = []
                headers.reserveCapacity(fields.count)
                for field in fields {
                    let name = String(decoding: field.name, as: UTF8.self), value = String(decoding: field.value, as: UTF8.self)
                    switch name {
                    case ":method": method = value
                    case ":path": target = value
                    case ":authority": headers.append(Header("Host", value))
                    case ":scheme": break
                    default: headers.append(Header(name, value))
                    }
                }
                let request = ServerRequest(method: method, target: target, headers: headers, body: body, peer: connection.peerAddress)
                listener.server.handler(request, HTTPResponder(connection: self, loop: connection.loop, upgrade: false, stream: stream))
            case .clientGoingAway:
                break
            case .connectionError:
                listener.server.statistics.malformedRequests.add(1, ordering: .relaxed)
            }
        }
        afterHTTP2()
    }

    /// Writes what HTTP/2 has to say; closes once it is over (an error, or GOAWAY drained);
    /// the idle timer runs while no stream is open.
    private func afterHTTP2() {
        guard let connection, var state = http2 else { return }
        let output = state.takeOutput()
        http2 = state
        if !output.isEmpty { connection.write(output) }
        if state.isDrained {
            timer?.cancel()
            connection.closeAfterWrites()
            self.connection = nil
            listener.forget(self)
        } else if state.openStreams == 0 {
            armIdleTimer()
        } else {
            timer?.cancel()
        }
    }

    /// Answers an HTTP/2 stream, or the HTTP/1.1 request in hand (`stream` 0).
    func respond(_ response: Response, stream: UInt32) {
        guard stream != 0 else { return respond(response) }
        http2?.respond(stream: stream, status: response.status, headers: response.headers, body: response.body)
        afterHTTP2()
    }

    /// Resets an HTTP/2 stream (a fault: the request fails, its neighbours go on).
    func resetStream(_ stream: UInt32) {
        http2?.reset(stream, .internalError)
        afterHTTP2()
    }

    /// The GOAWAY fault: over HTTP/2, the last stream processed is the one before `stream`;
    /// over HTTP/1.1 the connection closes unanswered.
    func goAway(before stream: UInt32) {
        guard stream != 0 else { return drop(reset: false) }
        http2?.goAway(lastStream: stream >= 2 ? stream - 2 : 0)
        afterHTTP2()
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

    /// A client that stops taking its answers is dropped (as nginx's `send_timeout`).
    private func armWriteTimer() {
        timer?.cancel()
        timer = listener.loop.schedule(afterNanoseconds: listener.server.configuration.requestReadTimeoutNanoseconds) { [weak self] in
            self?.drop(reset: true)
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
