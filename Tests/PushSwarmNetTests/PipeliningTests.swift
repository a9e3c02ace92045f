import Foundation
import PushSwarmCore
import PushSwarmTestSupport
import Synchronization
@testable import PushSwarmNet
import Testing

/// RFC 9112 section 9.3.2: a client may pipeline requests, and the server answers them in the
/// order received. Every server PushSwarm runs (the built-in mock, `--metrics-listen`,
/// `--dashboard`, `--push-listen`) answers 100,000 pipelined requests on one connection in full.
/// Each answer once recursed into the next request (`processBuffered` → handler → `respond` →
/// `processBuffered`), and about 1,000 of them overflowed the stack: the mock and a wall run
/// with `--metrics-listen` died with signal 11. Each server here has loops of its own: a flood on
/// the shared `testGroup` would hold up the other suites' servers past their read timeouts.
@Suite struct PipeliningTests {
    static let count = 100_000

    private func ownGroup(_ name: String) -> EventLoopGroup {
        EventLoopGroup(threads: 1, name: "pipelining-\(name)")
    }

    @Test func theMockAnswersEveryPipelinedRequest() async throws {
        let mocks = MockFleet(platforms: ["echo": EchoConfiguration(mockBehaviour: MockBehaviour())], seed: 1)
        let group = ownGroup("mock")
        defer { group.shutdown() }
        let server = MockServer(mocks: mocks, group: group, clock: WallClock())
        try server.start(at: SocketAddress(ip: .loopback, port: 0))
        defer { server.stop() }
        let statuses = await pipeline(port: server.port, "GET /ledger HTTP/1.1\r\nHost: mock\r\n\r\n", times: Self.count)
        #expect(statuses == [200: Self.count])
    }

    @Test func theMetricsEndpointAnswersEveryPipelinedScrape() async throws {
        let endpoint = MetricsEndpoint(labels: .init(scenario: "s", runID: "r", shard: "1/1"))
        try endpoint.start(at: SocketAddress(ip: .loopback, port: 0))
        defer { endpoint.stop() }
        let statuses = await pipeline(port: endpoint.port, "GET /nothing HTTP/1.1\r\nHost: run\r\n\r\n", times: Self.count)
        #expect(statuses == [404: Self.count])
    }

    @Test func theDashboardAnswersEveryPipelinedRequest() async throws {
        let dashboard = Dashboard(scenario: "s")
        try dashboard.start(at: SocketAddress(ip: .loopback, port: 0))
        defer { dashboard.stop() }
        let statuses = await pipeline(port: dashboard.port, "GET /nothing HTTP/1.1\r\nHost: run\r\n\r\n", times: Self.count)
        #expect(statuses == [404: Self.count])
    }

    @Test func thePushReceiverAnswersEveryPipelinedSend() async throws {
        let group = ownGroup("push")
        defer { group.shutdown() }
        let receiver = PushReceiver(group: group, transports: [])
        try receiver.start(at: SocketAddress(ip: .loopback, port: 0))
        defer { receiver.stop() }
        let statuses = await pipeline(port: receiver.port, "GET /v1/nothing HTTP/1.1\r\nHost: fcm\r\n\r\n", times: Self.count)
        #expect(statuses == [404: Self.count])
    }

    /// A client that sends and does not read: the server answers what it can, then stops
    /// handling requests and reading the socket, so that what it holds for the connection
    /// (answers queued, requests not yet handled) stays bounded; it goes on once the client reads.
    @Test func aClientThatDoesNotReadIsNotBufferedWithoutBound() async throws {
        let group = ownGroup("bound")
        defer { group.shutdown() }
        let server = try startServer(group: group) { _, responder in
            responder.respond(Response(status: 200, body: Array(repeating: UInt8(ascii: "a"), count: 1_000)))
        }
        defer { server.stop() }
        // 20,000 answers of about 1 KB: 20 MB, past the kernel's buffers and the server's bound.
        let request = "GET / HTTP/1.1\r\nHost: a\r\nX-Padding: \(String(repeating: "p", count: 60))\r\n\r\n"
        let statuses = await pipeline(port: server.port, request, times: 20_000, readAfterSending: true)
        #expect(statuses == [200: 20_000])
        let bound = ServerConnection.maxQueuedAnswerBytes + ServerConnection.maxBufferedRequestBytes + (1 << 17)
        #expect(server.statistics.heldBytesPeak.load(ordering: .relaxed) <= bound)
    }
}

/// Sends `request` `times` times on one connection from a thread of its own while this one reads
/// the answers and counts them by status. With `readAfterSending`, reading begins only once the
/// sender has sent everything or has been blocked for a second by a server that stopped reading
/// (either way, the server has had the whole pipeline to answer without being read).
private func pipeline(port: UInt16, _ request: String, times: Int, readAfterSending: Bool = false) async -> [Int: Int] {
    await onAThreadOfItsOwn {
        guard let fd = connectLoopback(port: port) else { return [:] }
        defer { close(fd) }
        // A guard against a hang, not a wait: the answers are on their way.
        var limit = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var blocked = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &blocked, socklen_t(MemoryLayout<timeval>.size))
        let batch = Array(String(repeating: request, count: 100).utf8)
        let sentOrBlocked = DispatchSemaphore(value: 0)
        let sender = Thread {
            var signalled = false
            defer { if !signalled { sentOrBlocked.signal() } }
            for _ in 0..<(times / 100) {
                var offset = 0
                while offset < batch.count {
                    let sent = batch.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                    if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                        if !signalled { sentOrBlocked.signal() }
                        signalled = true
                        continue
                    }
                    if sent <= 0 { return }
                    offset += sent
                }
            }
        }
        sender.start()
        if readAfterSending { sentOrBlocked.wait() }
        var reader = AnswerCounter()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while reader.answers < times {
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            reader.consume(buffer[0..<count])
        }
        return reader.statuses
    }
}

/// Splits a stream of HTTP/1.1 answers (each with Content-Length) and counts them by status.
private struct AnswerCounter {
    private var pending: [UInt8] = []
    var statuses: [Int: Int] = [:]
    var answers: Int { statuses.values.reduce(0, +) }

    mutating func consume(_ bytes: ArraySlice<UInt8>) {
        pending.append(contentsOf: bytes)
        var start = 0
        while let end = headEnd(from: start) {
            let head = String(decoding: pending[start..<end], as: UTF8.self)
            let lines = head.split(separator: "\r\n")
            let status = lines.first.flatMap { Int($0.split(separator: " ")[1]) } ?? -1
            let length = lines.dropFirst().compactMap { line -> Int? in
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
                return Int(parts[1].trimmingCharacters(in: .whitespaces))
            }.first ?? 0
            guard end + 4 + length <= pending.count else { break }
            statuses[status, default: 0] += 1
            start = end + 4 + length
        }
        pending.removeFirst(start)
    }

    private func headEnd(from start: Int) -> Int? {
        guard pending.count >= start + 4 else { return nil }
        var index = start
        while index + 3 < pending.count {
            if pending[index] == 13, pending[index + 1] == 10, pending[index + 2] == 13, pending[index + 3] == 10 { return index }
            index += 1
        }
        return nil
    }
}
