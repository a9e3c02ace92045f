public import Foundation

// Helpers for tests that start real peers or talk to loopback ports; shared by the test targets.

/// Starts a program (a real peer: nginx, openssl, python) and stops it at the end of the test.
/// Spawned directly (not through Foundation's Process) so that stopping it is one signal and one
/// waitpid, whatever the test's threads are doing.
public final class Peer: @unchecked Sendable {
    public let pid: pid_t
    private var exited = false

    public init(_ executable: String, _ arguments: [String]) throws {
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
        guard status == 0 else { throw PeerError(message: "cannot start \(executable): errno \(status)") }
        pid = child
    }

    /// Waits for the program to end by itself (a one-shot command).
    @discardableResult
    public func wait() -> Int32 {
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        exited = true
        return status
    }

    /// SIGTERM, then SIGKILL if it has not ended within 5 s.
    public func stop() {
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

/// `body`, run on a thread of its own and awaited. A test that waits on a process or a pipe must
/// not hold one of the concurrency pool's threads meanwhile: there are as many as cores (two on
/// CI), and the async tests beside it would wait for a thread past their time limits.
public func onAThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

/// Waits for `process` to end, on a thread of its own.
public func exited(_ process: Process) async {
    await onAThreadOfItsOwn { process.waitUntilExit() }
}

/// Finds a program on PATH, nil when it is not installed.
public func which(_ name: String) -> String? {
    let searchPath: String = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
    var directories: [String] = searchPath.components(separatedBy: ":")
    directories.append("/usr/sbin")
    for directory in directories where !directory.isEmpty {
        let path = directory + "/" + name
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

/// A blocking socket connected to 127.0.0.1:`port`, or nil when nothing accepts there.
public func connectLoopback(port: UInt16) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        close(fd)
        return nil
    }
    return fd
}

/// Waits until something accepts TCP connections on `port` (a peer starting up).
public func waitForPort(_ port: UInt16, timeout: TimeInterval = 10) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if let fd = connectLoopback(port: port) {
            close(fd)
            return true
        }
        Thread.sleep(forTimeInterval: 0.05)
    }
    return false
}

/// A free loopback port (bound and released; a peer binds it next).
public func freePort() -> UInt16 {
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

/// A peer that could not be started.
public struct PeerError: Error {
    public var message: String
}

/// Whether Python has the `websockets` package (the peer for WebSocket tests).
public func pythonHasWebsockets() -> Bool {
    guard let python = which("python3") else { return false }
    let peer = try? Peer(python, ["-c", "import websockets"])
    return peer?.wait() == 0
}
