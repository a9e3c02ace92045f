import PushSwarmCore
@testable import PushSwarmNet
import Testing

/// A pool's decisions without sockets: which connection a request takes, when another is opened,
/// which idle ones expire; and, against a model of connections that open, fail, answer and drop,
/// that no request is lost or waits while a connection idles.
@Suite struct PoolStateTests {
    private final class Connection {}
    private final class Request {}

    @Test func aRequestTakesTheWarmestIdleConnectionAndTheLongestIdleExpireFirst() {
        var state = PoolState<Connection, Request>(maxConnections: 4, idleTimeout: 100)
        let connections = (0..<3).map { _ in Connection() }
        for (index, connection) in connections.enumerated() {
            state.opening()
            state.opened()
            state.becameIdle(connection, at: UInt64(index) * 10)
        }
        #expect(state.nextExpiry == 100)
        let warmest = state.takeIdle()
        #expect(warmest === connections[2])
        state.becameIdle(connections[2], at: 50)
        #expect(state.expired(at: 99).isEmpty, "not before the idle timeout")
        let first = state.expired(at: 100)
        #expect(first.count == 1 && first[0] === connections[0])
        #expect(state.open == 2)
        let rest = state.expired(at: 150)
        #expect(rest.count == 2 && rest[0] === connections[1] && rest[1] === connections[2])
        #expect(state.open == 0 && state.nextExpiry == nil)
    }

    @Test func connectionsAreWantedForWaitingRequestsUpToTheLimit() {
        var state = PoolState<Connection, Request>(maxConnections: 2, idleTimeout: 100)
        #expect(!state.wantsConnection, "nothing waits")
        let requests = (0..<3).map { _ in Request() }
        let tickets = requests.map { state.wait($0) }
        #expect(state.wantsConnection)
        state.opening()
        #expect(state.wantsConnection, "one connecting for three waiting")
        state.opening()
        #expect(!state.wantsConnection, "at the pool's limit")
        state.openFailed()
        #expect(state.wantsConnection)
        // Two leave (timed out): one waits, one connection is connecting.
        state.leave(requests[0], ticket: tickets[0])
        state.leave(requests[2], ticket: tickets[2])
        #expect(state.waitingCount == 1 && !state.wantsConnection)
        state.opened()
        let next = state.nextWaiting()
        let none = state.nextWaiting()
        #expect(next === requests[1] && none == nil)
    }

    /// Connections that open or fail, answer, drop (busy or idle); requests that arrive and time out; time that
    /// passes. After every step the counts are the model's, no request waits while a connection
    /// idles, none waits unless a connection is on its way or the pool is full, and every request
    /// is sent, failed or timed out exactly once by the end.
    /// HTTP/2 (or an origin ALPN has not answered for yet): one connection at a time, however
    /// many requests wait, since one connection carries them all as streams; another only while
    /// none is connecting (the first is full, or going away).
    @Test func oneConnectionAtATimeWhenOneCarriesEveryRequest() {
        var state = PoolState<Connection, Request>(maxConnections: 4, idleTimeout: 100)
        state.opensOneAtATime = true
        let requests = (0..<3).map { _ in Request() }
        for request in requests { _ = state.wait(request) }
        #expect(state.wantsConnection)
        state.opening()
        #expect(!state.wantsConnection, "three waiting, one connecting: it will carry them all")
        state.opened()
        #expect(state.wantsConnection, "connected and requests still wait (it is full): another")
        state.opening()
        state.opensOneAtATime = false
        #expect(state.wantsConnection, "HTTP/1.1 after all: a connection for each waiting request")
    }

