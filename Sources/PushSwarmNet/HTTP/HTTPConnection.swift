import PushSwarmCore
import PushSwarmMetrics
import PushSwarmSystem
import Synchronization

/// The TLS context used when a client was made without one: system roots, verification on.
enum DefaultTLS {
    static let context: TLSContext? = try? TLSContext()
}

/// One connection of a pool: HTTP/1.1 carrying one exchange at a time, or HTTP/2 (ALPN chose
/// `h2`, or prior knowledge) carrying each exchange as a stream, up to the server's
/// SETTINGS_MAX_CONCURRENT_STREAMS.
final class HTTPConnection: ConnectionDelegate, @unchecked Sendable {
    private let pool: ConnectionPool
    private var connection: Connection?
    private var parser: HTTPParser
    private var current: Exchange?
    private var connectTimer: LoopTimer?
    private var connectStartedAt: UInt64 = 0
    private var exchangesCarried = 0
    private var receivedForCurrent = false
    private var isOpened = false
    /// Opened with no request to take (the one it was opened for went out on a connection that
    /// freed first): its opening and connect time count to the first exchange it carries, so
    /// that connections opened agree with the server's count of connections that carried one.
    /// The opening's TCP and TLS times, until the first request on it counts them.
    private var uncountedConnect: (tcp: UInt64, tls: UInt64)?
    /// Its close was counted (or, at the run's end, left uncounted on purpose).
    private var closeCounted = false
    /// Its TLS session was handed to the pool for later connections to resume.
    private var keptTLSSession = false
    /// Set once it speaks HTTP/2: the protocol's state and the exchange on each open stream.
    private var http2: HTTP2Streams?

    init(pool: ConnectionPool, limits: HTTPParser.Limits) {
        self.pool = pool
        parser = HTTPParser(kind: .response, limits: limits)
    }

    /// Open, and (HTTP/2) not going away.
    var isUsable: Bool {
        guard connection?.isOpen == true else { return false }
        guard let http2 else { return true }
        return http2.state.goingAway == nil && !http2.state.isClosed
    }

    /// Speaks HTTP/2: takes requests while it carries others.
    var isMultiplexed: Bool { http2 != nil }

    /// Whether a request may go out on it now: HTTP/1.1 with none in flight, HTTP/2 while a
    /// stream may open.
    var canTakeRequest: Bool {
        guard connection?.isOpen == true else { return false }
        guard let http2 else { return current == nil }
        return http2.state.canOpenStream
    }

    /// Requests on it now.
    var activeRequests: Int { http2?.exchanges.count ?? (current == nil ? 0 : 1) }

    func connect(to address: SocketAddress, tls: TLSContext?, alpn: [String] = []) {
        connectStartedAt = pool.loop.now
        let result = Connection.connect(
            on: pool.loop, to: address, from: pool.key.source, tls: tls, hostName: pool.key.origin.host,
            resuming: tls == nil ? nil : pool.savedTLSSession, alpn: tls == nil ? [] : alpn, delegate: self
        )
        switch result {
        case .success(let connection):
            self.connection = connection
            // A strong capture, let go when the timer fires or is cancelled (opened, closed): a
            // weak one gave every connection a side table, and each retain of it the slow path.
            connectTimer = pool.loop.schedule(afterNanoseconds: pool.client.configuration.connectTimeoutNanoseconds) { [self] in
                guard let connection = self.connection, !self.isOpened else { return }
                connection.close()
                self.connection = nil
                self.pool.connectFailed(self, error: NetError(.connectTimeout, detail: "no connection to \(address) within the connect timeout"))
            }
        case .failure(let error):
            // Report on the next turn so that the pool is not re-entered while it opens.
            pool.loop.enqueue { [self] in pool.connectFailed(self, error: error) }
        }
    }

    func send(_ exchange: Exchange, now: UInt64) {
        if let connectTime = uncountedConnect {
            uncountedConnect = nil
            exchange.timings.connect += connectTime.tcp
            exchange.timings.tlsHandshake += connectTime.tls
            exchange.timings.connectionsOpened += 1
        }
        exchange.timings.wentOut = true
        if http2 != nil { return sendStream(exchange, now: now) }
        current = exchange
        exchange.connection = self
        receivedForCurrent = false
        parser.expectingHeadResponse = exchange.request.method == "HEAD"
        exchange.writtenAt = now
        connection?.write { exchange.serialize(into: &$0) }
    }

