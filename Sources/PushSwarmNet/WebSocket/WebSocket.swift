import Foundation
public import PushSwarmCore
import PushSwarmSystem

/// What a WebSocket tells its owner, on its loop's thread.
public protocol WebSocketDelegate: AnyObject {
    func webSocketOpened(_ socket: WebSocket)
    func webSocket(_ socket: WebSocket, receivedText text: String)
    func webSocket(_ socket: WebSocket, receivedBinary data: [UInt8])
    /// The socket is closed: `code` is the peer's close code (nil when the TCP connection ended
    /// without a close frame: RFC 6455's 1006), `error` what failed, if anything.
    func webSocketClosed(_ socket: WebSocket, code: UInt16?, reason: String, error: NetError?)
    /// A pong arrived (an answer to `ping`).
    func webSocketReceivedPong(_ socket: WebSocket)
    /// A client socket could not be opened: connect, TLS, or the handshake failed.
    func webSocketDidNotOpen(_ error: NetError)
    /// The server answered the client's handshake with `response` instead of 101 (a 403 from a
    /// service that blocks the address, say).
    func webSocketRefused(_ response: Response)
}

extension WebSocketDelegate {
    public func webSocket(_ socket: WebSocket, receivedBinary data: [UInt8]) {}
    public func webSocketReceivedPong(_ socket: WebSocket) {}
    public func webSocketDidNotOpen(_ error: NetError) {}
    public func webSocketRefused(_ response: Response) {
        webSocketDidNotOpen(NetError(.webSocketHandshake, detail: "the server answered \(response.status), not 101"))
    }
}

/// The Sec-WebSocket-Accept computation (RFC 6455 section 4.2.2, step 5.4).
public enum WebSocketHandshake {
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    public static func acceptValue(for key: String) -> String {
        let input = key + guid
        return Data(input.withUTF8Span { sha1Digest($0) }).base64EncodedString()
    }
}

/// One WebSocket (RFC 6455) over a connection, either end: text and binary messages,
/// fragmentation, ping/pong, the close handshake. Clients mask what they send and servers
/// refuse unmasked frames (section 5.1); control frames are at most 125 bytes and never
/// fragmented (section 5.5); text must be valid UTF-8 (section 8.1).
///
/// - Important: confined to its connection's loop: call `send`, `ping` and `close` there (see
///   `loop.execute`).
public final class WebSocket: ConnectionDelegate, @unchecked Sendable {
    public enum Role: Sendable { case client, server }

    public let role: Role
    public let loop: EventLoop
    /// The largest message accepted; a bigger one closes the socket with 1009 as soon as a frame
    /// header announces it (or the fragments add up to it), before its payload is held.
    public var maxMessageBytes: Int {
        get { decoder.maxMessageBytes }
        set { decoder.maxMessageBytes = newValue }
    }
    private var decoder: WebSocketFrameDecoder
    private var connection: Connection?
    private weak var delegateReference: (any WebSocketDelegate)?
    /// Held strongly until the socket closes, so an owner need not keep its delegate alive.
    private var delegateRetained: (any WebSocketDelegate)?
    private var fragments: [UInt8] = []
    private var fragmentOpcode: UInt8?
    private var sentClose = false
    private var receivedClose = false
    private var closeTimer: LoopTimer?
    private var notified = false
    /// Called once when the socket has ended, before the delegate hears of it: the server's
    /// connection, which the socket took over at the upgrade, forgets itself here.
    var onFinish: (() -> Void)?

    init(role: Role, connection: Connection, delegate: any WebSocketDelegate) {
        self.role = role
        decoder = WebSocketFrameDecoder(readsMaskedFrames: role == .server)
        self.loop = connection.loop
        self.connection = connection
        delegateRetained = delegate
        delegateReference = delegate
        connection.setDelegate(self)
    }

    public var isOpen: Bool { connection != nil && !sentClose && !receivedClose }

    public func send(text: String) { sendFrame(opcode: 1, payload: Array(text.utf8)) }
    public func send(binary: [UInt8]) { sendFrame(opcode: 2, payload: binary) }
    public func ping(_ payload: [UInt8] = []) { sendFrame(opcode: 9, payload: Array(payload.prefix(125))) }

    /// Starts the close handshake; the socket closes when the peer answers (or after 5 s).
    public func close(code: UInt16 = 1000, reason: String = "") {
        guard connection != nil, !sentClose else { return }
        sendClose(code: code, reason: reason)
        closeTimer = loop.schedule(afterNanoseconds: 5_000_000_000) { [weak self] in
            self?.finish(code: nil, reason: "no close answer", error: nil)
        }
    }

    /// Ends at once without a close frame (a fault, or a server stopping).
    public func abort() {
        finish(code: nil, reason: "aborted", error: nil)
    }

    // MARK: ConnectionDelegate