    @Test func itAgreesWithAModelOfConnectionsAndRequests() {
        enum Phase { case connecting, busy(Request), idle(since: UInt64) }
        let limit = 4
        var state = PoolState<Connection, Request>(maxConnections: limit, idleTimeout: 1_000)
        var connections: [(Connection, Phase)] = []
        var waiting: [(Request, Int)] = []
        var (submitted, sent, failed, timedOut) = (0, 0, 0, 0)
        var now: UInt64 = 0
        var random = SeededRandom(seed: 36, stream: .device)

        func index(of connection: Connection) -> Int { connections.firstIndex { $0.0 === connection }! }
        func take(_ request: Request) { waiting.removeAll { $0.0 === request } }
        func openIfNeeded() {
            while state.wantsConnection {
                state.opening()
                connections.append((Connection(), .connecting))
            }
        }
        func free(_ position: Int) {
            if let next = state.nextWaiting() {
                take(next)
                connections[position].1 = .busy(next)
            } else {
                connections[position].1 = .idle(since: now)
                state.becameIdle(connections[position].0, at: now)
            }
        }

        for step in 0..<100_000 {
            let roll = random.nextIndex(below: 100)
            let busy = connections.indices.filter { if case .busy = connections[$0].1 { true } else { false } }
            let opening = connections.indices.filter { if case .connecting = connections[$0].1 { true } else { false } }
            switch roll {
            case 0..<30:
                let request = Request()
                submitted += 1
                if let connection = state.takeIdle() {
                    connections[index(of: connection)].1 = .busy(request)
                } else {
                    waiting.append((request, state.wait(request, atFront: roll < 2)))
                    openIfNeeded()
                }
            case 30..<45 where !opening.isEmpty:
                let position = opening[random.nextIndex(below: opening.count)]
                if roll < 42 {
                    state.opened()
                    free(position)
                } else {
                    state.openFailed()
                    connections.remove(at: position)
                    if let request = state.nextWaiting() {
                        take(request)
                        failed += 1
                    }
                    openIfNeeded()
                }
            case 45..<75 where !busy.isEmpty:
                let position = busy[random.nextIndex(below: busy.count)]
                sent += 1
                if roll < 72 {
                    free(position)
                } else {
                    state.closed(connections[position].0)  // the server closed it after answering
                    connections.remove(at: position)
                    openIfNeeded()
                }
            case 75..<85 where !waiting.isEmpty:
                let (request, ticket) = waiting.remove(at: random.nextIndex(below: waiting.count))
                let left = state.leave(request, ticket: ticket)
                #expect(left, "step \(step)")
                timedOut += 1
            case 85..<88 where connections.contains(where: { if case .idle = $0.1 { true } else { false } }):
                // The server closes a kept-alive connection while it idles.
                let position = connections.firstIndex { if case .idle = $0.1 { true } else { false } }!
                state.closed(connections[position].0)
                connections.remove(at: position)
                openIfNeeded()
            default:
                now += UInt64(random.nextIndex(below: 400))
                for connection in state.expired(at: now) {
                    let position = index(of: connection)
                    guard case .idle(let since) = connections[position].1, now - since >= 1_000 else {
                        Issue.record("step \(step): expired a connection that was not idle for the timeout")
                        return
                    }
                    connections.remove(at: position)
                }
                openIfNeeded()
            }
            let idle = connections.compactMap { if case .idle(let since) = $0.1 { since } else { nil } }
            #expect(state.open == connections.count && state.open <= limit, "step \(step)")
            #expect(state.connecting == connections.count { if case .connecting = $0.1 { true } else { false } }, "step \(step)")
            #expect(state.waitingCount == waiting.count, "step \(step)")
            #expect(waiting.isEmpty || idle.isEmpty, "step \(step): a request waits while a connection idles")
            #expect(waiting.isEmpty || state.connecting > 0 || state.open == limit, "step \(step): a request waits for nothing")
            #expect(state.nextExpiry == idle.min().map { $0 + 1_000 }, "step \(step)")
        }
        let inFlight = connections.count { if case .busy = $0.1 { true } else { false } }
        #expect(submitted == sent + failed + timedOut + waiting.count + inFlight)
        #expect(sent > 10_000 && failed > 100 && timedOut > 1_000)
    }
}
