import Foundation
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmPlatforms
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

    /// An app's connections live as its process does (issue 50), seen from nginx in front of the
    /// built-in mock as the service: 20 Flocktory installs, each behind its own address (so
    /// nginx's `$remote_addr` names the install), half iOS and half Android, no session of their
    /// own. Two campaigns, at 1 s and 13 s, every install taps 1 s after the push: a cold start,
    /// 5 s in the foreground, the background; then the second push and a resume. Between the two,
    /// iOS suspends each app 5 s after it left (12.5 s), which closes its connections: every iOS
    /// install's second session goes out on connections nginx had not seen from it. An Android
    /// app's process keeps running in the background and OkHttp keeps its connections 5 minutes:
    /// every Android install's second session reuses one. PushSwarm's connections opened are
    /// nginx's, and its closes say why.
    @Test(.enabled(if: which("nginx") != nil, "needs nginx (apt-get install nginx-light)"))
    func anIOSAppBackFromSuspensionOpensNewConnectionsAndAnAndroidAppReusesItsOwn() async throws {
        let text = #"""
            {"name": "connection-lifecycle", "seed": 5, "duration": "20s", "devices": 20,
             "network": {"devicesPerSourceIP": 1, "connections": "perDevice"},
             "groups": [{"name": "ios", "platform": "flocktory", "os": "ios"}, {"name": "android", "platform": "flocktory", "os": "android"}],
             "behaviour": {"newInstallShare": 0, "tokenRotationsPerDay": 0, "permissionChangesPerDay": 0, "sessionsPerDay": {"constant": 0},
               "pushPermissionRate": {"android": 1, "ios": 1}, "unreachableShare": 0, "eventsPerSession": 1,
               "sessionLength": {"constant": "5s"}, "backgroundToClosed": {"constant": "10m"}},
             "campaigns": [
               {"name": "first", "platform": "flocktory", "at": "1s", "tapRate": 1, "timeToOpen": {"constant": "1s"}, "deliveryDelay": {"constant": "500ms"}},
               {"name": "second", "platform": "flocktory", "at": "13s", "tapRate": 1, "timeToOpen": {"constant": "1s"}, "deliveryDelay": {"constant": "500ms"}}]}
            """#
        let mockPort = freePort()
        let (nginx, port, directory) = try cli.startNginx(
            location: #"proxy_pass http://mock; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host $http_host;"#,
            http: """
                log_format conn '$connection $remote_addr $msec';
                upstream mock { server 127.0.0.1:\(mockPort); keepalive 16; }
                proxy_temp_path \(NSTemporaryDirectory()); fastcgi_temp_path \(NSTemporaryDirectory());
                uwsgi_temp_path \(NSTemporaryDirectory()); scgi_temp_path \(NSTemporaryDirectory());
                """,
            accessLog: "access.log conn"
        )
        defer { try? FileManager.default.removeItem(at: directory) }
        defer { nginx.stop() }
        let file = directory.appendingPathComponent("scenario.json").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let mock = try Peer(CommandLineTests.binary.path, ["mock", file, "--listen", "127.0.0.1:\(mockPort)"])
        defer { mock.stop() }
        #expect(waitForPort(mockPort, timeout: 30))
        let out = directory.appendingPathComponent("run").path
        let run = try await cli.run(["run", file, "--clock", "wall", "--no-warm-up", "--target", "http://127.0.0.1:\(port)", "--out", out, "--quiet"])
        nginx.stop()
        #expect(run.status == 0, "\(run.error)")

        // Which install is which OS: the fleet the run drew from the scenario.
        let scenario = try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array(text.utf8))
        let fleet = Fleet(scenario: scenario)
        let osByAddress = Dictionary(uniqueKeysWithValues: (0..<20).map { ("127.0.0.\($0 + 1)", fleet.profile(at: $0).os) })
        #expect(Set(osByAddress.values).count == 2, "both OSes in the fleet")

        // Each install's connections in its first session and in its second. The first session's
        // requests go out from about 1.5 s to 7.5 s, the second's from 13.5 s: split between.
        let log = try String(contentsOf: directory.appendingPathComponent("access.log"), encoding: .utf8)
        let lines = log.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        let start = try #require(lines.compactMap { Double($0[2]) }.min())
        var sessions: [String: (first: Set<String>, second: Set<String>)] = [:]
        for line in lines {
            guard let time = Double(line[2]) else { continue }
            if time - start < 9 { sessions[line[1], default: ([], [])].first.insert(line[0]) } else { sessions[line[1], default: ([], [])].second.insert(line[0]) }
        }
        #expect(sessions.count == 20, "every install sent in both sessions: \(sessions.keys.sorted())")
        for (address, (first, second)) in sessions.sorted(by: { $0.key < $1.key }) {
            #expect(!first.isEmpty && !second.isEmpty, "\(address) sent in both sessions")
            switch osByAddress[address] {
            case .ios?: #expect(first.isDisjoint(with: second), "iOS \(address): back from suspension on new connections, not \(first.intersection(second))")
            case .android?: #expect(!first.isDisjoint(with: second), "Android \(address): back within OkHttp's 5 minutes on its own connection: \(first) then \(second)")
            case nil: Issue.record("a request from \(address), no install of the run")
            }
        }

        let summary = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: out + "/summary.json"))))
        let operations = summary["operations"]?.objectValue?.members.map(\.value) ?? []
        let carried = operations.reduce(0) { $0 + Int($1["connections"]?.numberValue ?? 0) }
        let connections = Set(lines.map { $0[0] })
        #expect(carried == connections.count, "connections that carried requests: PushSwarm \(carried), nginx \(connections.count)")
        let counters = summary["counters"]
        let opened = Int(counters?["connections.opened"]?.numberValue ?? -1)
        #expect(opened >= carried, "opened \(opened), of which carried requests \(carried)")
        let iosFirst = sessions.filter { osByAddress[$0.key] == .ios }.reduce(0) { $0 + $1.value.first.count }
        #expect(Int(counters?["connections.closed.background"]?.numberValue ?? 0) >= iosFirst, "each iOS connection of the first session closed at suspension")
        #expect(counters?["connections.closed.processDied"] == nil, "no app was closed (10 minutes to close)")
    }
}
