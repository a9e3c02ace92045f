import CPushSwarmShim
import Foundation
import PushSwarmSystem
import PushSwarmCore

/// What a connection tells its owner, on the connection's loop.
protocol ConnectionDelegate: AnyObject {
    /// TCP connected (and, for TLS, the handshake finished): writes go out from now on.
    func connectionOpened(_ connection: Connection)
    /// Bytes arrived; `bytes` is valid only during the call.
    func connection(_ connection: Connection, read bytes: Span<UInt8>)
    /// The peer closed, the network failed, or TLS failed. Not called after the owner's own
    /// `close()`.
    func connectionClosed(_ connection: Connection, error: NetError?)
    /// Everything queued has been written, after a write that the socket did not take at once
    /// (a server that stopped answering a pipelining client because its answers backed up
    /// resumes here).
    func connectionDrained(_ connection: Connection)
}

extension ConnectionDelegate {
    func connectionDrained(_ connection: Connection) {}
}

/// One non-blocking TCP socket, optionally under TLS, owned by one event loop.
///
/// - Important: every method runs on `loop`'s thread. The socket is closed exactly once, on every
///   path: the owner's `close()`, the peer's close, or any error.
final class Connection: Selectable, @unchecked Sendable {
    enum State { case connecting, handshaking, open, closed }

    let loop: EventLoop
    private(set) var fd: Int32
    private(set) var state: State
    private var slot = -1
    private var tls: TLSSession?
    private var delegate: (any ConnectionDelegate)?
    private var pending: [UInt8] = []
    private var pendingOffset = 0
    private var interest: UInt32 = 0
    /// Set while a TLS write is blocked on reading (renegotiation, key update).
    private var tlsWriteWantsRead = false
    private var closingAfterWrites = false
    /// Set while the owner takes no more bytes (its buffer of unanswered requests is full):
    /// the socket is not read, and the peer's sends back up into its own buffers.
    private var readsPaused = false
    /// The address of the peer as accepted (servers): host order IPv4, 0 otherwise.
    let peerIPv4: UInt32

    /// The peer's IPv4 address (accepted connections).
    var peerAddress: IPAddress { .v4(peerIPv4) }

    private init(loop: EventLoop, fd: Int32, state: State, peerIPv4: UInt32 = 0) {
        self.loop = loop
        self.fd = fd
        self.state = state
        self.peerIPv4 = peerIPv4
    }

    /// Starts connecting to `address`, from `source` when given (a loopback address for a NAT
    /// group). The delegate hears `connectionOpened` or `connectionClosed(error:)`.
    static func connect(
        on loop: EventLoop, to address: SocketAddress, from source: IPAddress?, tls: TLSContext?, hostName: String,
        resuming saved: TLSSavedSession? = nil, alpn: [String] = [], delegate: any ConnectionDelegate
    ) -> Result<Connection, NetError> {
        let family: Int32
        switch address.ip {
        case .v4: family = AF_INET
        case .v6: family = AF_INET6
        }
        let fd = ps_socket(family, Int32(SOCK_STREAM.rawValue))
        guard fd >= 0 else { return .failure(.errno(errno, during: "socket")) }
        if let source, case .v4(let value) = source, family == AF_INET {
            guard ps_bind_ipv4(fd, value, 0) == 0 else {
                let error = NetError.errno(errno, during: "bind \(source)")
                Glibc.close(fd)
                return .failure(error)
            }
        }
        _ = ps_no_delay(fd)
        let status: Int32
        switch address.ip {
        case .v4(let value): status = ps_connect_ipv4(fd, value, address.port)
        case .v6(let bytes): status = Sockets.connectIPv6(fd, address: bytes, port: address.port)
        }
        if status != 0 && errno != EINPROGRESS {
            let error = NetError.errno(errno, during: "connect \(address)")
            Glibc.close(fd)
            return .failure(error)
        }
        let connection = Connection(loop: loop, fd: fd, state: .connecting)
        connection.delegate = delegate
        if let tls {
            guard let session = TLSSession(context: tls, fd: fd, hostName: hostName) else {
                Glibc.close(fd)
                return .failure(NetError(.tlsHandshake, detail: "cannot create a TLS session"))
            }
            if let saved { session.handle.offer(saved) }
            if !alpn.isEmpty && !session.handle.offerProtocols(alpn) {
                Glibc.close(fd)
                return .failure(NetError(.tlsHandshake, detail: "cannot offer ALPN \(alpn)"))
            }
            connection.tls = session
        }
        connection.slot = loop.register(fd, connection, events: UInt32(PS_EPOLLOUT | PS_EPOLLIN | PS_EPOLLRDHUP))
        guard connection.slot >= 0 else {
            Glibc.close(fd)
            return .failure(.errno(errno, during: "epoll"))
        }
        connection.interest = UInt32(PS_EPOLLOUT | PS_EPOLLIN | PS_EPOLLRDHUP)
        return .success(connection)
    }

