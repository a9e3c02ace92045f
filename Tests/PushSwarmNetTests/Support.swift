import Foundation
import PushSwarmCore
@testable import PushSwarmNet

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

/// A loopback server with `handler`, on an ephemeral port.
func startServer(_ configuration: HTTPServer.Configuration = HTTPServer.Configuration(), handler: @escaping HTTPHandler) throws -> HTTPServer {
    let server = HTTPServer(group: testGroup, configuration: configuration, handler: handler)
    try server.start(at: SocketAddress(ip: .loopback, port: 0))
    return server
}

func url(_ server: HTTPServer, _ path: String = "/") -> TargetURL {
    TargetURL("http://127.0.0.1:\(server.port)\(path)")!
}

/// Raw bytes over a blocking socket, for input no well-behaved client would send.
func rawExchange(port: UInt16, send chunks: [[UInt8]], pause: TimeInterval = 0, readTimeout: TimeInterval = 3) -> [UInt8] {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { return [] }
    var timeout = timeval(tv_sec: Int(readTimeout), tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    for chunk in chunks {
        _ = chunk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if pause > 0 { Thread.sleep(forTimeInterval: pause) }
    }
    guard readTimeout > 0 else { return [] }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count <= 0 { break }
        received.append(contentsOf: buffer[0..<count])
    }
    return received
}

/// Starts a program (a real peer: nginx, openssl, python) and stops it at the end of the test.
/// Spawned directly (not through Foundation's Process) so that stopping it is one signal and one
/// waitpid, whatever the test's threads are doing.
final class Peer: @unchecked Sendable {
    let pid: pid_t
    private var exited = false

    init(_ executable: String, _ arguments: [String]) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Default signal handling in the child: ignored signals (SIGPIPE here) survive exec.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for number in [SIGTERM, SIGINT, SIGPIPE] { sigaddset(&defaults, number) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, &attributes, argv, environ)
        guard status == 0 else { throw NetError(.socketError, detail: "cannot start \(executable): errno \(status)") }
        pid = child
    }

    /// Waits for the program to end by itself (a one-shot command).
    @discardableResult
    func wait() -> Int32 {
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        exited = true
        return status
    }

    /// SIGTERM, then SIGKILL if it has not ended within 5 s.
    func stop() {
        guard !exited else { return }
        exited = true
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<500 {
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        waitpid(pid, &status, 0)
    }

    deinit { stop() }
}

/// Finds a program on PATH, nil when it is not installed.
func which(_ name: String) -> String? {
    let searchPath: String = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
    var directories: [String] = searchPath.components(separatedBy: ":")
    directories.append("/usr/sbin")
    for directory in directories where !directory.isEmpty {
        let path = directory + "/" + name
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

/// Waits until something accepts TCP connections on `port` (a peer starting up).
func waitForPort(_ port: UInt16, timeout: TimeInterval = 10) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        close(fd)
        if connected == 0 { return true }
        Thread.sleep(forTimeInterval: 0.05)
    }
    return false
}

/// A free loopback port (bound and released; a peer binds it next).
func freePort() -> UInt16 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return UInt16(bigEndian: address.sin_port)
}
