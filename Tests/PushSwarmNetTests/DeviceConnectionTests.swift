import Foundation
import PushSwarmCore
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
        let received = Watched(0)
        let server = try startServer(group: group) { _, responder in
            received.update { $0 += 1 }
            responder.respond(Response(status: 200), afterNanoseconds: 10_000_000)
        }
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
}
