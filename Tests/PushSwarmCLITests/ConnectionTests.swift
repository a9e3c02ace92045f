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

    /// An app's connections and TLS sessions live as its process does (issue 50), seen from nginx
    /// terminating TLS (a certificate made here) in front of the built-in mock as the service:
    /// 30 Flocktory installs, each behind its own address (so nginx's `$remote_addr` names the
    /// install), no session of their own. Two campaigns, at 1 s and 13 s; every install taps 1 s
    /// after each push: a cold start, 5 s in the foreground, the background; then the second.
    /// - iOS (10): suspended 5 s after leaving (12.5 s), which closes its connections but keeps
    ///   its process and TLS session: the second session goes out on new connections, each
    ///   handshake resumed (`$ssl_session_reused` "r"). Each push's delivery report comes from
    ///   the notification service extension, a process of its own: its first connection is a
    ///   full handshake, and 12 s later (within its 30 s) the second push finds it running and
    ///   its connection kept, the one connection both sessions share.
    /// - Android (10): the process keeps running and OkHttp keeps its connections 5 minutes: the
    ///   second session reuses one of the first's.
    /// - Android closed at 3 s in the background (10): the process died with its connections and
    ///   TLS session: the second session's first handshake is full.
    /// PushSwarm's connections opened are nginx's accepted ones (stub_status), and its full and
    /// resumed handshakes are nginx's.
    @Test(.enabled(if: which("nginx") != nil && which("openssl") != nil, "needs nginx (apt-get install nginx-light) and openssl"))
    func appsKeepConnectionsAndTLSSessionsAsTheirProcessesDo() async throws {
        let text = #"""
            {"name": "connection-lifecycle", "seed": 5, "duration": "20s", "devices": 30,
             "network": {"devicesPerSourceIP": 1, "connections": "perDevice"},
             "groups": [{"name": "ios", "platform": "flocktory", "os": "ios"}, {"name": "android", "platform": "flocktory", "os": "android"},
                        {"name": "killed", "platform": "flocktory", "os": "android", "behaviour": {"backgroundToClosed": {"constant": "3s"}}}],
             "behaviour": {"newInstallShare": 0, "tokenRotationsPerDay": 0, "permissionChangesPerDay": 0, "sessionsPerDay": {"constant": 0},
               "pushPermissionRate": {"android": 1, "ios": 1}, "unreachableShare": 0, "eventsPerSession": 1,
               "sessionLength": {"constant": "5s"}, "backgroundToClosed": {"constant": "10m"}},
             "campaigns": [
               {"name": "first", "platform": "flocktory", "at": "1s", "tapRate": 1, "timeToOpen": {"constant": "1s"}, "deliveryDelay": {"constant": "500ms"}},
               {"name": "second", "platform": "flocktory", "at": "13s", "tapRate": 1, "timeToOpen": {"constant": "1s"}, "deliveryDelay": {"constant": "500ms"}}]}
            """#
        let keys = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: keys, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: keys) }
        let (certificate, key) = try cli.selfSignedCertificate(in: keys)
        let mockPort = freePort()
        let proxy = cli.mockProxy(port: mockPort, temporary: keys)
        let (nginx, port, directory) = try cli.startNginx(
            location: proxy.location, http: "log_format conn '$connection $remote_addr $msec $ssl_session_reused $ssl_protocol';\n" + proxy.http,
            accessLog: "access.log conn", tls: (certificate, key), status: true
        )
        defer { try? FileManager.default.removeItem(at: directory) }
        defer { nginx.stop() }
        let file = directory.appendingPathComponent("scenario.json").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let mock = try Peer(CommandLineTests.binary.path, ["mock", file, "--listen", "127.0.0.1:\(mockPort)"], readyWhen: "PushSwarm mock services on")
        defer { mock.stop() }
        #expect(await mock.ready())
        let out = directory.appendingPathComponent("run").path
        let run = try await cli.run([
            "run", file, "--clock", "wall", "--no-warm-up", "--target", "https://localhost:\(port)", "--ca-file", certificate, "--out", out, "--quiet",
        ])
        #expect(run.status == 0, "\(run.error)")
        // nginx's count of connections accepted, less the one asking and the test's probe of its port.
        let status = try cli.shell("curl", ["-sk", "https://localhost:\(port)/nginx-status"])
        nginx.stop()
        let accepted = try #require(status.split(separator: "\n").dropFirst(2).first?.split(separator: " ").first.flatMap { Int($0) }, "\(status)") - 2

        // Which install is which: the fleet the run drew from the scenario.
        let scenario = try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array(text.utf8))
        let fleet = Fleet(scenario: scenario)
        let groupByAddress = Dictionary(uniqueKeysWithValues: (0..<30).map { ("127.0.0.\($0 + 1)", scenario.groups[fleet.profile(at: $0).groupIndex].name) })
        #expect(Set(groupByAddress.values).count == 3, "every group in the fleet")

        // Each install's connections in its first session and in its second (the first's requests
        // go out from about 1.5 s to 7.5 s, the second's from 13.5 s: split between), with
        // whether each connection's handshake was resumed.
        let log = try String(contentsOf: directory.appendingPathComponent("access.log"), encoding: .utf8)
        let lines = log.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(lines.allSatisfy { $0.count == 5 && $0[4].hasPrefix("TLSv1") }, "every request over TLS")
        let start = try #require(lines.compactMap { Double($0[2]) }.min())
        var sessions: [String: (first: [String], second: [String])] = [:]
        var resumed: [String: Bool] = [:]
        for line in lines {
            guard let time = Double(line[2]) else { continue }
            resumed[line[0]] = line[3] == "r"
            if time - start < 9 {
                if !(sessions[line[1]]?.first.contains(line[0]) ?? false) { sessions[line[1], default: ([], [])].first.append(line[0]) }
            } else if !(sessions[line[1]]?.second.contains(line[0]) ?? false) {
                sessions[line[1], default: ([], [])].second.append(line[0])
            }
        }
        #expect(sessions.count == 30, "every install sent: \(sessions.keys.sorted())")
        for (address, (first, second)) in sessions.sorted(by: { $0.key < $1.key }) {
            #expect(!first.isEmpty && !second.isEmpty, "\(address) sent in both sessions")
            let new = second.filter { !first.contains($0) }
            switch groupByAddress[address] {
            case "ios"?:
                let kept = second.filter { first.contains($0) }
                #expect(kept.count == 1, "iOS \(address): back from suspension on new connections, but for the extension's: \(first) then \(second)")
                #expect(kept.allSatisfy { resumed[$0] == false }, "iOS \(address): the extension's process had no TLS session to resume")
                #expect(!new.isEmpty && new.allSatisfy { resumed[$0] == true }, "iOS \(address): its process kept its TLS session: \(new.map { resumed[$0] ?? false })")
            case "android"?:
                #expect(new.count < second.count, "Android \(address): back within OkHttp's 5 minutes on its own connection")
            case "killed"?:
                #expect(new == second, "a killed app \(address) comes back on new connections")
                #expect(second.first.map { resumed[$0] == false } == true, "a killed app's first handshake is full: \(address)")
            default:
                Issue.record("a request from \(address), no install of the run")
            }
        }

        let summary = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: out + "/summary.json"))))
        let counters = summary["counters"]
        let count = { (name: String) in Int(counters?[name]?.numberValue ?? 0) }
        #expect(count("connections.opened") == accepted, "connections opened: PushSwarm \(count("connections.opened")), nginx \(accepted)")
        let carried = Set(lines.map { $0[0] })
        // Handshakes: nginx logs those of connections that carried a request; any other PushSwarm
        // opened (for a request that then went out on one freed first) is the difference.
        let unused = accepted - carried.count
        let nginxResumed = carried.filter { resumed[$0] == true }.count
        #expect(count("connections.handshakes.resumed") >= nginxResumed && count("connections.handshakes.resumed") <= nginxResumed + unused,
                "resumed handshakes: PushSwarm \(count("connections.handshakes.resumed")), nginx \(nginxResumed) (+\(unused) unlogged)")
        #expect(count("connections.handshakes.full") + count("connections.handshakes.resumed") == accepted)
        #expect(count("connections.closed.background") > 0 && count("connections.closed.processDied") > 0)
        print("connections: \(accepted) accepted by nginx, \(carried.count) carried requests, \(nginxResumed) resumed; PushSwarm: \(count("connections.opened")) opened, \(count("connections.handshakes.full")) full, \(count("connections.handshakes.resumed")) resumed")
    }

    /// The edge in simulated time (issue 50): 5,000 installs tap a campaign's push within
    /// seconds, each a cold start and a full TLS handshake, at an edge that does 200 a second.
    /// New connections never open faster than that, openings that would wait past OkHttp's 10 s
    /// connect timeout are counted as timed out, and the story names the wave and the campaign.
    /// With an edge of a million a second, the same wave opens faster and nothing times out.
    @Test func anEdgeSlowerThanACampaignsWaveTimesOutHandshakesAndTheStorySaysSo() async throws {
        let directory = NSTemporaryDirectory() + "pushswarm-edge-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fixture = try String(contentsOfFile: CommandLineTests.root.path + "/Tests/Fixtures/edge-handshake-wave.json", encoding: .utf8)
        let unlimited = fixture.replacingOccurrences(of: #""handshakesPerSecond": 200"#, with: #""handshakesPerSecond": 1000000"#)
        #expect(unlimited != fixture)
        try unlimited.write(toFile: directory + "/unlimited.json", atomically: true, encoding: .utf8)
        var peaks: [String: Double] = [:]
        for (name, file) in [("limited", CommandLineTests.root.path + "/Tests/Fixtures/edge-handshake-wave.json"), ("unlimited", directory + "/unlimited.json")] {
            let out = directory + "/" + name
            let run = try await cli.run(["run", file, "--out", out, "--quiet"])
            #expect(run.status == 0, "\(name): \(run.error)")
            let summary = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: out + "/summary.json"))))
            let timedOut = summary["counters"]?["connections.handshakes.timedOut"]?.numberValue ?? 0
            let full = summary["counters"]?["connections.handshakes.full"]?.numberValue ?? 0
            let wave = try #require(summary["story"]?["connectionWave"], "\(name): no wave in the story")
            peaks[name] = wave["peakPerSecond"]?.numberValue ?? 0
            let sentences = summary["story"]?["sentences"]?.arrayValue?.compactMap(\.stringValue) ?? []
            let told = try #require(sentences.first { $0.hasPrefix("The biggest wave of new connections") }, "\(name): \(sentences)")
            #expect(told.contains("after campaign evening-promo launched"), "\(told)")
            #expect(full > 1_000, "\(name): full handshakes \(full)")
            if name == "limited" {
                #expect(timedOut > 1_000, "handshakes past the edge's 200/s timed out: \(timedOut)")
                #expect(told.contains("openings timed out waiting for the edge's handshake"), "\(told)")
                #expect(peaks[name]! <= 201, "new connections at most the edge's 200 a second: \(peaks[name]!)")
            } else {
                #expect(timedOut == 0, "no edge limit, no timeout: \(timedOut)")
            }
        }
        #expect(peaks["unlimited"]! > 400, "the wave itself is faster than the edge: \(peaks)")
    }

    /// The edge's connection cap in simulated time (`mock.edge.maxConnections`): the same wave at
    /// an edge that holds 1,000 connections. OkHttp keeps each app's connection 5 idle minutes, so
    /// the first 1,000 apps hold the edge's slots and the rest are refused: counted, their requests
    /// transport errors the SDK retries, the peak of open connections never above the cap, the
    /// story and the Connections line say so, every request is accounted for, and the TLS
    /// handshakes' time (rtt 50 ms: one round trip for TLS 1.3) is measured apart from TCP's.
    @Test func anEdgeAtItsConnectionCapRefusesTheRestAndCountsThem() async throws {
        let directory = NSTemporaryDirectory() + "pushswarm-edge-cap-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fixture = try String(contentsOfFile: CommandLineTests.root.path + "/Tests/Fixtures/edge-handshake-wave.json", encoding: .utf8)
        let capped = fixture.replacingOccurrences(of: #""handshakesPerSecond": 200"#, with: #""handshakesPerSecond": 1000000, "maxConnections": 1000"#)
        #expect(capped != fixture)
        try capped.write(toFile: directory + "/capped.json", atomically: true, encoding: .utf8)
        let run = try await cli.run(["run", directory + "/capped.json", "--out", directory + "/out"])
        #expect(run.status == 0, "\(run.error)")
        let summary = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/out/summary.json"))))
        let connections = try #require(summary["connections"], "summary.json's connections")
        let refused = connections["refused"]?.numberValue ?? 0
        #expect(connections["opened"]?.numberValue == 1_000, "the cap's worth opened: \(connections)")
        #expect(connections["openPeak"]?.numberValue == 1_000, "never more than the cap: \(connections)")
        #expect(refused > 1_000, "the rest refused: \(connections)")
        #expect(summary["counters"]?["connections.refused"]?.numberValue == refused)
        let sentences = summary["story"]?["sentences"]?.arrayValue?.compactMap(\.stringValue) ?? []
        #expect(sentences.contains { $0.contains("openings were refused by the edge") }, "\(sentences)")
        #expect(run.output.contains("Connections 1,000 opened (TLS handshakes: 1,000 full, 0 resumed) · \(TerminalReport.group(UInt64(refused))) refused · 0 closed · 1,000 open at the end (peak 1,000)"), "\(run.output)")
        // Each refusal is its request's transport error: every request sent is accounted for.
        let requests = try #require(summary["requests"])
        let sent = requests["sent"]?.numberValue ?? 0
        let ended = (requests["byStatus"]?.objectValue?.members.reduce(0) { $0 + ($1.value.numberValue ?? 0) } ?? 0)
            + (requests["transportErrors"]?.numberValue ?? 0) + (requests["timeouts"]?.numberValue ?? 0)
        #expect(sent > 10_000 && sent == ended + (requests["inFlightAtEnd"]?.numberValue ?? -1), "\(requests)")
        #expect(requests["transportErrorsByReason"]?["connectionRefused"]?.numberValue == refused, "each refusal is one request's transport error")
        let operations = try #require(summary["operations"]?.objectValue)
        var handshakes = 0.0
        for (_, operation) in operations.members {
            handshakes += operation["connections"]?.numberValue ?? 0
            if operation["connections"]?.numberValue ?? 0 > 0 {
                #expect(operation["connectMs"]?["p50"]?.numberValue == 50, "TCP: one round trip: \(operation)")
                #expect(operation["tlsHandshakeMs"]?["p50"]?.numberValue == 50, "TLS 1.3: one more: \(operation)")
            }
        }
        #expect(handshakes == 1_000)
    }
}