    /// Adopts an accepted socket (servers); with `tls`, its handshake comes first.
    static func accepted(on loop: EventLoop, fd: Int32, peerIPv4: UInt32, tls: TLSServerContext? = nil, delegate: any ConnectionDelegate) -> Connection? {
        _ = ps_no_delay(fd)
        let connection = Connection(loop: loop, fd: fd, state: tls == nil ? .open : .handshaking, peerIPv4: peerIPv4)
        connection.delegate = delegate
        if let tls {
            guard let session = TLSSession(accepting: tls, fd: fd) else {
                Glibc.close(fd)
                return nil
            }
            connection.tls = session
        }
        connection.interest = UInt32(PS_EPOLLIN | PS_EPOLLRDHUP)
        connection.slot = loop.register(fd, connection, events: connection.interest)
        guard connection.slot >= 0 else {
            Glibc.close(fd)
            return nil
        }
        return connection
    }

    func setDelegate(_ delegate: any ConnectionDelegate) { self.delegate = delegate }

    /// When TCP connected, on the loop's clock, before a TLS handshake began; nil without TLS
    /// (open is connected) or before.
    private(set) var tcpConnectedAt: UInt64?

    /// How its TLS handshake went (nil without TLS); read once it is open.
    var tlsHandshake: TLSHandshake? { tls?.handshakeKind }

    /// Its TLS session, for a later connection to resume; nil without TLS or before the server
    /// sent one (TLS 1.3: with or after its first answer).
    func savedTLSSession() -> TLSSavedSession? { tls?.handle.savedSession() }

    /// The protocol the server chose by ALPN (`h2`, `http/1.1`); nil without TLS, before the
    /// handshake, or when the server chose none.
    var negotiatedProtocol: String? { tls?.handle.selectedProtocol }

    var isOpen: Bool { state == .open }

    /// Bytes queued and not yet taken by the socket.
    var queuedWriteBytes: Int { pending.count - pendingOffset }

    /// Stops or resumes reading the socket (a bound on what the owner buffers for a peer that
    /// sends faster than it is answered).
    func pauseReads(_ paused: Bool) {
        guard paused != readsPaused else { return }
        readsPaused = paused
        updateInterest()
    }

    /// Queues bytes; they go out as soon as the socket takes them.
    func write(_ bytes: Span<UInt8>) {
        guard state != .closed, bytes.count > 0 else { return }
        if state == .open && pending.count == pendingOffset {
            pending.removeAll(keepingCapacity: true)
            pendingOffset = 0
            let written = send(bytes)
            guard written >= 0 else { return }
            if written < bytes.count {
                pending.append(bytes.extracting(written...))
                updateInterest()
            }
        } else {
            pending.append(bytes)
        }
    }

    func write(_ bytes: [UInt8]) {
        write(bytes.span)
    }

    /// Writes what `build` appends to a buffer the loop reuses: no allocation per message.
    func write(building build: (inout [UInt8]) -> Void) {
        var scratch = loop.takeScratch()
        build(&scratch)
        write(scratch.span)
        loop.returnScratch(scratch)
    }

    /// Closes once everything queued has been written (a response before `Connection: close`).
    func closeAfterWrites() {
        guard state != .closed else { return }
        if pendingOffset == pending.count || state != .open {
            close()
        } else {
            closingAfterWrites = true
        }
    }

    /// Closes the socket without telling the delegate; `reset` makes the peer see a RST.
    func close(reset: Bool = false) {
        guard state != .closed else { return }
        state = .closed
        loop.deregister(fd, slot: slot)
        tls = nil
        if reset { _ = ps_reset(fd) } else { Glibc.close(fd) }
        fd = -1
        delegate = nil
        pending = []
    }

    // MARK: readiness

