import Foundation
import Testing
import PushSwarmCore
import PushSwarmMetrics
@testable import PushSwarmNet

/// A mock's WebSocket session lives on the server's event loops, which the server shares (with a
/// run's clients, with other servers) and which outlive it: a session must never reach a server
/// that is gone. CI's test run once crashed reading one ("Attempted to read an unowned reference
/// but object … was already destroyed").
@Suite(.timeLimit(.minutes(1))) struct MockSessionLifetimeTests {
    /// A server released without `stop()` while a device holds a session open: the session's
    /// next message finds no server, and the session closes with 1001 (going away, RFC 6455
    /// section 7.4.1) instead of answering from, or crashing on, the released server.
    @Test func aSessionWhoseServerIsGoneClosesGoingAway() async throws {
        let mocks = MockFleet(platforms: ["sockets": SocketEchoConfiguration()], seed: 1)
        var server: MockServer? = MockServer(mocks: mocks, group: testGroup, clock: WallClock())
        try server?.start(at: SocketAddress(ip: .loopback, port: 0))
        let http = try #require(server?.server)
        defer { http.stop() }
        let recorder = SocketRecorder()
        WebSocketClient.connect(to: TargetURL("ws://127.0.0.1:\(http.port)/sockets/session")!, on: testGroup.loops[0], delegate: recorder)
        let socket = try await recorder.opened()
        socket.loop.execute { socket.send(text: "one") }
        #expect(await recorder.texts(count: 1) == ["echo:one"], "the session answers while its server is there")
        #expect(server?.openSessionCount == 1)
        // The server's loops have left its handler (which holds it while it answers) once they
        // ran what comes after it.
        for loop in testGroup.loops { _ = await loop.pendingTimers() }
        weak let released = server
        server = nil
        #expect(released == nil, "nothing else holds the server")
        socket.loop.execute { socket.send(text: "two") }
        let close = await recorder.closed()
        #expect(close.code == 1001)
        #expect(close.error == nil)
        #expect(await recorder.texts(count: 1) == ["echo:one"], "nothing answered the second message")
    }
}

/// A platform whose service takes WebSocket sessions at `/session` and echoes each message.
private struct SocketEchoConfiguration: PlatformConfiguration {
    var mockBehaviour: MockBehaviour = {
        var behaviour = MockBehaviour()
        behaviour.latency = .constant(0)
        return behaviour
    }()
    var encoded: JSONObject { [:] }
    func makeMock() -> any MockService { SocketEchoService() }
    func partitionCopy() -> any PlatformConfiguration { self }
    func clientProfile(_ options: JSONReader?, os: OperatingSystem) throws -> any ClientProfile {
        throw ScenarioError(path: "$", message: "the socket echo platform has no devices")
    }
}

private struct SocketEchoService: MockService {
    func serves(path: String) -> Bool { false }
    mutating func handle(_ request: Request, from source: SourceAddress, at now: Instant) -> MockReply {
        MockReply(response: Response(status: 404), operation: "none")
    }
    mutating func knowDevice(_ device: KnownDevice) {}
    mutating func launchCampaign(_ campaign: Campaign, at now: Instant, draws: CampaignDraws) -> [PushMessage] { [] }
    func servesSocket(path: String) -> Bool { path == "/session" }
    mutating func socketOpened(session: UInt64, path: String, from source: SourceAddress, at now: Instant) -> SocketReply {
        SocketReply(operation: "open")
    }
    mutating func socketMessage(session: UInt64, text: String, from source: SourceAddress, at now: Instant) -> SocketReply {
        SocketReply(messages: ["echo:" + text], operation: "echo")
    }
}