    func connectionOpened(_ connection: Connection) {}

    func connection(_ connection: Connection, read bytes: Span<UInt8>) {
        decoder.append(bytes)
        while self.connection != nil {
            switch decoder.next() {
            case .frame(let frame): handle(frame)
            case .needMore: return
            case .failure(let code, let reason): return fail(code: code, reason: reason)
            }
        }
    }

    func connectionClosed(_ connection: Connection, error: NetError?) {
        self.connection = nil
        finish(code: receivedClose ? lastCloseCode : nil, reason: lastCloseReason, error: receivedClose ? nil : error)
    }

    // MARK: frames

    private var lastCloseCode: UInt16?
    private var lastCloseReason = ""

    private func handle(_ frame: WebSocketFrameDecoder.Frame) {
        switch frame.opcode {
        case 0, 1, 2:
            if frame.opcode == 0 {
                guard fragmentOpcode != nil else { return failProtocol("a continuation frame with nothing to continue") }
            } else {
                guard fragmentOpcode == nil else { return failProtocol("a new message inside a fragmented one") }
                fragmentOpcode = frame.opcode
            }
            guard fragments.count + frame.payload.count <= maxMessageBytes else {
                return fail(code: 1009, reason: "message over \(maxMessageBytes) bytes")
            }
            fragments.append(contentsOf: frame.payload)
            guard frame.fin, let opcode = fragmentOpcode else { return }
            let message = fragments
            fragments = []
            fragmentOpcode = nil
            if opcode == 1 {
                guard let text = String(validating: message, as: UTF8.self) else {
                    return fail(code: 1007, reason: "text message is not valid UTF-8")
                }
                delegateReference?.webSocket(self, receivedText: text)
            } else {
                delegateReference?.webSocket(self, receivedBinary: message)
            }
        case 8:
            receivedClose = true
            var code: UInt16 = 1005
            var reason = ""
            if frame.payload.count == 1 { return failProtocol("a close frame with a 1-byte body") }
            if frame.payload.count >= 2 {
                code = UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1])
                guard Self.isValidCloseCode(code), let text = String(validating: frame.payload[2...], as: UTF8.self) else {
                    return failProtocol("an invalid close code or reason")
                }
                reason = text
            }
            lastCloseCode = code
            lastCloseReason = reason
            if !sentClose { sendClose(code: code == 1005 ? 1000 : code, reason: "") }
            // Both closes exchanged: the server ends TCP (section 7.1.1); a client does too
            // rather than waiting, which peers accept.
            connection?.closeAfterWrites()
            connection = nil
            finish(code: code, reason: reason, error: nil)
        case 9:
            sendFrame(opcode: 10, payload: frame.payload)
        case 10:
            delegateReference?.webSocketReceivedPong(self)
        default:
            failProtocol("unknown opcode \(frame.opcode)")
        }
    }

    static func isValidCloseCode(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1011, 1012...1014: true
        case 3000...4999: true
        default: false
        }
    }

    private func sendClose(code: UInt16, reason: String) {
        sentClose = true
        sendFrame(opcode: 8, payload: [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8.prefix(123)), force: true)
    }

    private func sendFrame(opcode: UInt8, payload: [UInt8], force: Bool = false) {
        guard let connection, force || !sentClose else { return }
        var frame: [UInt8] = []
        frame.reserveCapacity(payload.count + 14)
        frame.append(0x80 | opcode)
        let maskBit: UInt8 = role == .client ? 0x80 : 0
        if payload.count < 126 {
            frame.append(maskBit | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            frame.append(maskBit | 126)
            frame.append(UInt8(payload.count >> 8))
            frame.append(UInt8(payload.count & 0xFF))
        } else {
            frame.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8(truncatingIfNeeded: payload.count >> shift)) }
        }
        if role == .client {
            let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
            frame.append(contentsOf: mask)
            for (index, byte) in payload.enumerated() { frame.append(byte ^ mask[index & 3]) }
        } else {
            frame.append(contentsOf: payload)
        }
        connection.write(frame)
    }

    private func failProtocol(_ reason: String) {
        fail(code: 1002, reason: reason)
    }

    private func fail(code: UInt16, reason: String) {
        if !sentClose { sendClose(code: code, reason: reason) }
        connection?.closeAfterWrites()
        connection = nil
        finish(code: nil, reason: reason, error: NetError(.webSocketProtocol, detail: reason))
    }

    private func finish(code: UInt16?, reason: String, error: NetError?) {
        closeTimer?.cancel()
        if let connection {
            connection.close()
            self.connection = nil
        }
        guard !notified else { return }
        notified = true
        if let onFinish {
            self.onFinish = nil
            onFinish()
        }
        let delegate = delegateReference
        delegateRetained = nil
        delegate?.webSocketClosed(self, code: code, reason: reason, error: error)
    }
}

