import Foundation
@_exported import PushSwarmTestSupport
import PushSwarmCore
@testable import PushSwarmNet
import Synchronization

/// Shared loops for the network tests (two, as on the machines here).
let testGroup = EventLoopGroup(threads: 2, name: "test-loop")

extension HTTPClient {
    /// `execute` for tests that await.
    func send(_ request: HTTPClientRequest) async -> HTTPResult {
        await withCheckedContinuation { continuation in
            execute(request) { continuation.resume(returning: $0) }
        }
    }
}

extension HTTPResult {
    var response: Response? {
        if case .response(let response, _) = self { return response }
        return nil
    }

    var error: NetError? {
        if case .failure(let error, _) = self { return error }
        return nil
    }
}

/// One loop on a clock of its own that moves only by `advanceTime(by:)`: for tests of timers,
/// which then neither wait nor race the machine's load. Each test makes its own (advancing a
/// shared one would fire other tests' timers).
func manualGroup(_ name: String) -> EventLoopGroup {
    EventLoopGroup(threads: 1, name: name, clock: ManualClock())
}

/// A request sent now whose result a test awaits later, typically after moving time on.
final class Pending: Sendable {
    private let state = Mutex<(result: HTTPResult?, waiter: CheckedContinuation<HTTPResult, Never>?)>((nil, nil))

    init(_ client: HTTPClient, _ request: HTTPClientRequest) {
        client.execute(request) { [self] result in
            let waiter = state.withLock { state in
                state.result = result
                return state.waiter.take()
            }
            waiter?.resume(returning: result)
        }
    }

    /// The result if it has come.
    var now: HTTPResult? { state.withLock { $0.result } }

    var result: HTTPResult {
        get async {
            await withCheckedContinuation { continuation in
                let result = state.withLock { state -> HTTPResult? in
                    if state.result == nil { state.waiter = continuation }
                    return state.result
                }
                if let result { continuation.resume(returning: result) }
            }
        }
    }
}

/// State a test waits on: each change wakes the waiters whose condition now holds.
final class Watched<State: Sendable>: Sendable {
    private struct Waiter {
        let condition: @Sendable (State) -> Bool
        let continuation: CheckedContinuation<State, Never>
    }

    private let guarded: Mutex<(state: State, waiters: [Waiter])>

    init(_ state: State) {
        guarded = Mutex((state, []))
    }

    func update(_ change: (inout State) -> Void) {
        let (state, ready) = guarded.withLock { guarded -> (State, [Waiter]) in
            change(&guarded.state)
            let state = guarded.state
            var ready: [Waiter] = []
            guarded.waiters.removeAll { waiter in
                guard waiter.condition(state) else { return false }
                ready.append(waiter)
                return true
            }
            return (state, ready)
        }
        for waiter in ready { waiter.continuation.resume(returning: state) }
    }

    /// The first value `read` gives of the state, now or after a later change.
    func wait<T>(_ read: @escaping @Sendable (State) -> T?) async -> T {
        let state = await withCheckedContinuation { (continuation: CheckedContinuation<State, Never>) in
            let now = guarded.withLock { guarded -> State? in
                if read(guarded.state) != nil { return guarded.state }
                guarded.waiters.append(Waiter(condition: { read($0) != nil }, continuation: continuation))
                return nil
            }
            if let now { continuation.resume(returning: now) }
        }
        return read(state)!
    }
}

/// A loopback server with `handler`, on an ephemeral port.
func startServer(
    _ configuration: HTTPServer.Configuration = HTTPServer.Configuration(), group: EventLoopGroup = testGroup, handler: @escaping HTTPHandler
) throws -> HTTPServer {
    let server = HTTPServer(group: group, configuration: configuration, handler: handler)
    try server.start(at: SocketAddress(ip: .loopback, port: 0))
    return server
}

func url(_ server: HTTPServer, _ path: String = "/") -> TargetURL {
    TargetURL("http://127.0.0.1:\(server.port)\(path)")!
}

/// Raw bytes over a blocking socket, for input no well-behaved client would send. With
/// `answeredInTurn`, each chunk but the last waits for the head of an answer to the one before
/// (a WebSocket handshake's 101, say) before it goes: the server then reads it on its own.
func rawExchange(port: UInt16, send chunks: [[UInt8]], answeredInTurn: Bool = false, readTimeout: TimeInterval = 3) -> [UInt8] {
    guard let fd = connectLoopback(port: port) else { return [] }
    defer { close(fd) }
    var timeout = timeval(tv_sec: Int(max(readTimeout, 3)), tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    for (index, chunk) in chunks.enumerated() {
        _ = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard answeredInTurn, index < chunks.count - 1 else { continue }
        while headEnds(in: received) <= index {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { return received }
            received.append(contentsOf: buffer[0..<count])
        }
    }
    guard readTimeout > 0 else { return [] }
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count <= 0 { break }
        received.append(contentsOf: buffer[0..<count])
    }
    return received
}

/// How many heads (ends of a header block, CRLF CRLF) `bytes` holds.
private func headEnds(in bytes: [UInt8]) -> Int {
    guard bytes.count >= 4 else { return 0 }
    return (0...(bytes.count - 4)).count { bytes[$0] == 13 && bytes[$0 + 1] == 10 && bytes[$0 + 2] == 13 && bytes[$0 + 3] == 10 }
}


/// A Python peer on loopback `port` that accepts connections one at a time and runs `perConnection`
/// (Python, indented four spaces, with `conn` the accepted socket) on each: for peers that answer
/// as no library would (interim answers, a frame header alone). It prints `ready` once it listens
/// (`Peer.ready()`).
func rawPythonPeer(port: UInt16, imports: String = "", perConnection: String) throws -> Peer {
    let body = perConnection.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n")
    let script = """
        import socket\(imports.isEmpty ? "" : ", " + imports)
        listener = socket.socket(); listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", \(port))); listener.listen(4)
        print("ready", flush=True)
        while True:
            conn, _ = listener.accept()
        \(body)
        """
    return try Peer(which("python3")!, ["-c", script], readyWhen: "ready")
}
