import Foundation
import PushSwarmCore
@testable import PushSwarmNet
import Testing

@Suite struct HTTPRoundTripTests {
    @Test func clientAndServerExchangeBodiesAndHeaders() async throws {
        let server = try startServer { request, responder in
            let body = Array("\(request.method) \(request.target) \(request.body.count) \(request.peer)".utf8)
            responder.respond(Response(status: 201, headers: [Header("X-Echo", request.header("X-Test") ?? "")], body: body))
        }
        defer { server.stop() }
        let client = HTTPClient(group: testGroup)
        let result = await client.send(HTTPClientRequest(
            method: "POST", url: url(server, "/events?x=1"), headers: [Header("X-Test", "yes")], body: Array("hello".utf8)
        ))
        let response = try #require(result.response)
        #expect(response.status == 201)
        #expect(response.header("X-Echo") == "yes")
        #expect(response.bodyText == "POST /events?x=1 5 127.0.0.1")
    }

    /// The server's idle timeout is an hour: on CI the test's task once waited past the default
    /// 75 s between two of its requests (the concurrency pool's two threads held by other suites'
    /// tests waiting on processes), the server closed the idle connection, and request 11 went
    /// out on a new one.
    @Test func keepAliveReusesOneConnectionForSequentialRequests() async throws {
        let server = try startServer(HTTPServer.Configuration(idleTimeoutNanoseconds: 3_600_000_000_000)) { _, responder in
            responder.respond(Response(status: 200, body: Array("ok".utf8)))
        }
        defer { server.stop() }
        let client = HTTPClient(group: testGroup)
        // Counted by the client, request by request: the server's count of accepted connections
        // also held strays from parallel tests (a test expecting a refusal at a port that this
        // server had since been given), which once read 2.
        var opened: [Int] = []
        for _ in 0..<20 {
            let result = await client.send(HTTPClientRequest(method: "GET", url: url(server)))
            #expect(result.response?.status == 200)
            opened.append(result.timings.connectionsOpened)
        }
        #expect(opened == [1] + Array(repeating: 0, count: 19))
    }

    @Test func aNATGroupsSourceAddressIsWhatTheServerSees() async throws {
        let server = try startServer { request, responder in
            responder.respond(Response(status: 200, body: Array(request.peer.description.utf8)))
        }
        defer { server.stop() }
        let client = HTTPClient(group: testGroup)
        for source in ["127.0.0.9", "127.1.2.3"] {
            let result = await client.send(HTTPClientRequest(method: "GET", url: url(server), source: IPAddress(source)))
            #expect(result.response?.bodyText == source)
        }
    }

    @Test func refusedConnectionIsAnErrorNotACrash() async throws {
        let client = HTTPClient(group: testGroup)
        // Port 1 (tcpmux) on a loopback address no other test uses: nothing listens there. A
        // port from `freePort()` could be handed to another test's server in the meantime.
        let result = await client.send(HTTPClientRequest(method: "GET", url: TargetURL("http://127.0.0.254:1/")!))
        #expect(result.error?.reason == .connectionRefused)
    }

    /// A wall partition's devices are actors on its loop, so a request's completion must run on
    /// the loop the request named (`HTTPClientRequest.loop`), whichever loop its pool's key would
    /// hash to: with two loops, a client that ignored it would answer half of these elsewhere.
    @Test func aCompletionRunsOnTheLoopItsRequestNamed() async throws {
        let server = try startServer { _, responder in responder.respond(Response(status: 200)) }
        defer { server.stop() }
        let client = HTTPClient(group: testGroup)
        for index in testGroup.loops.indices {
            for source in 1...4 {
                let request = HTTPClientRequest(method: "GET", url: url(server), source: .v4(0x7F00_0000 + UInt32(source)), loop: index)
                let onItsLoop = await withCheckedContinuation { continuation in
                    client.execute(request) { _ in continuation.resume(returning: testGroup.loops[index].inLoop) }
                }
                #expect(onItsLoop, "loop \(index), source \(source)")
            }
        }
    }

