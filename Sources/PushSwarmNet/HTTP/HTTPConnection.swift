import PushSwarmCore
import PushSwarmMetrics
import PushSwarmSystem
import Synchronization

/// The TLS context used when a client was made without one: system roots, verification on.
enum DefaultTLS {
    static let context: TLSContext? = try? TLSContext()
}

/// One HTTP/1.1 connection of a pool, carrying one exchange at a time.
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

    init(pool: ConnectionPool, limits: HTTPParser.Limits) {
        self.pool = pool
        parser = HTTPParser(kind: .response, limits: limits)
    }

    var isUsable: Bool { connection?.isOpen ?? false }

    func connect(to address: SocketAddress, tls: TLSContext?) {
        connectStartedAt = pool.loop.now
        let result = Connection.connect(
            on: pool.loop, to: address, from: pool.key.source, tls: tls, hostName: pool.key.origin.host,
            resuming: tls == nil ? nil : pool.savedTLSSession, delegate: self
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
        current = exchange
        exchange.connection = self
        receivedForCurrent = false
        parser.expectingHeadResponse = exchange.request.method == "HEAD"
        exchange.writtenAt = now
        connection?.write { exchange.serialize(into: &$0) }
    }

    /// Gives up the current exchange (timed out): the connection is closed, not reused.
    func abandon() {
        current = nil
        close(for: .error)
        pool.connectionGone(self)
    }

    /// Closes it; an opened connection counts its close once, for `reason` (nil: the run's end,
    /// or one that never opened, which no figure counts as closed).
    func close(for reason: ConnectionCloseReason? = nil) {
        countClose(reason)
        connectTimer?.cancel()
        connection?.close()
        connection = nil
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
        // A waiting request goes out on it now, and counts its opening.
        pool.connectionReady(self)
    }

    func connection(_ connection: Connection, read bytes: Span<UInt8>) {
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
        self.connection = nil
        connectTimer?.cancel()
        countClose(error == nil ? .serverClosed : .error)
        guard isOpened else {
            if let error, error.reason == .tlsHandshake || error.reason == .tlsVerification { pool.tell(.handshakeFailed) }
            pool.connectFailed(self, error: error ?? NetError(.connectionRefused, detail: "closed while connecting"))
            return
        }
        let exchange = current
        current = nil
        pool.connectionGone(self)
        guard let exchange, !exchange.isFinished else { return }
        if error == nil, let message = parser.finishAtEOF() {
            finishExchange(exchange, with: message, now: pool.loop.now)
            return
        }
        if exchangesCarried > 0 && !receivedForCurrent && !exchange.retriedStale {
            // The server closed a kept-alive connection as the request went out (RFC 9112
            // section 9.3.1): the request never reached it, so it is sent once more.
            exchange.retriedStale = true
            exchange.connection = nil
            pool.submit(exchange, atFront: true)
            return
        }
        let failure = error ?? NetError(.closedBeforeResponse, detail: "the server closed the connection before a complete response")
        exchange.finish(now: pool.loop.now) { .failure(failure, $0) }
    }

    private func complete(_ exchange: Exchange, with message: HTTPMessage, now: UInt64) {
        current = nil
        exchangesCarried += 1
        // The app's process keeps its TLS session for its next connection: taken once a
        // connection has one (TLS 1.3's ticket comes with or after the first answer).
        if !keptTLSSession, let saved = connection?.savedTLSSession() {
            keptTLSSession = true
            pool.savedTLSSession = saved
        }
        if message.keepAlive && parser.isIdle, connection?.isOpen == true {
            pool.connectionReady(self)
        } else {
            // The server asked to close it (or already has), or left bytes unparsed.
            close(for: message.keepAlive && connection?.isOpen == true ? .error : .serverClosed)
            pool.connectionGone(self)
        }
        finishExchange(exchange, with: message, now: now)
    }

    private func finishExchange(_ exchange: Exchange, with message: HTTPMessage, now: UInt64) {
        exchange.timings.firstByte += exchange.firstByteAt > exchange.writtenAt ? exchange.firstByteAt - exchange.writtenAt : 0
        exchange.timings.service += now - exchange.writtenAt
        let status = Int(message.startLine.1) ?? 0
        let response = Response(status: status, headers: message.headers, body: message.body)
        exchange.finish(now: now) { .response(response, $0) }
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
