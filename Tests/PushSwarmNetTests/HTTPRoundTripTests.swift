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

    @Test func keepAliveReusesOneConnectionForSequentialRequests() async throws {
        let server = try startServer { _, responder in responder.respond(Response(status: 200, body: Array("ok".utf8))) }
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

    @Test func requestTimeoutFiresWhenTheServerNeverAnswers() async throws {
        let server = try startServer { _, _ in }
        defer { server.stop() }
        let client = HTTPClient(group: testGroup)
        let result = await client.send(HTTPClientRequest(method: "GET", url: url(server), timeoutNanoseconds: 200_000_000))
        guard case .timeout = result else {
            Issue.record("expected a timeout, got \(result)")
            return
        }
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
