import Foundation
import PushSwarmCore
@testable import PushSwarmNet
import Synchronization
import Testing

/// What the client's pools promise beyond a single exchange: the process-wide connection cap,
/// idle connections closing, and a kept-alive connection the server closed being retried.
@Suite struct PoolBehaviourTests {
    @Test func theConnectionBudgetCapsOpenConnectionsAcrossPools() async throws {
        let server = try startServer { _, responder in responder.respond(Response(status: 200), afterNanoseconds: 30_000_000) }
        defer { server.stop() }
        // Eight pools (eight NAT addresses), but only three connections allowed in the process.
        let client = HTTPClient(group: testGroup, configuration: HTTPClient.Configuration(maxConnectionsPerPool: 4, maxOpenConnections: 3))
        let results = await withTaskGroup(of: HTTPResult.self) { group in
            for index in 0..<16 {
                let source = IPAddress.v4(0x7F00_0001 + UInt32(index % 8))
                group.addTask { await client.send(HTTPClientRequest(method: "GET", url: url(server), source: source)) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.compactMap(\.response).count == 16, "every request is answered, some after waiting")
        #expect(server.statistics.snapshot.first { $0.name == "connections_open" }!.value <= 3)
        #expect(client.openConnections <= 3)
        #expect(results.contains { $0.timings.queued > 20_000_000 })
    }

    // Under overload requests wait for a connection; one whose time ran out must leave the wait
    // queue then (its body freed, no connection opened for it), not when its turn would come.
    @Test func aRequestThatTimedOutWhileWaitingLeavesTheQueueAtOnce() async throws {
        let group = manualGroup("queue-timeout")
        defer { group.shutdown() }
        let server = try startServer(group: group) { _, _ in }  // never answers: the one connection stays busy
        defer { server.stop() }
        let client = HTTPClient(group: group, configuration: HTTPClient.Configuration(maxConnectionsPerPool: 1))
        let first = Pending(client, HTTPClientRequest(method: "POST", url: url(server), body: [0], timeoutNanoseconds: 30_000_000_000))
        let waiting = (1...10).map { index in
            Pending(client, HTTPClientRequest(method: "POST", url: url(server), body: [UInt8(index)], timeoutNanoseconds: 50_000_000))
        }
        await group.advanceTime(by: 50_000_000)
        for pending in waiting {
            let result = try #require(pending.now, "a waiting request outlived its timeout")
            guard case .timeout(let timings) = result else {
                Issue.record("expected a timeout, got \(result)")
                continue
            }
            #expect(timings.total == 50_000_000)
        }
        #expect(first.now == nil, "the first request holds the only connection")
        let (queued, held) = await withCheckedContinuation { continuation in
            client.waitQueues { continuation.resume(returning: ($0, $1)) }
        }
        #expect(queued == 0)
        #expect(held == 0, "timed-out requests still held by the wait queue")
        #expect(client.openConnections == 1, "no connection opened for a request that left the queue")
    }

    /// A pool's request timeouts are deadlines swept by one timer, not a timer each: 40 requests
    /// with 40 different timeouts, none answered, leave the loop a handful of timers (the sweep,
    /// a connection's), and still each times out at its own deadline, the shorter ones first
    /// whatever order they were sent in.
    @Test func requestTimeoutsAreOneSweepAPoolEachAtItsDeadline() async throws {
        let group = manualGroup("deadline-sweep")
        defer { group.shutdown() }
        let server = try startServer { _, _ in }  // never answers
        defer { server.stop() }
        let client = HTTPClient(group: group, configuration: HTTPClient.Configuration(maxConnectionsPerPool: 1))
        // Timeouts of 10 to 400 ms, sent in a shuffled order.
        var random = SeededRandom(seed: 52, stream: .device)
        var timeouts = (1...40).map { UInt64($0) * 10_000_000 }
        for index in timeouts.indices.reversed() { timeouts.swapAt(index, random.nextIndex(below: index + 1)) }
        let pending = timeouts.map { Pending(client, HTTPClientRequest(method: "POST", url: url(server), body: [1], timeoutNanoseconds: $0)) }
        let timers = await group.loops[0].pendingTimers()
        #expect(timers <= 3, "\(timers) timers for 40 requests in one pool")
        for step in 1...40 {
            await group.advanceTime(by: 10_000_000)
            let due = UInt64(step) * 10_000_000
            for (request, timeout) in zip(pending, timeouts) {
                let result = request.now
                if timeout > due {
                    #expect(result == nil, "a request timed out before its \(timeout) ns")
                } else if case .timeout(let timings)? = result {
                    #expect(timings.total == timeout, "timed out at \(timings.total) ns, not its \(timeout)")
                } else {
                    Issue.record("expected a timeout at \(timeout) ns, got \(String(describing: result))")
                }
            }
        }
    }

    /// An idle connection closes when the idle timeout has passed since its last answer, on the
    /// loop's clock, and the next request opens a new one.
    @Test func idleConnectionsCloseAfterTheIdleTimeout() async throws {
        let group = manualGroup("idle-timeout")
        defer { group.shutdown() }
        let server = try startServer(group: group) { _, responder in responder.respond(Response(status: 200)) }
        defer { server.stop() }
        let client = HTTPClient(group: group, configuration: HTTPClient.Configuration(idleTimeoutNanoseconds: 100_000_000))
        #expect(await client.send(HTTPClientRequest(method: "GET", url: url(server))).response?.status == 200)
        #expect(client.openConnections == 1)
        await group.advanceTime(by: 99_999_999)
        #expect(client.openConnections == 1, "closed before the idle timeout")
        await group.advanceTime(by: 1)
        #expect(client.openConnections == 0)
        // The next request opens a new connection (without the timeout it would reuse the first).
        let second = await client.send(HTTPClientRequest(method: "GET", url: url(server)))
        #expect(second.response?.status == 200)
        #expect(second.timings.connectionsOpened == 1)
    }

    /// RFC 9112 section 9.3.1: a server may close a kept-alive connection as the next request goes
    /// out; the client then retries that request once on a new connection. The server here
    /// answers the first request, closes the connection without answering the second (as it
    /// would if its idle timer fired just then), and answers the retry. No timing involved: the
    /// close comes after the request has arrived. Without the retry the second request fails.
    /// The server's idle timeout is an hour: on a loaded machine the test's task once waited
    /// past the default 75 s between its requests, the server closed the idle connection, and
    /// the second request went out on a new one (where a close is not a stale connection's).
    @Test func aKeptAliveConnectionTheServerClosedIsRetriedOnce() async throws {
        let requests = Mutex(0)
        let server = try startServer(HTTPServer.Configuration(idleTimeoutNanoseconds: 3_600_000_000_000)) { _, responder in
            let number = requests.withLock { count -> Int in
                count += 1
                return count
            }
            if number == 2 || number >= 4 { responder.dropConnection(reset: false) } else { responder.respond(Response(status: 200)) }
        }
        defer { server.stop() }
        let client = HTTPClient(group: testGroup)
        #expect(await client.send(HTTPClientRequest(method: "POST", url: url(server), body: [1])).response?.status == 200)
        let second = await client.send(HTTPClientRequest(method: "POST", url: url(server), body: [2]))
        #expect(second.response?.status == 200, "\(second)")
        #expect(requests.withLock { $0 } == 3, "the first, the one the server dropped, its retry")
        #expect(second.timings.connectionsOpened == 1, "sent on the kept-alive connection, retried on a new one")
        // Only once: a request whose retry is dropped as well fails.
        let third = await client.send(HTTPClientRequest(method: "POST", url: url(server), body: [3]))
        #expect(third.response == nil, "\(third)")
        #expect(requests.withLock { $0 } == 5)
    }

    @Test func theSocketPlanCountsBothEndsOfAnInProcessMock() throws {
        let inProcess = WallRun.plan(devices: 10_000, devicesPerSource: 1, inProcessMock: true, maxConnectionsPerSource: 64, fileLimit: 20_000)
        #expect(inProcess.clientConnections == 10_000)
        #expect(inProcess.needed == 20_256)
        #expect(!inProcess.fits)
        #expect(inProcess.connectionBudget == 9_872)
        #expect(inProcess.webSocketBudget == 0)
        #expect(inProcess.explanation.contains("20256 files"))
        let external = WallRun.plan(devices: 10_000, devicesPerSource: 1, inProcessMock: false, maxConnectionsPerSource: 64, fileLimit: 20_000)
        #expect(external.fits)
        // 2,000 devices per NAT address share pools of at most 64 connections.
        let shared = WallRun.plan(devices: 10_000, devicesPerSource: 2_000, inProcessMock: true, maxConnectionsPerSource: 64, fileLimit: 20_000)
        #expect(shared.clientConnections == 5 * 64)
        #expect(shared.fits)
    }

    @Test func webSocketsTakeTheirShareOfTheFileBudget() {
        // 5,000 Smartico devices each holding a WebSocket, against the in-process mock: 20,258
        // files in the worst case. Every socket is kept; HTTP gets the rest of the budget.
        let plan = WallRun.plan(devices: 5_000, devicesPerSource: 1, inProcessMock: true, maxConnectionsPerSource: 64, webSockets: 5_001, fileLimit: 20_000)
        #expect(plan.needed == 20_258 && !plan.fits)
        #expect(plan.webSocketBudget == 5_001)
        #expect(plan.connectionBudget == 9_872 - 5_001)
        #expect((plan.webSocketBudget + plan.connectionBudget) * 2 + plan.reserved <= 20_000)
        // More sockets than files: HTTP keeps a quarter of the budget.
        let crowded = WallRun.plan(devices: 20_000, devicesPerSource: 1, inProcessMock: true, maxConnectionsPerSource: 64, webSockets: 20_000, fileLimit: 20_000)
        #expect(crowded.connectionBudget == 9_872 / 4)
        #expect(crowded.webSocketBudget == 9_872 - 9_872 / 4)
        #expect(crowded.explanation.contains("WebSockets at 7404"))
    }
}