    /// Gives up `exchange` (timed out): HTTP/1.1's connection is closed, not reused; HTTP/2
    /// cancels the exchange's stream and goes on.
    func abandon(_ exchange: Exchange) {
        if http2 != nil {
            guard http2?.exchanges.removeValue(forKey: exchange.stream) != nil else { return }
            http2?.state.cancel(exchange.stream)
            writeHTTP2Output()
            if http2?.exchanges.isEmpty == true && !isUsable { return retireGoneAway() }
            pool.connectionReady(self)
            return
        }
        current = nil
        close(for: .error)
        pool.connectionGone(self)
    }

    /// Closes it; an opened connection counts its close once, for `reason` (nil: the run's end,
    /// or one that never opened, which no figure counts as closed). HTTP/2 says GOAWAY first.
    func close(for reason: ConnectionCloseReason? = nil) {
        countClose(reason)
        connectTimer?.cancel()
        guard let socket = connection else { return }
        // Let go first: a write that fails (the server closed already) tells `connectionClosed`,
        // which must find the connection already closed, not close it (and count it gone) again.
        connection = nil
        if http2 != nil {
            http2?.state.shutdown()
            if let output = http2?.state.takeOutput(), !output.isEmpty { socket.write(output) }
        }
        socket.close()
    }

    /// Counts an opened connection's close, the first time only.
    private func countClose(_ reason: ConnectionCloseReason?) {
        guard isOpened, !closeCounted else { return }
        closeCounted = true
        if let reason { pool.tell(.closed(reason)) }
    }

    // MARK: ConnectionDelegate

    func connectionOpened(_ connection: Connection) {
        isOpened = true
        connectTimer?.cancel()
        connectTimer = nil
        pool.tell(.opened(tls: connection.tlsHandshake))
        pool.connectSucceeded(self)
        let now = pool.loop.now
        let tcpDone = connection.tcpConnectedAt ?? now
        uncountedConnect = (tcpDone - connectStartedAt, now - tcpDone)
        // RFC 9113 section 3.2: over TLS, h2 is what ALPN chose; without TLS (or an ALPN answer),
        // only prior knowledge says it.
        let versions = pool.client.configuration.httpVersions
        let selected = connection.negotiatedProtocol
        if selected == "h2" || (selected == nil && versions.assumesHTTP2) {
            http2 = HTTP2Streams(state: HTTP2ClientConnection())
            writeHTTP2Output()
            pool.tell(.speaksHTTP2)
        }
        // A waiting request goes out on it now, and counts its opening; then, if it speaks
        // HTTP/1.1, the others waiting each get a connection of their own.
        pool.connectionReady(self)
        pool.learned(http2: http2 != nil)
    }

    func connection(_ connection: Connection, read bytes: Span<UInt8>) {
        if http2 != nil { return readHTTP2(Array(decodingSpan: bytes)) }
        guard let exchange = current else {
            // Bytes with no request outstanding: the server is confused; do not reuse.
            close(for: .error)
            pool.connectionGone(self)
            return
        }
        let now = pool.loop.now
        if !receivedForCurrent {
            receivedForCurrent = true
            exchange.firstByteAt = now
        }
        parser.append(bytes)
        do {
            // RFC 9110 section 15.2: a client parses and skips interim answers (100 Continue,
            // 103 Early Hints) before the final one. 101 ends HTTP on the connection; no request
            // of this client asks for it, so it is final here (WebSocketClient asks for it).
            while let message = try parser.next() {
                if message.isInterim { continue }
                return complete(exchange, with: message, now: now)
            }
        } catch {
            current = nil
            close(for: .error)
            pool.connectionGone(self)
            exchange.finish(now: pool.loop.now) { .failure(NetError(.malformedResponse, detail: error.reason), $0) }
        }
    }

    func connectionClosed(_ connection: Connection, error: NetError?) {
        // Closed by this end already (`close(for:)`): nothing more to tell.
        guard self.connection === connection else { return }
        self.connection = nil
        connectTimer?.cancel()
        countClose(error == nil ? .serverClosed : .error)
        guard isOpened else {
            if let error, error.reason == .tlsHandshake || error.reason == .tlsVerification { pool.tell(.handshakeFailed) }
            pool.connectFailed(self, error: error ?? NetError(.connectionRefused, detail: "closed while connecting"))
            return
        }
        if http2 != nil { return http2Closed(error: error) }
        let exchange = current
        current = nil
        guard let exchange, !exchange.isFinished else { return pool.connectionGone(self) }
        if error == nil, let message = parser.finishAtEOF() {
            pool.connectionGone(self)
            finishExchange(exchange, with: message, now: pool.loop.now)
            return
        }
        // The server closed a kept-alive connection as the request went out: the request never
        // reached it, so it is sent once more.
        if !receivedForCurrent && retryStale(exchange) {
            pool.connectionGone(self)
            return
        }
        pool.connectionGone(self)
        let failure = error ?? NetError(.closedBeforeResponse, detail: "the server closed the connection before a complete response")
        exchange.finish(now: pool.loop.now) { .failure(failure, $0) }
    }

