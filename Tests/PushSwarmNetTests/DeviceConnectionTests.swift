import Foundation
import PushSwarmCore
import PushSwarmMetrics
@testable import PushSwarmNet
import Synchronization
import Testing

/// `network.connections: perDevice` (issue 50): each install's requests go out on connections of
/// its own, kept as its OS's HTTP stack keeps them, never on another install's, even behind one
/// NAT address. All on a manual clock: idle timeouts pass when the test says.
@Suite struct DeviceConnectionTests {
    static let okHttp = ConnectionStack.okHttp
    static let source = IPAddress.v4(0x7F00_0001)

    private func request(_ server: HTTPServer, owner: Int?, stack: ConnectionStack = okHttp) -> HTTPClientRequest {
        var request = HTTPClientRequest(method: "POST", url: url(server), body: [1], source: Self.source)
        request.owner = owner.map { ConnectionOwner(device: $0, stack: stack) }
        return request
    }

    /// A server that counts the requests it received and answers each 10 ms (of the manual clock) on.
    private func slowServer(_ group: EventLoopGroup) throws -> (HTTPServer, Watched<Int>) {
        let received = Watched(0)
        let server = try startServer(group: group) { _, responder in
            received.update { $0 += 1 }
            responder.respond(Response(status: 200), afterNanoseconds: 10_000_000)
        }
        return (server, received)
    }

    /// Three installs behind one address, two requests each, one after another: each install
    /// opens one connection and reuses it (3 in all). Sharing their address's pool, the six
    /// requests go out on one.
    @Test func eachInstallOpensItsOwnConnectionBehindOneAddress() async throws {
        let group = manualGroup("own-connections")
        defer { group.shutdown() }
        let server = try startServer(group: group) { _, responder in responder.respond(Response(status: 200)) }
        defer { server.stop() }
        for (owners, expected) in [([0, 1, 2], 3), ([nil, nil, nil], 1)] as [([Int?], Int)] {
            let client = HTTPClient(group: group)
            var opened: [Int] = []
            for owner in owners {
                for _ in 0..<2 {
                    let result = await client.send(request(server, owner: owner))
                    #expect(result.response?.status == 200)
                    opened.append(result.timings.connectionsOpened)
                }
            }
            #expect(opened.reduce(0, +) == expected, "owners \(owners): connections opened per request \(opened)")
            if owners.first! != nil {
                #expect(opened == [1, 0, 1, 0, 1, 0], "each install reuses its own connection and no other's")
            }
            client.shutdown()
        }
    }

    /// An install's stack caps its connections to a host: four requests at once from an install
    /// whose stack allows two go out two at a time on two connections. Its address's shared pool
    /// (64) sends all four at once, on four.
    @Test func anInstallsStackCapsItsConnectionsToAHost() async throws {
        let group = manualGroup("stack-cap")
        defer { group.shutdown() }
        let (server, received) = try slowServer(group)
        defer { server.stop() }
        let two = ConnectionStack(maxConnectionsPerHost: 2, idleTimeout: .minutes(5))
        for (owner, turns) in [(7, [2, 4]), (nil, [4])] as [(Int?, [Int])] {
            received.update { $0 = 0 }
            let client = HTTPClient(group: group)
            let pending = (0..<4).map { _ in Pending(client, request(server, owner: owner, stack: two)) }
            // Each turn: the requests on connections reach the server, which answers them 10 ms on.
            for count in turns {
                _ = await received.wait { $0 >= count ? $0 : nil }
                await group.advanceTime(by: 10_000_000)
            }
            var results: [HTTPResult] = []
            for request in pending { results.append(await request.result) }
            #expect(results.allSatisfy { $0.response?.status == 200 })
            #expect(results.reduce(0) { $0 + $1.timings.connectionsOpened } == (owner == nil ? 4 : 2), "owner \(String(describing: owner))")
            #expect(results.filter { $0.timings.queued > 0 }.count == (owner == nil ? 0 : 2), "two waited for the install's two connections")
            client.shutdown()
        }
    }

