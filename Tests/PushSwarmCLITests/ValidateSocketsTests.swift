import Foundation
@testable import PushSwarmCLI
import PushSwarmCore
import PushSwarmNet
import PushSwarmPlatforms
import Testing

/// `validate` says what a wall run of the scenario would hold open at most against the process's
/// file limit (issue 50): with connections per install, a fleet past the limit is told how many
/// processes share it out, as the memory estimate is told its ulimit.
@Suite struct ValidateSocketsTests {
    static func scenario(devices: Int, connections: String, perAddress: Int = 100) throws -> Scenario {
        try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array("""
            {"name": "sockets", "seed": 1, "duration": "1m", "devices": \(devices), "clock": "wall",
             "network": {"connections": "\(connections)", "devicesPerSourceIP": \(perAddress)},
             "groups": [{"name": "g", "platform": "smartapppush", "os": "ios"}]}
            """.utf8))
    }

    /// 50,000 installs with their own connections, the mock in the process: 2 files each, 100,256
    /// with the reserve, against 20,000: six processes of 19,744 files each hold them.
    @Test func aFleetOverTheFileLimitIsToldHowManyProcessesHoldIt() throws {
        let scenario = try Self.scenario(devices: 50_000, connections: "perDevice")
        var plan = WallRun.plan(
            devices: 50_000, devicesPerSource: 1, inProcessMock: true, maxConnectionsPerSource: 1, fileLimit: 20_000
        )
        plan.perInstall = true
        #expect(plan == WallRun.plan(for: scenario, devices: 50_000, inProcessMock: true).with(fileLimit: 20_000))
        // A run's own notice: sharing NAT addresses saves installs with their own connections none.
        #expect(plan.explanation.contains("split the run over processes (--workers N") && !plan.explanation.contains("share NAT addresses"), "\(plan.explanation)")
        let text = ValidateCommand.sockets(scenario, plan: plan)
        #expect(text.contains("at most 50000 HTTP connections, one per install (network.connections: perDevice)"), "\(text)")
        #expect(text.contains("100256 files of the 20000 it may open (ulimit -n): OVER"), "\(text)")
        #expect(text.contains("--workers 6 on a machine with the cores, or --shard I/6"), "\(text)")
    }

    /// The same fleet sharing 50 addresses' pools (1,000 installs behind each, 64 connections an
    /// address at most): 3,200 connections, 6,656 files, fits.
    @Test func theSameFleetBehindSharedPoolsFits() throws {
        let scenario = try Self.scenario(devices: 50_000, connections: "perAddress", perAddress: 1_000)
        let plan = WallRun.plan(for: scenario, devices: 50_000, inProcessMock: true).with(fileLimit: 20_000)
        #expect(plan.clientConnections == 50 * 64)
        let text = ValidateCommand.sockets(scenario, plan: plan)
        #expect(text.hasSuffix("6656 files of the 20000 it may open (ulimit -n): fits"), "\(text)")
        #expect(text.contains("the address pools' (network.connections: perAddress)"), "\(text)")
        #expect(plan.explanation.contains("share NAT addresses (network.devicesPerSourceIP)"), "\(plan.explanation)")
    }
}

extension WallRun.SocketPlan {
    /// The plan against another file limit (a machine other than this one).
    func with(fileLimit: Int) -> WallRun.SocketPlan {
        var plan = self
        plan.fileLimit = fileLimit
        return plan
    }
}