/// Opens client WebSockets (ws:// and wss://) on PushSwarm's loops.
public enum WebSocketClient {
    /// Connects to `url`, sends the opening handshake with `headers`, checks the answer's
    /// Sec-WebSocket-Accept, then calls `delegate.webSocketOpened`; any failure arrives as
    /// `webSocketClosed` with an error. Runs on `loop`.
    public static func connect(
        to url: TargetURL, on loop: EventLoop, tls: TLSContext? = nil, source: IPAddress? = nil, headers: [Header] = [],
        connectTimeoutNanoseconds: UInt64 = 10_000_000_000, maxMessageBytes: Int = NetworkSettings.defaultMaxWebSocketMessageBytes,
        delegate: any WebSocketDelegate
    ) {
        let handshake = ClientHandshake(url: url, headers: headers, maxMessageBytes: maxMessageBytes, delegate: delegate)
        loop.execute {
            handshake.start(on: loop, tls: url.origin.isTLS ? (tls ?? DefaultTLS.context) : nil, source: source, timeout: connectTimeoutNanoseconds)
        }
    }
}

/// The client's side of the opening handshake (RFC 6455 section 4.1).
private final class ClientHandshake: ConnectionDelegate, @unchecked Sendable {
    let url: TargetURL
    let headers: [Header]
    let delegate: any WebSocketDelegate
    let maxMessageBytes: Int
    let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
    var parser = HTTPParser(kind: .response)
    var connection: Connection?
    var timer: LoopTimer?
    var done = false

    init(url: TargetURL, headers: [Header], maxMessageBytes: Int, delegate: any WebSocketDelegate) {
        self.url = url
        self.headers = headers
        self.maxMessageBytes = maxMessageBytes
        self.delegate = delegate
    }

    func start(on loop: EventLoop, tls: TLSContext?, source: IPAddress?, timeout: UInt64) {
        let address: SocketAddress
        switch Resolver.address(of: url.origin) {
        case .success(let resolved): address = resolved
        case .failure(let error): return fail(error)
        }
        switch Connection.connect(on: loop, to: address, from: source, tls: tls, hostName: url.origin.host, delegate: self) {
        case .success(let connection): self.connection = connection
        case .failure(let error): return fail(error)
        }
        timer = loop.schedule(afterNanoseconds: timeout) { [weak self] in
            self?.connection?.close()
            self?.fail(NetError(.connectTimeout, detail: "no WebSocket to \(self?.url.description ?? "") within the timeout"))
        }
    }

    func connectionOpened(_ connection: Connection) {
        var text = "GET \(url.path) HTTP/1.1\r\nHost: \(url.origin.hostHeader)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        text += "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        for header in headers { text += "\(header.name): \(header.value)\r\n" }
        text += "\r\n"
        connection.write(Array(text.utf8))
    }

    func connection(_ connection: Connection, read bytes: Span<UInt8>) {
        parser.append(bytes)
        var message: HTTPMessage?
        do {
            // Interim answers before the 101 are skipped (RFC 9110 section 15.2).
            repeat { message = try parser.next() } while message?.isInterim == true
        } catch {
            connection.close()
            return fail(NetError(.webSocketHandshake, detail: "malformed handshake answer: \(error.reason)"))
        }
        guard let message else { return }
        let status = Int(message.startLine.1) ?? 0
        guard status == 101 else {
            guard !done else { return }
            done = true
            timer?.cancel()
            self.connection = nil
            connection.close()
            return delegate.webSocketRefused(Response(status: status, headers: message.headers, body: message.body))
        }
        guard message.header("upgrade")?.lowercased() == "websocket",
              message.header("connection")?.lowercased().contains("upgrade") == true
        else {
            connection.close()
            return fail(NetError(.webSocketHandshake, detail: "101 without Upgrade: websocket and Connection: Upgrade"))
        }
        guard message.header("sec-websocket-accept") == WebSocketHandshake.acceptValue(for: key) else {
            connection.close()
            return fail(NetError(.webSocketHandshake, detail: "Sec-WebSocket-Accept does not match the key sent"))
        }
        done = true
        timer?.cancel()
        let socket = WebSocket(role: .client, connection: connection, delegate: delegate)
        socket.maxMessageBytes = maxMessageBytes
        let remainder = parser.takeRemainder()
        delegate.webSocketOpened(socket)
        if !remainder.isEmpty { socket.connection(connection, read: remainder.span) }
    }

    func connectionClosed(_ connection: Connection, error: NetError?) {
        fail(error ?? NetError(.webSocketHandshake, detail: "closed during the handshake"))
    }

    private func fail(_ error: NetError) {
        guard !done else { return }
        done = true
        timer?.cancel()
        connection = nil
        delegate.webSocketDidNotOpen(error)
    }
}