    /// What the partition checks on each entry from the loop (tick, arrival, push): off the loop's
    /// thread, the check stops the process, in release builds too (a precondition, not an assert).
    @Test func isolationCheckedOffTheLoopStopsTheProcess() async {
        await #expect(processExitsWith: .failure) {
            let group = EventLoopGroup(threads: 1, name: "off-loop")
            group.loops[0].checkIsolated()
        }
    }

    /// The request's timeout fires at its deadline, on the loop's clock: not a nanosecond before.
    @Test func requestTimeoutFiresWhenTheServerNeverAnswers() async throws {
        let group = manualGroup("request-timeout")
        defer { group.shutdown() }
        let server = try startServer(group: group) { _, _ in }
        defer { server.stop() }
        let pending = Pending(HTTPClient(group: group), HTTPClientRequest(method: "GET", url: url(server), timeoutNanoseconds: 200_000_000))
        await group.advanceTime(by: 199_999_999)
        #expect(pending.now == nil, "timed out early: \(String(describing: pending.now))")
        await group.advanceTime(by: 1)
        let result = try #require(pending.now, "no timeout at the deadline")
        guard case .timeout(let timings) = result else {
            Issue.record("expected a timeout, got \(result)")
            return
        }
        #expect(timings.total == 200_000_000)
    }

    @Test func delayedAnswersArriveAndPoolsQueueBeyondTheirLimit() async throws {
        let server = try startServer { _, responder in
            responder.respond(Response(status: 200), afterNanoseconds: 20_000_000)
        }
        defer { server.stop() }
        let client = HTTPClient(group: testGroup, configuration: HTTPClient.Configuration(maxConnectionsPerPool: 2))
        let results = await withTaskGroup(of: HTTPResult.self) { group in
            for _ in 0..<10 { group.addTask { await client.send(HTTPClientRequest(method: "GET", url: url(server))) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.compactMap(\.response).count == 10)
        #expect(results.reduce(0) { $0 + $1.timings.connectionsOpened } == 2)
        // At most two at a time: the later ones waited in the pool.
        #expect(results.contains { $0.timings.queued > 10_000_000 })
    }
}

/// Interim (1xx) answers before the final one, from a peer that sends them as RFC 9110 allows.
@Suite struct InterimAnswerTests {
    /// RFC 9110 section 15.2: "A client MUST be able to parse one or more 1xx responses received
    /// prior to a final response, even if the client does not expect one." A peer answers each
    /// request with 103 Early Hints (and, on the second, 100 Continue as well) before its 200; the
    /// client's result is the 200 with its body, and the connection carries the next request.
    @Test(.enabled(if: which("python3") != nil, "needs python3"))
    func interimAnswersAreSkippedBeforeTheFinalOne() async throws {
        let port = freePort()
        let peer = try rawPythonPeer(port: port, perConnection: """
            served = 0
            buffer = b""
            while True:
                chunk = conn.recv(65536)
                if not chunk: break
                buffer += chunk
                while b"\\r\\n\\r\\n" in buffer:
                    head, buffer = buffer.split(b"\\r\\n\\r\\n", 1)
                    served += 1
                    interim = b"HTTP/1.1 103 Early Hints\\r\\nLink: </style.css>; rel=preload\\r\\n\\r\\n"
                    if served == 2: interim = b"HTTP/1.1 100 Continue\\r\\n\\r\\n" + interim
                    body = b'{"served":%d}' % served
                    # The interim answers and the final one in separate writes.
                    conn.sendall(interim)
                    conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body) + body)
            conn.close()
            """)
        defer { peer.stop() }
        #expect(await peer.ready())
        let client = HTTPClient(group: testGroup)
        defer { client.shutdown() }
        for served in 1...2 {
            let result = await client.send(HTTPClientRequest(method: "GET", url: TargetURL("http://127.0.0.1:\(port)/events")!))
            let response = try #require(result.response, "\(result)")
            #expect(response.status == 200)
            #expect(String(decoding: response.body, as: UTF8.self) == #"{"served":\#(served)}"#, "the second rides the same connection")
        }
    }
}

/// Where a redirect's next hop goes under a target (issue 35: with `--target
/// flocktory=http://host:port/flocktory`, a `302 Location: http://host:port/flocktory/__r1/…` was
/// fetched as `/flocktory/flocktory/__r1/…`).
@Suite struct RedirectTargetTests {
    let target = TargetURL("http://127.0.0.1:8080/flocktory")!

    func hop(_ locations: [String], from path: String = "/t/show/7", target: TargetURL? = nil) -> String {
        let url = NetworkTransport.url(target ?? self.target, Request(method: "GET", path: path, locations: locations))
        #expect(url.origin == (target ?? self.target).origin)
        return url.path
    }

    @Test func aLocationOnTheTargetsOriginIsFetchedAsItIs() {
        // RFC 9110 section 10.2.2: the Location is a URI reference, resolved against the request's URL.
        #expect(hop(["http://127.0.0.1:8080/flocktory/__r1/t/show/promo-a-35"]) == "/flocktory/__r1/t/show/promo-a-35")
        #expect(hop(["/flocktory/__r1/t/show/promo-a-35"]) == "/flocktory/__r1/t/show/promo-a-35")
        #expect(hop(["__r1/7"]) == "/flocktory/t/show/__r1/7")
        #expect(hop(["../../r/7", "../landing/7"], from: "/t/click/7") == "/flocktory/landing/7")
        #expect(hop(["/elsewhere/x"]) == "/elsewhere/x", "a path outside the target's, on its host, is the service's to name")
    }

    @Test func aLocationLeavingTheTargetsOriginGoesToTheTargetWithoutDoublingItsPath() {
        #expect(hop(["https://api.flocktory.com/static/icon/7.png"]) == "/flocktory/static/icon/7.png")
        #expect(hop(["https://cdn.example/flocktory/static/icon/7.png"]) == "/flocktory/static/icon/7.png")
        #expect(hop(["https://cdn.example/static/7.png", "../landing/7"]) == "/flocktory/landing/7")
        #expect(hop(["https://api.flocktory.com/static/icon/7.png"], target: TargetURL("http://127.0.0.1:8080")!) == "/static/icon/7.png")
    }
}