    /// The install's idle timeout is its stack's (URLSession's minute here, where the client's
    /// is 5 minutes), and once its last connection has closed its pool is gone: a fleet of a
    /// million installs leaves no million empty pools. An address's shared pool stays.
    @Test func anInstallsPoolGoesWhenItsLastConnectionIdlesOut() async throws {
        let group = manualGroup("own-pool-idle")
        defer { group.shutdown() }
        let server = try startServer(group: group) { _, responder in responder.respond(Response(status: 200)) }
        defer { server.stop() }
        let client = HTTPClient(group: group)
        #expect(await client.send(request(server, owner: 3, stack: .urlSession)).response?.status == 200)
        #expect(await client.send(request(server, owner: nil)).response?.status == 200)
        #expect(client.openConnections == 2)
        #expect(await client.poolCount() == 2)
        await group.advanceTime(by: 60_000_000_000 - 1)
        #expect(client.openConnections == 2, "closed before URLSession's idle minute")
        await group.advanceTime(by: 1)
        #expect(client.openConnections == 1, "the install's connection idled out; the shared one keeps its 5 minutes")
        #expect(await client.poolCount() == 1, "the install's empty pool is gone, the address's stays")
        // Its next request opens a connection in a new pool of its own.
        let again = await client.send(request(server, owner: 3, stack: .urlSession))
        #expect(again.response?.status == 200 && again.timings.connectionsOpened == 1)
        client.shutdown()
    }

    static func name(_ event: ConnectionEvent) -> String { event.counter.name }

    /// Runs `body` on the group's (only) loop, where a transport calls the client.
    private func onLoop(_ group: EventLoopGroup, _ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { continuation in
            group.loops[0].execute {
                body()
                continuation.resume()
            }
        }
    }

    /// An app's process died or it was suspended: its idle connection closes at once, counted by
    /// why, its pool goes, and its next request opens a new connection. Another install's and the
    /// address's shared connections stay.
    @Test func anInstallsConnectionsCloseWithItsAppAndItsNextRequestOpensANewOne() async throws {
        let group = manualGroup("own-close")
        defer { group.shutdown() }
        let server = try startServer(group: group) { _, responder in responder.respond(Response(status: 200)) }
        defer { server.stop() }
        let client = HTTPClient(group: group)
        let counted = Watched<[String]>([])
        client.watchConnections(loop: 0) { event in counted.update { $0.append(Self.name(event)) } }
        for owner in [3, 4, nil] as [Int?] {
            #expect(await client.send(request(server, owner: owner, stack: .urlSession)).response?.status == 200)
        }
        #expect(client.openConnections == 3)
        await onLoop(group) { client.closeConnections(owner: InstallProcess(device: 3), loop: 0, reason: .background) }
        #expect(client.openConnections == 2, "install 3's connection closed; install 4's and the address's stay")
        #expect(await client.poolCount() == 2)
        #expect(await counted.wait { $0.count >= 4 ? $0 : nil } == Array(repeating: "connections.opened", count: 3) + ["connections.closed.background"])
        let again = await client.send(request(server, owner: 3, stack: .urlSession))
        #expect(again.response?.status == 200 && again.timings.connectionsOpened == 1, "a new connection for the app that came back")
        let other = await client.send(request(server, owner: 4, stack: .urlSession))
        #expect(other.response?.status == 200 && other.timings.connectionsOpened == 0, "install 4 reuses its own")
        client.shutdown()
    }

    /// A request under way when its app's connections close is answered on its connection, which
    /// then closes; a request the app makes meanwhile goes out on a new connection, not on the
    /// closing one. Nothing is lost, and the close is counted once.
    @Test func aRequestUnderWayFinishesOnItsConnectionWhichThenCloses() async throws {
        let group = manualGroup("own-close-busy")
        defer { group.shutdown() }
        let (server, received) = try slowServer(group)
        defer { server.stop() }
        let client = HTTPClient(group: group)
        let counted = Watched<[String]>([])
        client.watchConnections(loop: 0) { event in counted.update { $0.append(Self.name(event)) } }
        let underWay = Pending(client, request(server, owner: 5))
        _ = await received.wait { $0 >= 1 ? $0 : nil }
        await onLoop(group) { client.closeConnections(owner: InstallProcess(device: 5), loop: 0, reason: .processDied) }
        #expect(client.openConnections == 1, "the busy connection stays until its answer")
        let after = Pending(client, request(server, owner: 5))
        _ = await received.wait { $0 >= 2 ? $0 : nil }
        await group.advanceTime(by: 10_000_000)
        let (first, second) = (await underWay.result, await after.result)
        #expect(first.response?.status == 200 && second.response?.status == 200)
        #expect(first.timings.connectionsOpened == 1 && second.timings.connectionsOpened == 1)
        #expect(client.openConnections == 1, "the old connection closed after its answer; the new one is idle")
        let names = await counted.wait { $0.count >= 3 ? $0 : nil }
        #expect(names.filter { $0 == "connections.opened" }.count == 2)
        #expect(names.filter { $0 == "connections.closed.processDied" }.count == 1)
        client.shutdown()
    }
}
