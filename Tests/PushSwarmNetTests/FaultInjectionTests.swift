import Foundation
import Testing
import PushSwarmCore
import PushSwarmMetrics
@testable import PushSwarmNet

/// The mock's injected faults on real sockets: each reaches PushSwarm's HTTP client as a real
/// failing service's would, and is counted under its own reason.
@Suite struct FaultInjectionTests {
    /// One platform whose service answers 200 with a 2,000-byte body, with `faults` by path.
    func server(_ faults: [FaultRule]) throws -> MockServer {
        var behaviour = MockBehaviour()
        behaviour.latency = .constant(0)
        behaviour.faults = faults
        let mocks = MockFleet(platforms: ["echo": EchoConfiguration(mockBehaviour: behaviour)], seed: 1)
        let server = MockServer(mocks: mocks, group: testGroup, clock: WallClock())
        try server.start(at: SocketAddress(ip: .loopback, port: 0))
        return server
    }

    func get(_ server: MockServer, _ path: String, timeout: UInt64 = 5_000_000_000) async -> HTTPResult {
        await HTTPClient(group: testGroup).send(HTTPClientRequest(
            method: "GET", url: TargetURL("http://127.0.0.1:\(server.port)\(path)")!, timeoutNanoseconds: timeout
        ))
    }

    @Test func eachFaultReachesTheClientUnderItsOwnReason() async throws {
        let always = FaultRule.When.rate(1)
        let server = try server([
            FaultRule(kind: .reset, when: always, paths: ["/reset"]),
            FaultRule(kind: .truncated, when: always, paths: ["/truncated"]),
            FaultRule(kind: .malformed, when: always, paths: ["/malformed"]),
            FaultRule(kind: .serverError(status: 502), when: always, paths: ["/502"]),
            FaultRule(kind: .slowBody(bytesPerSecond: 100), when: always, paths: ["/slow"]),
        ])
        defer { server.stop() }
        #expect(await get(server, "/fine").response?.status == 200)
        #expect(await get(server, "/reset").error?.reason == .connectionReset)
        #expect(await get(server, "/truncated").error?.reason == .closedBeforeResponse)
        #expect(await get(server, "/malformed").error?.reason == .malformedResponse)
        #expect(await get(server, "/502").response?.status == 502)
        // 2,000 bytes at 100 bytes/s cannot arrive within a 1 s timeout.
        let slow = await get(server, "/slow", timeout: 1_000_000_000)
        if case .timeout = slow {} else { Issue.record("expected a timeout, got \(slow)") }
        // The server is still serving after all of them.
        #expect(await get(server, "/fine").response?.status == 200)
    }

    @Test func aPeriodicFaultStrikesOnlyInItsWindow() {
        // A stall of 1 s every 10 s, starting 2 s into each period.
        let stall = FaultRule(kind: .stall, when: .periodic(period: .seconds(10), length: .seconds(1), offset: .seconds(2)))
        #expect(stall.windowEnd(containing: .start + .seconds(1)) == nil)
        #expect(stall.windowEnd(containing: .start + .milliseconds(2_400)) == .start + .seconds(3))
        #expect(stall.windowEnd(containing: .start + .seconds(3)) == nil)
        #expect(stall.windowEnd(containing: .start + .milliseconds(42_999)) == .start + .seconds(43))
        // In the mock, an answer during the window waits for its end; the work is done at once.
        var behaviour = MockBehaviour()
        behaviour.latency = .constant(0.005)
        behaviour.faults = [stall]
        var host = MockHost(service: EchoService(), behaviour: behaviour, seed: 1)
        var random = SeededRandom(seed: 1, stream: .mock)
        #expect(host.exchange(Request(method: "GET", path: "/"), from: SourceAddress(index: 0), at: .start + .milliseconds(2_250), random: &random).latency == .milliseconds(755))
        #expect(host.exchange(Request(method: "GET", path: "/"), from: SourceAddress(index: 0), at: .start + .seconds(5), random: &random).latency == .milliseconds(5))
    }
}

/// Answers 200 with a 2,000-byte body to everything.
private struct EchoService: MockService {
    func serves(path: String) -> Bool { true }
    mutating func handle(_ request: Request, from source: SourceAddress, at now: Instant) -> MockReply {
        MockReply(response: Response(status: 200, body: Array(repeating: UInt8(ascii: "x"), count: 2_000)), operation: "echo")
    }
    mutating func knowDevice(_ device: KnownDevice) {}
    mutating func launchCampaign(_ campaign: Campaign, at now: Instant, draws: CampaignDraws) -> [PushMessage] { [] }
}

/// The one-service platform the fault tests serve (devices never run against it).
struct EchoConfiguration: PlatformConfiguration {
    var mockBehaviour: MockBehaviour
    var encoded: JSONObject { [:] }
    func makeMock() -> any MockService { EchoService() }
    func partitionCopy() -> any PlatformConfiguration { EchoConfiguration(mockBehaviour: mockBehaviour.partitionCopy()) }
    func clientProfile(_ options: JSONReader?, os: OperatingSystem) throws -> any ClientProfile {
        throw ScenarioError(path: "$", message: "the echo platform has no devices")
    }
}
