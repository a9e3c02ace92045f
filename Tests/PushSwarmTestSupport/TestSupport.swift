public import Foundation

// Helpers for tests that start real peers or talk to loopback ports; shared by the test targets.

/// Starts a program (a real peer: nginx, openssl, python, PushSwarm's own mock) and stops it at
/// the end of the test. Spawned directly (not through Foundation's Process) so that stopping it is
/// one signal and one waitpid, whatever the test's threads are doing.
///
/// A peer that says when it is ready (a line on its standard output or error, printed once it
/// listens) is waited for by that line (`ready(timeout:)`), not by knocking on its port: its
/// output is read on a thread of its own and kept, and a test can also wait on a line of it
/// (`line(timeout:where:)`) for what the peer saw.
public final class Peer: @unchecked Sendable {
    public let pid: pid_t
    private var exited = false
    /// What the peer prints that says it is ready, and on which of its outputs.
    public enum Output: Sendable { case standardOutput, standardError }
    private let readyText: String?
    private let output = OutputLines()

    public init(_ executable: String, _ arguments: [String], readyWhen text: String? = nil, on stream: Output = .standardOutput) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var pipeEnds: [Int32] = [-1, -1]
        let watched: Int32 = stream == .standardOutput ? 1 : 2
        if text != nil {
            guard pipe(&pipeEnds) == 0 else { throw PeerError(message: "cannot make a pipe for \(executable): errno \(errno)") }
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], watched)
            posix_spawn_file_actions_addclose(&actions, pipeEnds[0])
            posix_spawn_file_actions_addclose(&actions, pipeEnds[1])
        }
        for descriptor: Int32 in [1, 2] where text == nil || descriptor != watched {
            posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", O_WRONLY, 0)
        }
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
        readyText = text
        if text != nil { close(pipeEnds[1]) }
        guard status == 0 else {
            if text != nil { close(pipeEnds[0]) }
            throw PeerError(message: "cannot start \(executable): errno \(status)")
        }
        pid = child
        if text != nil {
            // The thread holds the output, not the peer: a peer dropped without stop() still
            // stops in its deinit, which ends the output and the thread.
            let (output, descriptor) = (output, pipeEnds[0])
            Thread { output.collect(from: descriptor) }.start()
        }
    }

    /// The first line the peer printed (on the output given at start) that `matches`, waiting up
    /// to `timeout` for it; nil when it ended or the time ran out first. Blocks: from an async
    /// test, call it through `onAThreadOfItsOwn`.
    public func line(timeout: TimeInterval = 30, where matches: (String) -> Bool) -> String? {
        output.line(timeout: timeout, where: matches)
    }

    /// Whether the peer said it is ready (printed the text given at start) within `timeout`;
    /// false when it ended first.
    public func ready(timeout: TimeInterval = 30) async -> Bool {
        await onAThreadOfItsOwn { self.isReady(timeout: timeout) }
    }

    /// `ready(timeout:)` for a test that is not async: blocks its thread meanwhile.
    public func isReady(timeout: TimeInterval = 30) -> Bool {
        guard let readyText else { preconditionFailure("a peer started without readyWhen: says nothing") }
        return line(timeout: timeout) { $0.contains(readyText) } != nil
    }

    /// Waits for the program to end by itself (a one-shot command).
    @discardableResult
    public func wait() -> Int32 {
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        exited = true
        return status
    }

    /// SIGTERM, then SIGKILL if it has not ended within 5 s: its end is awaited on a thread of
    /// its own, with a deadline, not polled.
    public func stop() {
        guard !exited else { return }
        exited = true
        kill(pid, SIGTERM)
        let ended = DispatchSemaphore(value: 0)
        let child = pid
        Thread {
            var status: Int32 = 0
            waitpid(child, &status, 0)
            ended.signal()
        }.start()
        if ended.wait(timeout: .now() + 5) == .timedOut {
            kill(pid, SIGKILL)
            ended.wait()
        }
    }

    deinit { stop() }
}

/// A process's output (a peer's, or a run's through a `Pipe`), read on a thread of its own and
/// kept line by line, for a test to wait on a line: what the process says is its signal (it is
/// ready, it saw a request, it published a snapshot), with no sleep and no polling.
public final class OutputLines: @unchecked Sendable {
    private let condition = NSCondition()
    /// The peer's lines so far (guarded by `condition`); at most `keptLines`, the first ones.
    private var printed: [String] = []
    private var outputEnded = false
    private static let keptLines = 100_000

    /// Nothing yet: `collect(from:)` reads.
    init() {}

    /// Reads what a `Process` writes into `pipe` (its standard output or error).
    public init(reading pipe: Pipe) {
        let descriptor = dup(pipe.fileHandleForReading.fileDescriptor)
        Thread { [self] in collect(from: descriptor) }.start()
    }

    /// Reads the output until its writer closes it (when it ends), line by line; closes
    /// `descriptor` then.
    func collect(from descriptor: Int32) {
        var pending: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            pending.append(contentsOf: chunk[0..<count])
            var lines: [String] = []
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                lines.append(String(decoding: pending[..<newline], as: UTF8.self))
                pending.removeSubrange(...newline)
            }
            guard !lines.isEmpty else { continue }
            condition.lock()
            printed.append(contentsOf: lines.prefix(max(0, Self.keptLines - printed.count)))
            condition.broadcast()
            condition.unlock()
        }
        close(descriptor)
        condition.lock()
        if !pending.isEmpty && printed.count < Self.keptLines { printed.append(String(decoding: pending, as: UTF8.self)) }
        outputEnded = true
        condition.broadcast()
        condition.unlock()
    }

    /// The first line the peer printed (on the output given at start) that `matches`, waiting up
    /// to `timeout` for it; nil when it ended or the time ran out first. Blocks: from an async
    /// test, call it through `onAThreadOfItsOwn`.
    public func line(timeout: TimeInterval = 30, where matches: (String) -> Bool) -> String? {
        line(from: 0, timeout: timeout, where: matches)?.text
    }

    /// The first line at or after `index` (0 is the first line printed) that `matches`, with its
    /// index, waiting up to `timeout` for it; nil when the output ended or the time ran out first.
    public func line(from index: Int, timeout: TimeInterval = 30, where matches: (String) -> Bool) -> (index: Int, text: String)? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        var next = max(0, index)
        while true {
            while next < printed.count {
                if matches(printed[next]) { return (next, printed[next]) }
                next += 1
            }
            if outputEnded || !condition.wait(until: deadline) { return nil }
        }
    }

    /// Every line so far, each with its newline.
    public var text: String {
        condition.lock()
        defer { condition.unlock() }
        return printed.map { $0 + "\n" }.joined()
    }
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

/// Waits until something accepts TCP connections on `port`: only for a peer that cannot say when
/// it is ready (nginx prints nothing when it listens). The suite's one wait by sleeping and
/// trying again; every other peer is waited for by what it prints (`Peer.ready(timeout:)`).
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

extension Mirror {
    /// The value's stored properties, its superclasses' included (a `Mirror`'s `children` are
    /// only its own class's): what a walk that compares or prints whole values must read.
    public var storedChildren: [Mirror.Child] {
        var all = Array(children)
        var superclass = superclassMirror
        while let parent = superclass {
            all += parent.children
            superclass = parent.superclassMirror
        }
        return all
    }
}
