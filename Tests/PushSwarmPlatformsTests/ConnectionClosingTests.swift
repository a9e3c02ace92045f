import Foundation
import Testing
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmPlatforms
import PushSwarmSystem

/// A run's devices tell its transport when their apps' own connections close (issue 50): the
/// scenario's `network.connections: perDevice` reaches each device's lifecycle, and its process
/// deaths and (iOS) suspensions reach the transport as `closeConnections`, the device by device.
@Suite struct ConnectionClosingTests {
    static func scenario(_ connections: String) throws -> Scenario {
        try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array("""
            {"name": "closing", "seed": 11, "duration": "1d", "devices": 200,
             "network": {"connections": "\(connections)"}, "warmUp": {"enabled": false},
             "groups": [{"name": "ios", "platform": "flocktory", "os": "ios", "share": 0.5},
                        {"name": "android", "platform": "flocktory", "os": "android", "share": 0.5}],
             "behaviour": {"newInstallShare": 0, "tokenRotationsPerDay": 0}}
            """.utf8))
    }

    @Test func processDeathsAndIOSSuspensionsReachTheTransportPerDevice() async throws {
        for connections in ["perDevice", "perAddress"] {
            let scenario = try Self.scenario(connections)
            let thread = PartitionThread(name: "closing")
            let local = scenario.partitionCopy()
            let mocks = MockFleet(scenario: local)
            let devices = 0..<scenario.devices
            let transport = ClosingTransport(inner: SimulatedTransport(scenario: local, mocks: mocks, devices: devices))
            let setup = Run.PartitionSetup(executor: thread, transport: transport, mocks: mocks, devices: devices)
            let result = await Run(scenario: scenario, partitions: [setup], ownedThreads: [thread]).run()
            let fleet = Fleet(scenario: scenario)
            var byOS: [OperatingSystem: [ConnectionCloseReason: Int]] = [:]
            for (device, reason) in transport.closes { byOS[fleet.profile(at: device).os, default: [:]][reason, default: 0] += 1 }
            let sessions = (result.metrics.counters["sessions.coldStarts"] ?? 0) + (result.metrics.counters["sessions.resumes"] ?? 0)
            #expect(sessions > 200, "\(connections): a day of sessions (\(sessions))")
            if connections == "perAddress" {
                #expect(transport.closes.isEmpty, "an app without connections of its own closes none")
                continue
            }
            let ios = byOS[.ios] ?? [:]
            let android = byOS[.android] ?? [:]
            #expect((ios[.background] ?? 0) > 50, "iOS apps are suspended in the background: \(byOS)")
            #expect(android[.background] == nil, "Android leaves a background process running: \(byOS)")
            #expect((ios[.processDied] ?? 0) > 50 && (android[.processDied] ?? 0) > 50, "processes end on both: \(byOS)")
        }
    }
}

/// The simulated transport, recording which device's connections closed and why.
private final class ClosingTransport: ForwardingTransport {
    private(set) var closes: [(Int, ConnectionCloseReason)] = []

    override func closeConnections(of process: InstallProcess, reason: ConnectionCloseReason, at now: Instant) {
        // The app's: this scenario sends no push, so no notification service extension runs.
        #expect(process.role == .app)
        closes.append((process.device, reason))
    }
}