    private func complete(_ exchange: Exchange, with message: HTTPMessage, now: UInt64) {
        current = nil
        exchangesCarried += 1
        keepTLSSession()
        if message.keepAlive && parser.isIdle, connection?.isOpen == true {
            pool.connectionReady(self)
        } else {
            // The server asked to close it (or already has), or left bytes unparsed.
            close(for: message.keepAlive && connection?.isOpen == true ? .error : .serverClosed)
            pool.connectionGone(self)
        }
        finishExchange(exchange, with: message, now: now)
    }

    /// The app's process keeps its TLS session for its next connection: taken once a connection
    /// has one (TLS 1.3's ticket comes with or after the first answer).
    private func keepTLSSession() {
        if !keptTLSSession, let saved = connection?.savedTLSSession() {
            keptTLSSession = true
            pool.savedTLSSession = saved
        }
    }

    // MARK: HTTP/2

    private func sendStream(_ exchange: Exchange, now: UInt64) {
        guard let stream = http2?.state.send(exchange.headerFields(), body: exchange.request.body) else {
            // No stream may open (the pool asked `canTakeRequest` first): it waits for another.
            exchange.connection = nil
            pool.submit(exchange, atFront: true)
            return
        }
        http2?.exchanges[stream] = exchange
        exchange.stream = stream
        exchange.timings.http2 = true
        exchange.connection = self
        exchange.writtenAt = now
        writeHTTP2Output()
    }

    private func writeHTTP2Output() {
        guard let output = http2?.state.takeOutput(), !output.isEmpty else { return }
        connection?.write(output)
    }

    private func readHTTP2(_ bytes: [UInt8]) {
        guard var streams = http2 else { return }
        let hadRequests = !streams.exchanges.isEmpty
        let events = streams.state.receive(bytes)
        http2 = streams
        writeHTTP2Output()
        let now = pool.loop.now
        // The pool's books first, the exchanges' completions after (a completion may send the
        // device's next request, which should find the connection as it now is).
        var finished: [(Exchange, HTTPResult.Outcome)] = []
        var retried: [Exchange] = []
        var connectionFailed = false
        for event in events {
            switch event {
            case .ready:
                break
            case .response(let stream, let status, let fields, let body):
                guard let exchange = http2?.exchanges.removeValue(forKey: stream) else { continue }
                exchangesCarried += 1
                exchange.firstByteAt = now
                let headers = fields.compactMap { field -> Header? in
                    field.name.first == UInt8(ascii: ":") ? nil
                        : Header(String(decoding: field.name, as: UTF8.self), String(decoding: field.value, as: UTF8.self))
                }
                finished.append((exchange, .response(Response(status: status, headers: headers, body: body))))
            case .reset(let stream, let code, let retryable):
                pool.tell(.streamReset(code: code))
                guard let exchange = http2?.exchanges.removeValue(forKey: stream) else { continue }
                if retryable && exchange.mayGoAgainUnprocessed {
                    retried.append(exchange)
                } else {
                    finished.append((exchange, .failure(NetError(.streamReset, detail: "the server reset the stream: \(HTTP2ErrorCode.name(of: code))"))))
                }
            case .goAway(_, let code, let unprocessed):
                pool.tell(.goAway(code: code))
                for stream in unprocessed {
                    guard let exchange = http2?.exchanges.removeValue(forKey: stream) else { continue }
                    if exchange.mayGoAgainUnprocessed {
                        retried.append(exchange)
                    } else {
                        finished.append((exchange, .failure(NetError(.unprocessed, detail: "GOAWAY \(HTTP2ErrorCode.name(of: code)) left it unprocessed \(exchange.unprocessedRetries + 1) times"))))
                    }
                }
            case .connectionError(let code, let reason, let failed):
                connectionFailed = true
                for stream in failed {
                    guard let exchange = http2?.exchanges.removeValue(forKey: stream) else { continue }
                    finished.append((exchange, .failure(NetError(.http2Protocol, detail: "\(code.name): \(reason.rawValue)"))))
                }
            }
        }
        keepTLSSession()
        // Requests to send again wait in the pool first (see `connectionClosed`).
        for exchange in retried {
            pool.tell(.unprocessedRetried)
            exchange.unprocessedRetries += 1
            exchange.connection = nil
            pool.submit(exchange, atFront: true)
        }
        if connectionFailed {
            // Its GOAWAY is written; the connection ends.
            countClose(.error)
            connection?.closeAfterWrites()
            connection = nil
            for exchange in http2?.exchanges.values.map({ $0 }) ?? [] { finished.append((exchange, .failure(NetError(.http2Protocol, detail: "the connection failed")))) }
            http2?.exchanges.removeAll()
            pool.connectionGone(self)
        } else if http2?.exchanges.isEmpty == true && !isUsable {
            retireGoneAway()
        } else if hadRequests {
            pool.connectionReady(self)
        }
        for (exchange, outcome) in finished {
            switch outcome {
            case .response(let response):
                answer(exchange, with: response, now: now)
            case .failure(let error):
                exchange.finish(now: now) { .failure(error, $0) }
            }
        }
    }

