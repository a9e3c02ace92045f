import Foundation
import PushSwarmMetrics
import PushSwarmTestSupport
import Testing

/// Whose connections a wall run's devices use (`network.connections`, issue 50), checked against
/// nginx's own count: its access log writes each request's `$connection` (the connection's serial
/// number), so the distinct numbers are the connections that carried requests.
@Suite(.serialized) struct ConnectionTests {
    private let cli = CommandLineTests()

    /// 200 SmartAppPush installs behind 2 addresses, 100 events a second for 3 s. Sharing their
    /// address's pool they go out on a few connections; each install on its own, nginx sees about
    /// one connection per install that sent. Either way PushSwarm's count of connections opened
    /// is nginx's exactly, and so is its count of requests.
    @Test(.enabled(if: which("nginx") != nil, "needs nginx (apt-get install nginx-light)"))
    func connectionsOpenedAreNginxsPerAddressAndPerDevice() async throws {
        var opened: [String: Int] = [:]
        for mode in ["perAddress", "perDevice"] {
            let (nginx, port, directory) = try cli.startNginx(
                location: "try_files /nothing @ok;", http: "log_format conn '$connection $connection_requests $remote_addr $status';",
                accessLog: "access.log conn"
            )
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = directory.appendingPathComponent("scenario.json").path
            try Data(#"""
                {"name": "connections", "seed": 5, "duration": "3s", "devices": 200,
                 "network": {"devicesPerSourceIP": 100, "connections": "\#(mode)"},
                 "groups": [{"name": "g", "platform": "smartapppush", "os": "android", "workload": {"model": "open", "rate": "100/s"}}],
                 "behaviour": {"newInstallShare": 0, "eventMix": {"screen_viewed": 1}, "tokenRotationsPerDay": 0}}
                """#.utf8).write(to: URL(fileURLWithPath: file))
            let out = directory.appendingPathComponent("run").path
            let run = try await cli.run(["run", file, "--clock", "wall", "--no-warm-up", "--target", "http://127.0.0.1:\(port)", "--out", out, "--quiet"])
            nginx.stop()
            #expect(run.status == 0, "\(mode): \(run.error)")
            let summary = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: out + "/summary.json"))))
            let operation = try #require(summary["operations"]?["smartapppush.events"], "\(mode): no events in \(summary)")
            let log = try String(contentsOf: directory.appendingPathComponent("access.log"), encoding: .utf8)
            let lines = log.split(separator: "\n")
            let connections = Set(lines.map { $0.split(separator: " ")[0] })
            #expect(Int(operation["count"]?.numberValue ?? -1) == lines.count, "\(mode): requests sent against nginx's log")
            #expect(Int(operation["connections"]?.numberValue ?? -1) == connections.count, "\(mode): connections opened against nginx's \(connections.count)")
            opened[mode] = connections.count
        }
        print("connections that carried requests, by nginx's log: \(opened)")
        let shared = opened["perAddress"] ?? 0
        let own = opened["perDevice"] ?? 0
        // 300 events on 200 installs: nearly every install sends, each on its own connection.
        #expect(own >= 150, "one connection per install that sent: \(own)")
        #expect(shared <= 20, "two addresses' pools, each about as many as are in flight at once: \(shared)")
    }
}