    func ready(_ events: UInt32) {
        switch state {
        case .connecting:
            let error = ps_socket_error(fd)
            guard error == 0 else { return fail(.errno(error, during: "connect")) }
            if events & UInt32(PS_EPOLLOUT) == 0 && events & UInt32(PS_EPOLLHUP | PS_EPOLLERR) != 0 {
                return fail(NetError(.connectionRefused, detail: "connect: hang-up"))
            }
            if tls != nil {
                state = .handshaking
                tcpConnectedAt = loop.now
                handshake()
            } else {
                opened()
            }
        case .handshaking:
            handshake()
        case .open:
            if events & UInt32(PS_EPOLLOUT) != 0 || (tlsWriteWantsRead && events & UInt32(PS_EPOLLIN) != 0) {
                flush()
                guard state == .open else { return }
            }
            if readsPaused {
                // Not reading: a hang-up or an error (always reported) ends the connection
                // instead of waking the loop again and again.
                if events & UInt32(PS_EPOLLHUP | PS_EPOLLERR) != 0 { fail(nil) }
            } else if events & UInt32(PS_EPOLLIN | PS_EPOLLHUP | PS_EPOLLERR | PS_EPOLLRDHUP) != 0 {
                readAvailable()
            }
        case .closed:
            break
        }
    }

    private func opened() {
        state = .open
        delegate?.connectionOpened(self)
        guard state == .open else { return }
        flush()
        if state == .open { updateInterest() }
    }

    private func handshake() {
        guard let tls else { return }
        switch tls.handshake() {
        case 1:
            opened()
        case -1:
            setInterest(UInt32(PS_EPOLLIN | PS_EPOLLRDHUP))
        case -2:
            setInterest(UInt32(PS_EPOLLIN | PS_EPOLLOUT | PS_EPOLLRDHUP))
        default:
            let detail = tls.lastError()
            let reason: NetError.Reason = detail.hasPrefix("certificate verification failed") ? .tlsVerification : .tlsHandshake
            fail(NetError(reason, detail: detail))
        }
    }

    private func readAvailable() {
        let buffer = loop.readBuffer
        while state == .open && !readsPaused {
            let count: Int
            if let tls {
                let result = buffer.read(from: tls.handle)
                if result == -1 { break }
                if result == -2 {
                    setInterest(interest | UInt32(PS_EPOLLOUT))
                    break
                }
                if result == -3 { return fail(NetError(.connectionReset, detail: "TLS read: \(tls.lastError())")) }
                count = Int(result)
            } else {
                let result = buffer.read(from: fd)
                if result < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK { break }
                    if errno == EINTR { continue }
                    return fail(.errno(errno, during: "read"))
                }
                count = result
            }
            if count == 0 { return fail(nil) }
            if let delegate { buffer.withBytes(count: count) { delegate.connection(self, read: $0) } }
            // A short plain read means the socket is drained; TLS may still hold decrypted bytes.
            if tls == nil && count < buffer.capacity { break }
        }
    }

    /// Sends what it can; returns the count, or -1 after failing the connection.
    private func send(_ bytes: Span<UInt8>) -> Int {
        var offset = 0
        while offset < bytes.count {
            let remaining = bytes.extracting(offset...)
            if let tls {
                let result = tls.write(remaining)
                if result > 0 {
                    offset += Int(result)
                    continue
                }
                if result == -2 { break }
                if result == -1 {
                    tlsWriteWantsRead = true
                    break
                }
                fail(NetError(.connectionReset, detail: "TLS write: \(tls.lastError())"))
                return -1
            } else {
                let result = Sockets.send(fd, remaining)
                if result >= 0 {
                    offset += result
                    continue
                }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                if errno == EINTR { continue }
                fail(.errno(errno, during: "write"))
                return -1
            }
        }
        return offset
    }

    private func flush() {
        tlsWriteWantsRead = false
        if pendingOffset < pending.count {
            // Through a local reference (a span of a class's property cannot outlive its access),
            // released before `pending` changes again, so that the buffer stays unique.
            let written: Int
            do {
                let queued = pending
                written = send(queued.span.extracting(pendingOffset...))
            }
            guard written >= 0 else { return }
            pendingOffset += written
            if pendingOffset == pending.count {
                pending.removeAll(keepingCapacity: true)
                pendingOffset = 0
                if closingAfterWrites {
                    close()
                    return
                }
                updateInterest()
                delegate?.connectionDrained(self)
                return
            }
        }
        if closingAfterWrites && pendingOffset == pending.count {
            close()
            return
        }
        updateInterest()
    }

    private func updateInterest() {
        guard state == .open else { return }
        var wanted = readsPaused && !tlsWriteWantsRead ? 0 : UInt32(PS_EPOLLIN | PS_EPOLLRDHUP)
        if pendingOffset < pending.count && !tlsWriteWantsRead { wanted |= UInt32(PS_EPOLLOUT) }
        setInterest(wanted)
    }

    private func setInterest(_ wanted: UInt32) {
        guard wanted != interest, state != .closed else { return }
        interest = wanted
        loop.modify(fd, slot: slot, events: wanted)
    }

    private func fail(_ error: NetError?) {
        let delegate = self.delegate
        close(reset: false)
        delegate?.connectionClosed(self, error: error)
    }
}