    /// A connection going away (GOAWAY) with no stream left closes; the pool opens another.
    private func retireGoneAway() {
        close(for: .serverClosed)
        pool.connectionGone(self)
    }

    /// The socket closed under an HTTP/2 connection: its streams fail, except that one on a
    /// connection that had answered others is sent once more (a server closing a kept-alive
    /// connection without GOAWAY, as HTTP/1.1's stale connection).
    private func http2Closed(error: NetError?) {
        let exchanges = http2?.exchanges.values.sorted { $0.stream < $1.stream } ?? []
        http2?.exchanges.removeAll()
        var failed: [Exchange] = []
        for exchange in exchanges where !exchange.isFinished && !retryStale(exchange) { failed.append(exchange) }
        pool.connectionGone(self)
        let failure = error ?? NetError(.closedBeforeResponse, detail: "the server closed the connection before a complete response")
        for exchange in failed { exchange.finish(now: pool.loop.now) { .failure(failure, $0) } }
    }

    private func finishExchange(_ exchange: Exchange, with message: HTTPMessage, now: UInt64) {
        let status = Int(message.startLine.1) ?? 0
        answer(exchange, with: Response(status: status, headers: message.headers, body: message.body), now: now)
    }

    /// Ends `exchange` with its answer, complete at `now`: its time to first byte and its service
    /// time (from its request written), over either protocol.
    private func answer(_ exchange: Exchange, with response: Response, now: UInt64) {
        exchange.timings.firstByte += exchange.firstByteAt > exchange.writtenAt ? exchange.firstByteAt - exchange.writtenAt : 0
        exchange.timings.service += now - exchange.writtenAt
        exchange.finish(now: now) { .response(response, $0) }
    }

    /// Sends `exchange` once more on a fresh connection when a kept-alive one closed under it
    /// before any answer (RFC 9112 section 9.3.1, and HTTP/2 without GOAWAY); false when it
    /// cannot go again (the connection carried nothing before, or it was retried already). It
    /// waits in the pool before the connection is counted gone: an install's pool left with
    /// nothing would leave its loop's table, and the request would open a connection in a pool
    /// the install's next request no longer finds.
    private func retryStale(_ exchange: Exchange) -> Bool {
        guard exchangesCarried > 0 && !exchange.retriedStale else { return false }
        exchange.retriedStale = true
        exchange.connection = nil
        pool.submit(exchange, atFront: true)
        return true
    }
}

/// An HTTP/2 connection's state and the exchange each of its open streams carries.
struct HTTP2Streams {
    var state: HTTP2ClientConnection
    var exchanges: [UInt32: Exchange] = [:]
}

extension HTTPResult {
    /// How an exchange ended, before its timings are known.
    enum Outcome {
        case response(Response)
        case failure(NetError)
    }
}

extension String {
    /// ASCII case-insensitive equality with a lowercase literal, without allocating.
    func isASCII(caseInsensitivelyEqualTo lowercase: String) -> Bool {
        guard utf8.count == lowercase.utf8.count else { return false }
        return withUTF8Span { bytes in
            lowercase.withUTF8Span { expected in
                for index in bytes.indices {
                    let byte = bytes[index]
                    if (byte >= 65 && byte <= 90 ? byte + 32 : byte) != expected[index] { return false }
                }
                return true
            }
        }
    }
}
