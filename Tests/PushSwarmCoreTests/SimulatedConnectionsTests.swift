import Testing
@testable import PushSwarmCore

/// Each install's own connections in simulated time (issue 50), by wall time's rules: reuse,
/// the stack's cap, idle timeouts, and closes with the app.
@Suite struct SimulatedConnectionsTests {
    let t0 = Instant(microseconds: 1_000_000_000)

    /// Takes a connection for a request at `now` that holds it `duration` once it starts; opening
    /// one costs `connect`.
    static func take(
        _ connections: inout SimulatedConnections, device: Int, at now: Instant, for duration: TimeSpan, connect: TimeSpan = .zero,
        token: UInt64, into outcome: inout SimulatedConnections.Outcome
    ) -> (start: Instant, opened: Bool) {
        guard case .success(let acquired) = connections.acquire(InstallProcess(device: device), at: now, open: { _ in .connected(time: connect, handshakeTime: .zero, tls: nil) }, into: &outcome) else {
            Issue.record("timed out")
            return (now, false)
        }
        connections.release(InstallProcess(device: device), acquired, until: acquired.start + duration, token: token, into: &outcome)
        return (acquired.start, acquired.connectTime != nil)
    }

    static func opened(_ outcome: SimulatedConnections.Outcome) -> Int {
        outcome.events.filter { $0.event == .opened(tls: nil) }.count
    }

    /// A stack of 2, idle 60 s: a request opens a connection (its opening delays it), the next
    /// after its answer reuses it, two more at once open a second and wait for the first to free.
    @Test func aRequestReusesAFreeConnectionOpensUpToTheCapThenWaits() {
        let stack = ConnectionStack(maxConnectionsPerHost: 2, idleTimeout: .seconds(60))
        var connections = SimulatedConnections(stacks: [stack], firstDevice: 5)
        var outcome = SimulatedConnections.Outcome()
        let first = Self.take(&connections, device: 5, at: t0, for: .milliseconds(40), connect: .milliseconds(30), token: 1, into: &outcome)
        #expect(first == (t0 + .milliseconds(30), true), "it goes out once its connection is open")
        #expect(outcome.events.map(\.at) == [t0 + .milliseconds(30)], "opened when connected")
        #expect(outcome.sweep?.token == 1 && outcome.sweep?.at == t0 + .milliseconds(70) + .seconds(60), "one sweep, at the first expiry")
        outcome = .init()
        #expect(Self.take(&connections, device: 5, at: t0 + .seconds(1), for: .milliseconds(40), token: 2, into: &outcome) == (t0 + .seconds(1), false))
        #expect(outcome.sweep == nil, "its sweep is armed already")
        let busy = t0 + .seconds(2)
        #expect(Self.take(&connections, device: 5, at: busy, for: .milliseconds(100), token: 3, into: &outcome) == (busy, false))
        #expect(Self.take(&connections, device: 5, at: busy, for: .milliseconds(100), token: 4, into: &outcome) == (busy, true))
        let third = Self.take(&connections, device: 5, at: busy, for: .milliseconds(100), token: 5, into: &outcome)
        #expect(third == (busy + .milliseconds(100), false), "both busy: it waits for the first to free")
        #expect(Self.opened(outcome) == 1)
    }

    /// Idle for the stack's timeout, a connection closes at its expiry (the sweep), and the next
    /// request opens a new one; the app's process dying closes an idle one now and a busy one
    /// when its answer is in.
    @Test func idleConnectionsCloseAtTheirTimeoutAndTheAppsCloseAtItsDeath() {
        var connections = SimulatedConnections(stacks: [.urlSession], firstDevice: 0)
        var outcome = SimulatedConnections.Outcome()
        _ = Self.take(&connections, device: 0, at: t0, for: .milliseconds(50), token: 1, into: &outcome)
        let expiry = t0 + .milliseconds(50) + .seconds(60)
        outcome = .init()
        connections.sweep(InstallProcess(device: 0), token: 1, at: expiry, next: 2, into: &outcome)
        #expect(outcome.events.map(\.at) == [expiry] && outcome.events.map(\.event) == [.closed(.idle)])
        #expect(outcome.sweep == nil, "nothing open, no sweep")
        outcome = .init()
        #expect(Self.take(&connections, device: 0, at: expiry + .seconds(1), for: .milliseconds(50), token: 3, into: &outcome).opened)

        // Two at once: one on the free connection (50 ms), one on a new one (200 ms).
        let later = expiry + .seconds(10)
        #expect(!Self.take(&connections, device: 0, at: later, for: .milliseconds(50), token: 4, into: &outcome).opened)
        #expect(Self.take(&connections, device: 0, at: later, for: .milliseconds(200), token: 4, into: &outcome).opened)
        outcome = .init()
        connections.close(InstallProcess(device: 0), reason: .processDied, at: later + .milliseconds(100), into: &outcome)
        #expect(outcome.events.map(\.event) == [.closed(.processDied), .closed(.processDied)])
        #expect(outcome.events.map(\.at).sorted() == [later + .milliseconds(100), later + .milliseconds(200)], "the idle one now, the busy one after its answer")
        outcome = .init()
        connections.sweep(InstallProcess(device: 0), token: 3, at: later + .seconds(60), next: 5, into: &outcome)
        #expect(outcome.events.isEmpty, "a closed install's old sweep finds nothing")
    }

    /// An opening that timed out leaves no connection, and says when it gave up.
    @Test func anOpeningThatTimesOutLeavesNoConnection() {
        var connections = SimulatedConnections(stacks: [.okHttp], firstDevice: 0)
        var outcome = SimulatedConnections.Outcome()
        let result = connections.acquire(InstallProcess(device: 0), at: t0, open: { _ in .timedOut(after: .seconds(10)) }, into: &outcome)
        guard case .failure(let timedOut) = result else {
            Issue.record("expected a timeout")
            return
        }
        #expect(timedOut.after == .seconds(10))
        #expect(outcome.events.map(\.event) == [.handshakeTimedOut] && outcome.events.map(\.at) == [t0 + .seconds(10)])
        #expect(Self.take(&connections, device: 0, at: t0 + .seconds(11), for: .milliseconds(10), token: 1, into: &outcome).opened, "the next request opens one")
    }

    /// An opening the edge refused (`mock.edge.maxConnections`) leaves no connection, says so
    /// after the reset's round trip, and is told apart from a timeout.
    @Test func anOpeningTheEdgeRefusedLeavesNoConnection() {
        var connections = SimulatedConnections(stacks: [.urlSession], firstDevice: 0)
        var outcome = SimulatedConnections.Outcome()
        let result = connections.acquire(InstallProcess(device: 0), at: t0, open: { _ in .refused(after: .milliseconds(50)) }, into: &outcome)
        guard case .failure(let failed) = result else {
            Issue.record("expected a refusal")
            return
        }
        #expect(failed.refused && failed.after == .milliseconds(50))
        #expect(outcome.events.map(\.event) == [.refused] && outcome.events.map(\.at) == [t0 + .milliseconds(50)] && outcome.events.map(\.device) == [0])
        #expect(Self.take(&connections, device: 0, at: t0 + .seconds(1), for: .milliseconds(10), token: 1, into: &outcome).opened, "the next request opens one")
    }
}
