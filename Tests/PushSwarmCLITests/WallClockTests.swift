import Foundation
import PushSwarmMetrics
import PushSwarmTestSupport
import Testing

/// Wall-clock runs and `pushswarm mock`, through the built binary, with real peers (curl,
/// Python's websockets) where a user would use them.
@Suite(.serialized) struct WallClockTests {
    private let cli = CommandLineTests()

    private func summary(_ directory: String) throws -> JSONValue {
        let data = try Data(contentsOf: URL(fileURLWithPath: directory).appendingPathComponent("summary.json"))
        return try JSONParser.parse(Array(data))
    }

    private func statusCounts(_ summary: JSONValue) -> [String: Double] {
        var counts: [String: Double] = [:]
        guard case .object(let operations)? = summary["operations"] else { return counts }
        for (operation, entry) in operations.members {
            guard case .object(let statuses)? = entry["byStatus"] else { continue }
            for (status, value) in statuses.members {
                if case .number(let count) = value { counts["\(operation) \(status)"] = count }
            }
        }
        return counts
    }

    /// A Python HTTP/1.1 peer on loopback: `setup` runs once; for each POST, `respond` (Python,
    /// with `body` read and `status = 200`, `headers = [("Content-Type", "application/json")]`,
    /// `answer = b""` set) decides the answer. It prints `ready` once it listens (`Peer.ready()`).
    private func httpPeer(port: UInt16, setup: String, respond: String) throws -> Peer {
        let indented = respond.split(separator: "\n", omittingEmptySubsequences: false).map { "        " + $0 }.joined(separator: "\n")
        let script = #"""
            import json, time, http.server, email.utils
            \#(setup)
            class Handler(http.server.BaseHTTPRequestHandler):
                protocol_version = "HTTP/1.1"
                def log_message(self, *args): pass
                def do_POST(self):
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    status, headers, answer = 200, [("Content-Type", "application/json")], b""
            \#(indented)
                    self.send_response(status)
                    for name, value in headers: self.send_header(name, value)
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    self.wfile.write(answer)
                do_PUT = do_POST
            # A listen backlog of 1,024 like nginx's, not socketserver's 5: a burst of connections
            # (a warm-up's, a campaign's taps) must not stall in an overflowing accept queue.
            http.server.ThreadingHTTPServer.request_queue_size = 1024
            server = http.server.ThreadingHTTPServer(("127.0.0.1", \#(port)), Handler)
            print("ready", flush=True)
            server.serve_forever()
            """#
        return try Peer(which("python3")!, ["-c", script], readyWhen: "ready")
    }

    /// A stand-in SmartAppPush service that writes every request (path and body, one JSON line
    /// each) to `log` and to its standard output (`Peer.line(where:)`), and accepts it.
    private func captureServer(port: UInt16, log: String) throws -> Peer {
        try httpPeer(port: port, setup: "log = open(\"\(log)\", \"a\", buffering=1)", respond: #"""
            line = json.dumps({"path": self.path, "body": body.decode()})
            log.write(line + "\n")
            print(line, flush=True)
            answer = b'{"success":true}' if self.path.endswith("/pushes/opened") else b'{"fingerprint":"0"}'
            """#)
    }

    /// Runs `scenario` in simulated time and in wall time and returns the two summaries once
    /// `disagreements` finds none between them. A disagreement counts only against a wall run
    /// that kept up, as the run itself judges it (`generator.saturated` false: lag p99 within
    /// 100 ms, no missed start, its CPU not all taken): a machine busy with other work makes a
    /// wall run late (Smartico's pings 3,113 against 3,340 once), which says nothing of the code.
    /// Such a run is tried again, up to five runs; a run that kept up and disagrees fails the
    /// test at once, and five late runs fail it saying so. Never a silent pass.
    private func agreeInBothClocks(_ scenario: String, _ disagreements: (_ simulated: JSONValue, _ wall: JSONValue) -> [String]) async throws -> (simulated: JSONValue, wall: JSONValue) {
        let simulated = NSTemporaryDirectory() + "pushswarm-sim-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: simulated) }
        try #require(try await cli.run(["run", scenario, "--out", simulated, "--quiet"]).status == 0)
        let simulatedSummary = try summary(simulated)
        var late: [String] = []
        for _ in 0..<5 {
            let wall = NSTemporaryDirectory() + "pushswarm-wall-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: wall) }
            let wallRun = try await cli.run(["run", scenario, "--clock", "wall", "--out", wall, "--quiet"])
            try #require(wallRun.status == 0, "\(wallRun.error)")
            let wallSummary = try summary(wall)
            let problems = disagreements(simulatedSummary, wallSummary)
            if problems.isEmpty { return (simulatedSummary, wallSummary) }
            let generator = try #require(wallSummary["generator"], "a wall run reports its generator")
            guard generator["saturated"] == .bool(true) else {
                for problem in problems { Issue.record("\(problem) (the wall run kept up: lag p99 \(generator["lagP99Ms"]?.numberValue ?? -1) ms)") }
                return (simulatedSummary, wallSummary)
            }
            late.append("lag p99 \(generator["lagP99Ms"]?.numberValue ?? -1) ms: \(problems.joined(separator: "; "))")
        }
        Issue.record("the wall run of \(scenario) disagreed and never kept up in 5 tries, so the clocks could not be compared (the machine is too busy): \(late)")
        throw CancellationError()
    }

    /// Each status count of `simulated` against `wall`'s, within `share` (and at least `floor`
    /// requests), and the same keys.
    private func countDisagreements(_ simulated: JSONValue, _ wall: JSONValue, share: Double, floor: Double) -> [String] {
        let expected = statusCounts(simulated)
        let measured = statusCounts(wall)
        var problems: [String] = []
        if Set(expected.keys) != Set(measured.keys) { problems.append("keys: simulated \(expected.keys.sorted()), wall \(measured.keys.sorted())") }
        for (key, count) in expected.sorted(by: { $0.key < $1.key }) where abs((measured[key] ?? 0) - count) > max(share * count, floor) {
            problems.append("\(key): simulated \(count), wall \(measured[key] ?? 0)")
        }
        return problems
    }

    @Test(arguments: [
        "Tests/Fixtures/wall-vs-simulated.json", "Tests/Fixtures/meiro-wall-vs-simulated.json",
        "Tests/Fixtures/all-platforms-wall-vs-simulated.json", "Tests/Fixtures/open-token-bucket.json",
        "Tests/Fixtures/open-fixed-window.json",
    ])
    func wallAndSimulatedRunsOfOneScenarioAgreeWithinTwoPercent(scenario: String) async throws {
        // 2 %, and at least 2 requests: in wall time a reply due in the run's last moments can
        // land either side of its end (a small count, such as Smartico's 83 engagement actions,
        // would otherwise fail on one such request).
        let (simulatedSummary, wallSummary) = try await agreeInBothClocks(scenario) { countDisagreements($0, $1, share: 0.02, floor: 2) }
        #expect(statusCounts(simulatedSummary).values.reduce(0, +) > 100, "the scenario must be busy enough to compare")
        #expect(wallSummary["clock"] == .string("wall"))
        #expect(wallSummary["ledger"]?["lost"] == .number(0))
        #expect(wallSummary["ledger"]?["checked"] == .bool(true))
        // Real sockets measured their phases: connections were opened and first bytes timed.
        let operations = try #require(wallSummary["operations"]?.objectValue, "operations in the wall run")
        #expect(operations.members.contains { ($0.value["connections"]?.numberValue ?? 0) > 0 })
        #expect(operations.members.contains { ($0.value["firstByteMs"]?["p50"]?.numberValue ?? 0) > 0 })
        // Each install's own connections (the default, perDevice) are modelled in simulated
        // time too: its requests count the connections they opened.
        let simulatedOperations = try #require(simulatedSummary["operations"]?.objectValue, "operations in the simulated run")
        #expect(simulatedOperations.members.contains { ($0.value["connections"]?.numberValue ?? 0) > 0 })
    }

    /// Each install's own connections (issue 50) in both clocks: 200 installs tap a campaign's
    /// push, each a cold start on a new connection, then iOS suspends them and every app is
    /// closed. The simulated run's connections opened and closed (by why) are the wall run's, as
    /// counted on its real sockets, within 2 % (or 2), with its requests.
    @Test func connectionsOfInstallsAgreeInBothClocks() async throws {
        let counters = ["connections.opened", "connections.closed.background", "connections.closed.processDied"]
        let (simulatedSummary, wallSummary) = try await agreeInBothClocks("Tests/Fixtures/connections-wall-vs-simulated.json") { simulated, wall in
            var problems = countDisagreements(simulated, wall, share: 0.02, floor: 2)
            for name in counters {
                let (expected, measured) = (simulated["counters"]?[name]?.numberValue ?? 0, wall["counters"]?[name]?.numberValue ?? 0)
                if abs(expected - measured) > max(0.02 * expected, 2) { problems.append("\(name): simulated \(expected), wall \(measured)") }
            }
            return problems
        }
        // Every install opened its own (a push's report, then the tap's cold start beside it).
        let opened = simulatedSummary["counters"]?["connections.opened"]?.numberValue ?? 0
        #expect(opened >= 200, "simulated: \(opened) connections opened")
        #expect(wallSummary["counters"]?["connections.closed.background"]?.numberValue ?? 0 > 0, "iOS suspensions closed connections")
    }

    @Test func smarticoDevicesHoldRealWebSocketsAndAnswerServerPings() async throws {
        // The same Smartico scenario in both clocks: the wall run's devices open real WebSockets
        // to the loopback mock, answer its PINGs, and get the campaign's popups on them.
        func shown(_ counters: JSONValue?) -> Double {
            (counters?["smartico.popupsShown"]?.numberValue ?? 0) + (counters?["smartico.miniGamesShown"]?.numberValue ?? 0)
        }
        func pings(_ summary: JSONValue) -> Double { summary["counters"]?["smartico.serverPingsAnswered"]?.numberValue ?? 0 }
        let (simulatedSummary, wallSummary) = try await agreeInBothClocks("Tests/Fixtures/smartico-wall-vs-simulated.json") { simulated, wall in
            var problems = countDisagreements(simulated, wall, share: 0.02, floor: 0)
            if abs(pings(wall) - pings(simulated)) > 0.05 * pings(simulated) {
                problems.append("server PINGs answered: simulated \(pings(simulated)), wall \(pings(wall))")
            }
            // Within 1 %: a user whose session starts within a millisecond or two of the campaign
            // can fall either side of it in wall time.
            let (wallShown, simulatedShown) = (shown(wall["counters"]), shown(simulated["counters"]))
            if abs(wallShown - simulatedShown) > 0.01 * simulatedShown {
                problems.append("the campaign reached the open sockets: simulated \(simulatedShown), wall \(wallShown)")
            }
            return problems
        }
        #expect(statusCounts(simulatedSummary)["smartico.connect 101"] == 400)
        let counters = wallSummary["counters"]
        #expect(counters?["sockets.peakOpen"] == .number(400), "every device held its socket at once")
        // The mock answers the handshake after its latency (5 ms) in wall time too.
        let handshake = wallSummary["operations"]?["smartico.connect"]?["latencyMs"]?["p50"]?.numberValue ?? 0
        #expect(handshake >= 5, "handshake p50 \(handshake) ms")
        #expect(pings(wallSummary) > 400)
        #expect(shown(counters) > 390)
        #expect(wallSummary["ledger"]?["lost"] == .number(0))
    }

    @Test func workersHoldMoreWebSocketsThanOneProcessMay() async throws {
        // Under a limit of 1,200 open files, one process with the in-process mock (two files per
        // socket) may hold 354 of 800 users' WebSockets; four worker processes hold up to 200 each.
        let single = NSTemporaryDirectory() + "pushswarm-single-\(UUID().uuidString)"
        let workers = NSTemporaryDirectory() + "pushswarm-workers-\(UUID().uuidString)"
        defer {
            try? FileManager.default.removeItem(atPath: single)
            try? FileManager.default.removeItem(atPath: workers)
        }
        let run = "\"$0\" run Tests/Fixtures/smartico-wall-vs-simulated.json --clock wall --devices 800 --duration 12s --quiet"
        let one = try await cli.run(["-c", "ulimit -n 1200 && exec \(run) --out \(single)", CommandLineTests.binary.path], executable: "/bin/sh")
        #expect(one.status == 0, "\(one.error)")
        #expect(one.error.contains("this process may open 1200"), "the plan says why it caps: \(one.error)")
        let four = try await cli.run(["-c", "ulimit -n 1200 && exec \(run) --workers 4 --out \(workers)", CommandLineTests.binary.path], executable: "/bin/sh")
        #expect(four.status == 0, "\(four.error)")
        // The same run in simulated time: how many sockets the devices open within the run.
        let simulated = NSTemporaryDirectory() + "pushswarm-simulated-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: simulated) }
        #expect(try await cli.run(["run", "Tests/Fixtures/smartico-wall-vs-simulated.json", "--devices", "800", "--duration", "12s", "--quiet", "--out", simulated]).status == 0)
        let opened = try #require(try summary(simulated)["counters"]?["sockets.peakOpen"]?.numberValue)
        #expect(opened > 790)
        let capped = try summary(single)
        let merged = try summary(workers)
        let singlePeak = capped["counters"]?["sockets.peakOpen"]?.numberValue ?? 0
        #expect(singlePeak <= 354, "one process: \(singlePeak)")
        #expect((capped["requests"]?["transportErrorsByReason"]?["socketBudget"]?.numberValue ?? 0) > 0)
        #expect(merged["counters"]?["sockets.peakOpen"] == .number(opened), "each worker held all of its sockets at once")
        #expect(merged["requests"]?["transportErrorsByReason"]?["socketBudget"] == nil)
        #expect(merged["operations"]?["smartico.connect"]?["byStatus"]?["101"] == .number(opened))
        #expect(merged["mergedFrom"] == .number(4))
    }

    @Test(.enabled(if: which("nginx") != nil, "needs nginx (apt-get install nginx-light)"))
    func countsAgainstNginxLimitReqEqualItsAccessLogAndTheSimulationPredictsThem() async throws {
        // A limiter PushSwarm did not write: nginx's limit_req, 10r/s burst=5 nodelay per address,
        // answering 429. POST to a static file is a 405 that error_page turns into a 200, so the
        // content phase runs after limit_req (a `return` would run before it).
        let (nginx, port, directory) = try cli.startNginx(
            location: "limit_req zone=perip burst=5 nodelay; limit_req_status 429; root html; error_page 405 =200 @ok;",
            http: "log_format statuses '$status $remote_addr'; limit_req_zone $binary_remote_addr zone=perip:1m rate=10r/s;", accessLog: "access.log statuses")
        defer {
            nginx.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let scenario = "Tests/Fixtures/nginx-limit-req.json"
        let wall = directory.appendingPathComponent("wall").path
        // No warm-up: nginx's log must hold the run's requests alone.
        let run = try await cli.run(["run", scenario, "--clock", "wall", "--target", "http://127.0.0.1:\(port)", "--no-warm-up", "--out", wall, "--quiet"])
        #expect(run.status == 0, "\(run.error)")
        nginx.stop()
        let lines = try String(contentsOf: directory.appendingPathComponent("access.log"), encoding: .utf8).split(separator: "\n")
        let logged = Dictionary(grouping: lines, by: { $0.split(separator: " ").first.map(String.init) ?? "" }).mapValues(\.count)
        let measured = try summary(wall)["requests"]?["byStatus"]
        #expect((logged["200"] ?? 0) > 100 && (logged["429"] ?? 0) > 100, "the limit was hit: \(logged)")
        #expect(measured?["200"]?.numberValue == Double(logged["200"] ?? -1), "200s: PushSwarm \(String(describing: measured?["200"])), nginx \(logged["200"] ?? 0)")
        #expect(measured?["429"]?.numberValue == Double(logged["429"] ?? -1), "429s: PushSwarm \(String(describing: measured?["429"])), nginx \(logged["429"] ?? 0)")
        #expect(Set(lines.compactMap { $0.split(separator: " ").last.map(String.init) }) == ["127.0.0.1", "127.0.0.2"], "two NAT addresses")
        // The simulated run, against the mock's nginx-style limiter, predicts nginx's counts within 2 %.
        let simulated = directory.appendingPathComponent("sim").path
        #expect(try await cli.run(["run", scenario, "--out", simulated, "--quiet"]).status == 0)
        let predicted = try summary(simulated)["requests"]?["byStatus"]
        for status in ["200", "429"] {
            let actual = Double(logged[status] ?? 0)
            let model = predicted?[status]?.numberValue ?? 0
            #expect(abs(model - actual) <= 0.02 * actual, "\(status): simulated \(model), nginx \(actual)")
        }
    }

    /// capacity.json as `pushswarm capacity --out DIRECTORY` wrote it.
    func capacityReport(in directory: String) throws -> JSONValue {
        try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: directory).appendingPathComponent("capacity.json"))))
    }

    /// Issue 34: against an nginx that answers everything at once, a capacity search runs into
    /// PushSwarm's own limit long before the service's, and must say so: "limited by PushSwarm",
    /// no capacity claimed for the service (it once reported its own ceiling, 56,875/s, as
    /// nginx's). 20 devices behind one address: at most 20 × 8 requests wait at once.
    @Test(.enabled(if: which("nginx") != nil, "needs nginx (apt-get install nginx-light)"))
    func capacityAgainstAServiceFasterThanPushSwarmEndsLimitedByPushSwarm() async throws {
        let (nginx, port, directory) = try cli.startNginx(location: #"default_type application/json; return 200 '{"fingerprint":"0"}';"#)
        defer {
            nginx.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let out = directory.appendingPathComponent("out").path
        let run = try await cli.run([
            "capacity", "Scenarios/capacity-events.json", "--slo", "p99<200ms,errors<1%", "--clock", "wall", "--duration", "2s",
            "--target", "http://127.0.0.1:\(port)", "--no-warm-up", "--devices", "20", "--from", "1000/s", "--precision", "25%", "--out", out,
        ])
        #expect(run.status == 0, "\(run.error)")
        #expect(run.output.contains("limited by PushSwarm at"), "\(run.output)")
        #expect(!run.output.contains("requests/s held"), "no capacity claimed for the service:\n\(run.output)")
        let report = try capacityReport(in: out)
        #expect(report["capacityPerSecond"] == .null)
        let limit = try #require(report["limitedByPushSwarmAtPerSecond"]?.numberValue)
        let steps = report["steps"]?.arrayValue ?? []
        #expect(steps.contains { $0["rate"]?.numberValue == limit && $0["generatorLimit"]?.stringValue != nil }, "the limiting step says why")
        // Every step carries the generator's health, the figures its verdict read.
        for step in steps {
            let generator = try #require(step["generator"], "a wall step carries its generator's health")
            for key in ["lagP99Ms", "cpuBusy", "shedArrivals", "missedStarts", "pendingAtEnd"] {
                #expect(generator[key]?.numberValue != nil, "\(key) in \(generator)")
            }
        }
        let limiting = try #require(steps.last { $0["rate"]?.numberValue == limit }?["generator"])
        let shed = limiting["shedArrivals"]?.numberValue ?? 0, lag = limiting["lagP99Ms"]?.numberValue ?? 0
        let cpu = limiting["cpuBusy"]?.numberValue ?? 0, missed = limiting["missedStarts"]?.numberValue ?? 0
        #expect(shed > 0 || lag > 100 || cpu > 0.9 || missed > 0, "the limiting step's figures show the limit: \(limiting)")
    }

    /// The same search against nginx's limit_req (500 r/s for every address together, burst 50,
    /// 429 beyond) still finds the service's limit, and does not call it PushSwarm's.
    @Test(.enabled(if: which("nginx") != nil, "needs nginx (apt-get install nginx-light)"))
    func capacityAgainstNginxLimitReqFindsTheLimit() async throws {
        let (nginx, port, directory) = try cli.startNginx(
            location: "limit_req zone=all burst=50 nodelay; limit_req_status 429; root html; error_page 405 =200 @ok;",
            http: "limit_req_zone $host zone=all:1m rate=500r/s;"
        )
        defer {
            nginx.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let out = directory.appendingPathComponent("out").path
        let run = try await cli.run([
            "capacity", "Scenarios/capacity-events.json", "--slo", "errors<1%", "--clock", "wall", "--duration", "4s",
            "--target", "http://127.0.0.1:\(port)", "--no-warm-up", "--from", "100/s", "--precision", "10%", "--out", out,
        ])
        #expect(run.status == 0, "\(run.error)")
        let report = try capacityReport(in: out)
        let capacity = try #require(report["capacityPerSecond"]?.numberValue, "\(run.output)")
        #expect(capacity >= 350 && capacity <= 540, "capacity \(capacity)/s against limit_req at 500 r/s:\n\(run.output)")
        #expect(report["limitedByPushSwarmAtPerSecond"] == .null)
        #expect(!run.output.contains("limited by PushSwarm"))
    }

    /// RFC 9110: "Retry-After = HTTP-date / delay-seconds". A wall run reads an HTTP-date against
    /// the real calendar: stamped with the scenario's start date instead (months before today),
    /// a date one second ahead looked like months ahead, and every retried request waited for the
    /// ceiling and was still pending when the run ended.
    @Test(.enabled(if: which("python3") != nil, "needs python3"))
    func aRetryAfterDateIsReadAgainstTheRealCalendarInWallTime() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-retry-after-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Without a `start`, events carry today's time; with `--start`, that calendar's. Either
        // way the Retry-After date is read against the real time.
        for (round, extra) in [[String](), ["--start", "2026-03-02T00:00:00Z"]].enumerated() {
            let port = freePort()
            let stamps = directory.appendingPathComponent("event-times-\(round)").path
            // Each device's first event, in the peer's first three seconds: 429 and a date 1 s
            // ahead. Every event_time is written down.
            let peer = try httpPeer(port: port, setup: "seen = set(); started = []; stamps = open(\"\(stamps)\", \"a\", buffering=1)", respond: #"""
                payload = json.loads(body)
                stamps.write(payload.get("event_time", "") + "\n")
                now = time.time()
                if not started: started.append(now)
                token = payload.get("device_token")
                if token not in seen and now - started[0] < 3:
                    status = 429
                    headers.append(("Retry-After", email.utils.formatdate(now + 1, usegmt=True)))
                    answer = b'{"error":"rate limited"}'
                else:
                    answer = b'{"fingerprint":"0"}'
                seen.add(token)
                """#)
            defer { peer.stop() }
            #expect(await peer.ready())
            let out = directory.appendingPathComponent("wall-\(round)").path
            let run = try await cli.run(
                // No warm-up: the peer's 429s are for each device's first event in the run.
                ["run", "Tests/Fixtures/retry-after-date.json", "--clock", "wall", "--target", "http://127.0.0.1:\(port)", "--no-warm-up", "--out", out, "--quiet"] + extra
            )
            #expect(run.status == 0, "\(run.error)")
            let report = try summary(out)
            let limited = report["requests"]?["byStatus"]?["429"]?.numberValue ?? 0
            #expect(limited >= 1, "the peer answered 429: \(String(describing: report["requests"]))")
            #expect(report["counters"]?["retryAfter.clamped"] == nil, "no wait was cut to the ceiling")
            #expect(report["queue"]?["pendingAtEnd"] == .number(0), "every retry was made within the run")
            #expect(report["dropped"]?["total"] == .number(0))
            #expect(report["retries"]?["total"]?.numberValue == limited, "each 429 retried once, then answered 200")
            let first = try #require(try String(contentsOfFile: stamps, encoding: .utf8).split(separator: "\n").first.map(String.init))
            let format = ISO8601DateFormatter()
            format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let stamped = try #require(format.date(from: first), "\(first)")
            if extra.isEmpty {
                #expect(abs(stamped.timeIntervalSinceNow) < 60, "stamped today: \(first)")
            } else {
                #expect(first.hasPrefix("2026-03-02T"), "stamped on --start's calendar: \(first)")
            }
        }
    }

    /// Issue 14's story against a service PushSwarm does not run: with `--target`, a campaign
    /// still reaches the devices (PushSwarm delivers the pushes as the provider would), the
    /// users who tap report `/pushes/opened` with their push's `tracking_token`, events carry the
    /// real time, and a second run of the same seed sends no event the first did.
    @Test(.enabled(if: which("python3") != nil, "needs python3"))
    func aCampaignReachesDevicesAgainstARealTargetAndTheirTapsReachIt() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-campaign-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var eventBodies: [Set<String>] = []
        for round in 0..<2 {
            let port = freePort()
            let log = directory.appendingPathComponent("captured-\(round)").path
            let peer = try captureServer(port: port, log: log)
            defer { peer.stop() }
            #expect(await peer.ready())
            let out = directory.appendingPathComponent("run-\(round)").path
            let run = try await cli.run(["run", "Tests/Fixtures/campaign-real-target.json", "--clock", "wall", "--target", "http://127.0.0.1:\(port)", "--out", out, "--quiet"])
            #expect(run.status == 0, "\(run.error)")
            let report = try summary(out)
            #expect(report["counters"]?["campaigns.launchedLocally"] == .number(1))
            #expect(report["warmUp"]?["installs"] == .number(200) && report["warmUp"]?["byOperation"]?["smartapppush.events"] == .number(200), "each install's first event came first")
            #expect(report["counters"]?["notifications.deliveredLocally"] == .number(200), "every install has a token and permission")
            let tapped = report["counters"]?["notifications.tapped"]?.numberValue ?? 0
            #expect(tapped > 50, "about half of 200 tap")
            let captured = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(String($0)) }
            let opens = captured.filter { $0["path"]?.stringValue == "/pushes/opened" }.compactMap { $0["body"]?.stringValue }.map { try? JSONParser.parse($0) }
            #expect(Double(opens.count) == tapped, "each tap reached the target")
            let tokens = opens.compactMap { $0?["tracking_token"]?.stringValue }
            #expect(tokens.count == opens.count && Set(tokens).count == tokens.count && tokens.allSatisfy { $0.count == 36 }, "each open carries its push's own tracking token")
            let events = captured.filter { $0["path"]?.stringValue == "/events" }.compactMap { $0["body"]?.stringValue }
            let format = ISO8601DateFormatter()
            format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let times = events.compactMap { (try? JSONParser.parse($0))?["event_time"]?.stringValue }.compactMap { format.date(from: $0) }
            #expect(!times.isEmpty && times.count == events.count && times.allSatisfy { abs($0.timeIntervalSinceNow) < 60 }, "events carry the real time")
            eventBodies.append(Set(captured.compactMap { $0["body"]?.stringValue }))
        }
        // Events, the warm-up's, and the opens with their tracking tokens (the push provider's).
        #expect(eventBodies[0].isDisjoint(with: eventBodies[1]), "two runs of one seed send no identical body")
    }

    /// Issue 14, item 5: against a real target, installs from before the run are unknown to the
    /// service, so a warm-up has them register first, reported apart. PushExpress's spec 003: "If
    /// non-nil and non-empty variable found [ic_id], assume it is existing install", and the
    /// `ic_id` is what "create instance" answered: each install creates its instance and sends
    /// its info in the warm-up, then uses the id the service issued for every later request. With
    /// `--no-warm-up` nothing registers first.
    @Test(.enabled(if: which("python3") != nil, "needs python3"))
    func installsFromBeforeTheRunRegisterWithARealTargetFirstAndKeepWhatItIssued() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-warm-up-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for warmUp in [true, false] {
            let port = freePort()
            let log = directory.appendingPathComponent("captured-\(warmUp)").path
            let peer = try httpPeer(port: port, setup: "log = open(\"\(log)\", \"a\", buffering=1)\nissued = []", respond: #"""
                log.write(json.dumps({"method": self.command, "path": self.path, "body": body.decode()}) + "\n")
                if self.command == "POST" and self.path.endswith("/instances"):
                    issued.append(1)
                    answer = json.dumps({"id": "issued-%d" % len(issued)}).encode()
                elif self.path.endswith("/info"):
                    answer = b'{"update_interval_sec": 60}'
                else:
                    answer = b'{}'
                """#)
            defer { peer.stop() }
            #expect(await peer.ready())
            let out = directory.appendingPathComponent("run-\(warmUp)").path
            var arguments = ["run", "Tests/Fixtures/warm-up-pushexpress.json", "--clock", "wall", "--target", "http://127.0.0.1:\(port)", "--out", out, "--quiet"]
            if !warmUp { arguments.append("--no-warm-up") }
            let run = try await cli.run(arguments)
            #expect(run.status == 0, "\(run.error)")
            let report = try summary(out)
            let captured = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(String($0)) }
            let creates = captured.filter { $0["method"]?.stringValue == "POST" && $0["path"]?.stringValue?.hasSuffix("/instances") == true }
            // The instance id of every request after the creations, from its path.
            let used = captured.compactMap { $0["path"]?.stringValue }.compactMap { path -> String? in
                let parts = path.split(separator: "/")
                guard let at = parts.firstIndex(of: "instances"), at + 1 < parts.count else { return nil }
                return String(parts[at + 1])
            }
            let notifications = captured.filter { $0["path"]?.stringValue?.hasSuffix("/events/notification") == true }
            #expect(notifications.count == 80, "40 pushes delivered and clicked in the run")
            if warmUp {
                let section = try #require(report["warmUp"], "summary.json reports the warm-up")
                #expect(section["installs"] == .number(40))
                #expect(section["complete"] == .bool(true))
                #expect(section["byOperation"]?["pushexpress.create_instance"] == .number(40))
                #expect(section["byOperation"]?["pushexpress.update_info"] == .number(40))
                #expect(section["byStatus"]?["200"] == .number(80))
                #expect(creates.count == 40)
                let tokens = Set(creates.compactMap { $0["body"]?.stringValue }.compactMap { (try? JSONParser.parse($0))?["ic_token"]?.stringValue })
                #expect(tokens.count == 40, "each install creates its own instance")
                // Its first info carries the push token, so the service can reach it.
                let infos = captured.prefix(80).filter { $0["path"]?.stringValue?.hasSuffix("/info") == true }
                #expect(infos.count == 40 && infos.allSatisfy { (try? JSONParser.parse($0["body"]?.stringValue ?? ""))?["transport_token"]?.stringValue?.isEmpty == false })
                #expect(!used.isEmpty && used.allSatisfy { $0.hasPrefix("issued-") }, "every later request names an instance the service issued")
                #expect(report["operations"]?["pushexpress.create_instance"] == nil, "the warm-up's requests are not in the run's figures")
                #expect(report["requests"]?["sent"]?.numberValue.map { $0 < Double(captured.count) } == true)
            } else {
                #expect(report["warmUp"] == nil)
                #expect(creates.isEmpty, "nothing registers first")
                #expect(!used.contains { $0.hasPrefix("issued-") })
            }
        }
    }

    /// A warm-up's retry fires at its time, not when something else wakes the partition: three
    /// SmartAppPush installs a few seconds apart, each `app_opened` answered 503 once and then 200.
    /// The retry is scheduled by the answer (an arrival), when the partition has asked to be woken
    /// for the next install or, after the last, at the warm-up's end; it used to wait for that
    /// (60 s here, 170 s in the finding), and the run after it with it.
    @Test(.enabled(if: which("python3") != nil, "needs python3"))
    func aWarmUpRetryAfterA503FiresOnTime() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-warm-retry-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = freePort()
        let peer = try httpPeer(port: port, setup: "seen = set()", respond: #"""
            token = json.loads(body).get("device_token")
            if token not in seen:
                seen.add(token)
                status = 503
            else:
                answer = b'{"fingerprint":"0"}'
            """#)
        defer { peer.stop() }
        #expect(await peer.ready())
        let file = directory.appendingPathComponent("scenario.json").path
        try Data(#"""
            {"name": "warm-retry", "seed": 5, "duration": "1s", "devices": 3,
             "groups": [{"name": "g", "platform": "smartapppush", "os": "android"}],
             "behaviour": {"newInstallShare": 0, "tokenRotationsPerDay": 0},
             "warmUp": {"rate": "20/m", "maxDuration": "60s"}}
            """#.utf8).write(to: URL(fileURLWithPath: file))
        let out = directory.appendingPathComponent("run").path
        let run = try await cli.run(["run", file, "--clock", "wall", "--target", "http://127.0.0.1:\(port)", "--out", out, "--quiet"])
        #expect(run.status == 0, "\(run.error)")
        let section = try #require(try summary(out)["warmUp"], "summary.json reports the warm-up")
        #expect(section["byStatus"]?["503"] == .number(3) && section["byStatus"]?["200"] == .number(3), "\(section)")
        #expect(section["complete"] == .bool(true))
        // The last install starts at 6 s; the retry table's first delay is seconds, not the 60 s limit.
        #expect((section["seconds"]?.numberValue ?? 99) < 25, "\(section)")
    }

    /// A warm-up that respects the service's limiter (issue 35: 300 installs behind 3 addresses at
    /// the default 1,000/s against nginx `limit_req` at 7 r/s an address drew 843 429s, and the run
    /// started with the limiter full). 150 installs behind 3 addresses: each address goes at the
    /// scenario's per-address limit (SmartAppPush's 10/s), and its first 429 pauses it and halves
    /// its pace, below nginx's 7/s. A handful of 429s (each retried as the SDK does), every install
    /// registered, and a run of 2 events a second an address after it meets no 429.
    @Test(.enabled(if: which("nginx") != nil, "needs nginx (apt-get install nginx-light)"))
    func aWarmUpBacksOffAPerAddressLimitAndTheRunStartsWithItDrained() async throws {
        let (nginx, port, directory) = try cli.startNginx(
            location: "limit_req zone=perip nodelay; limit_req_status 429; root html; error_page 405 =200 @ok;",
            http: "limit_req_zone $binary_remote_addr zone=perip:1m rate=7r/s;"
        )
        defer {
            nginx.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let file = directory.appendingPathComponent("scenario.json").path
        try Data(#"""
            {"name": "warm-limit", "seed": 8, "duration": "3s", "devices": 150,
             "network": {"devicesPerSourceIP": 50},
             "groups": [{"name": "g", "platform": "smartapppush", "os": "android", "workload": {"model": "open", "rate": "6/s"}}],
             "behaviour": {"newInstallShare": 0, "eventMix": {"screen_viewed": 1}, "tokenRotationsPerDay": 0}}
            """#.utf8).write(to: URL(fileURLWithPath: file))
        let out = directory.appendingPathComponent("run").path
        let run = try await cli.run(["run", file, "--clock", "wall", "--target", "http://127.0.0.1:\(port)", "--out", out, "--quiet"])
        #expect(run.status == 0, "\(run.error)")
        let report = try summary(out)
        let section = try #require(report["warmUp"], "summary.json reports the warm-up")
        let refused = section["byStatus"]?["429"]?.numberValue ?? 0
        #expect(refused <= 6, "a handful of 429s, not hundreds: \(section)")
        #expect(section["byStatus"]?["200"] == .number(150) && section["complete"] == .bool(true), "every install registered, its 429s retried: \(section)")
        #expect((report["requests"]?["byStatus"]?["200"]?.numberValue ?? 0) >= 10, "the run went out")
        #expect(report["requests"]?["byStatus"]?["429"] == nil, "the run starts with the limiter drained: \(String(describing: report["requests"]))")
    }

    /// The warm-up paces requests, not installs, per address (issue 49): a PushExpress install
    /// sends create and then info back to back, and pacing installs at the limit sent twice the
    /// limit (523 of 2,007 warm-up requests got 429 against 5 r/s, and backing off stretched it to
    /// 120 s). 200 installs behind 2 addresses against nginx's limit_req at 5 r/s per address,
    /// burst 0: under 2 % 429s, and the warm-up ends within 1.5 × 200 × 2 / 10 = 60 s.
    @Test(.enabled(if: which("nginx") != nil, "needs nginx (apt-get install nginx-light)"))
    func aWarmUpPacesEveryRequestPerAddressNotOnlyInstalls() async throws {
        let (nginx, port, directory) = try cli.startNginx(
            location: "limit_req zone=perip nodelay; limit_req_status 429; try_files /nothing @ok;",
            http: "limit_req_zone $binary_remote_addr zone=perip:1m rate=5r/s;",
            ok: #"{"id":"ic-from-nginx"}"#
        )
        defer {
            nginx.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let file = directory.appendingPathComponent("scenario.json").path
        try Data(#"""
            {"name": "warm-pushexpress", "seed": 9, "duration": "1s", "devices": 200,
             "network": {"devicesPerSourceIP": 100},
             "groups": [{"name": "spec", "platform": "pushexpress", "os": "android", "client": {"profile": "spec"}}],
             "behaviour": {"newInstallShare": 0, "tokenRotationsPerDay": 0, "unreachableShare": 0},
             "warmUp": {"rate": "1000/s", "perAddressRate": "5/s", "maxDuration": "90s", "settle": "0s"}}
            """#.utf8).write(to: URL(fileURLWithPath: file))
        let out = directory.appendingPathComponent("run").path
        let run = try await cli.run(["run", file, "--clock", "wall", "--target", "http://127.0.0.1:\(port)", "--out", out, "--quiet"])
        #expect(run.status == 0, "\(run.error)")
        let section = try #require(try summary(out)["warmUp"], "summary.json reports the warm-up")
        let statuses = section["byStatus"]?.objectValue ?? [:]
        let total = statuses.members.reduce(0) { $0 + ($1.value.numberValue ?? 0) }
        let refused = statuses["429"]?.numberValue ?? 0
        #expect(total >= 400, "create and info for each of 200 installs: \(section)")
        #expect(refused < 0.02 * total, "429s \(refused) of \(total): \(section)")
        let seconds = try #require(section["seconds"]?.numberValue)
        #expect(seconds <= 60, "the warm-up took \(seconds) s: \(section)")
        #expect(section["complete"] == .bool(true), "\(section)")
    }

    /// Two wall runs of the nightly, each checked against the capture of the other, share no
    /// event, token or id (issue 49): a real service de-duplicates what it has seen, and the second
    /// night measured its dedup path. Two nights once shared 11,882 of 18,000 SmartAppPush event
    /// fingerprints (spec 002: tenant, app, user, event name, event time, device token, context,
    /// params): the fixed start gives both the same event times, and the FCM tokens were the
    /// seed's. Tokens and device-made ids carry the run's nonce now; the users' accounts
    /// (`user_N`), the shop's catalog (`SKU-N`) and the service's configuration (tenant, app and
    /// project ids) are the same every night by design. The nightly's open loads are cut to a twentieth for a capture
    /// server in Python.
    @Test(.enabled(if: which("python3") != nil, "needs python3"))
    func twoNightsShareNoEventTokenOrID() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-two-nights-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let nightly = try String(contentsOfFile: CommandLineTests.root.path + "/Scenarios/nightly.json", encoding: .utf8)
        let small = nightly.replacingOccurrences(of: #""rate": "1200/s""#, with: #""rate": "60/s""#)
            .replacingOccurrences(of: #""rate": "600/s""#, with: #""rate": "30/s""#).replacingOccurrences(of: #""rate": "300/s""#, with: #""rate": "15/s""#)
        #expect(small != nightly)
        let scenario = directory.appendingPathComponent("nightly-small.json").path
        try small.write(toFile: scenario, atomically: true, encoding: .utf8)
        var logs: [String] = []
        for night in 1...2 {
            let port = freePort()
            let log = directory.appendingPathComponent("night-\(night)").path
            let peer = try captureServer(port: port, log: log)
            defer { peer.stop() }
            #expect(await peer.ready())
            let run = try await cli.run([
                "run", scenario, "--clock", "wall", "--devices", "2000", "--duration", "4s", "--no-warm-up",
                "--target", "http://127.0.0.1:\(port)", "--out", directory.appendingPathComponent("run-\(night)").path, "--quiet",
            ])
            #expect(run.status == 0, "\(run.error)")
            logs.append(log)
        }
        let check = #"""
            import json, re, sys
            UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
            FCM = re.compile(r"[A-Za-z0-9_-]{11,}:APA91b[A-Za-z0-9_-]+")
            KEY = re.compile(r"token|session|uid|(^|_)id$", re.I)
            CONFIGURATION = {"tenant_id", "project_id", "app_id"}
            def identities(path):
                found, events = set(), set()
                for line in open(path):
                    r = json.loads(line)
                    text = r["path"] + " " + r["body"]
                    found |= set(UUID.findall(text)) | set(FCM.findall(text))
                    def walk(value, key, parent):
                        if isinstance(value, dict):
                            for k, v in value.items(): walk(v, k, key)
                        elif isinstance(value, list):
                            for v in value: walk(v, key, parent)
                        elif (isinstance(value, (str, int)) and KEY.search(key) and len(str(value)) >= 8 and key not in CONFIGURATION
                              and parent != "app" and not re.fullmatch(r"(user_|SKU-)\d+", str(value))):
                            found.add(str(value))
                    try: walk(json.loads(r["body"]), "", "")
                    except ValueError: pass
                    if r["path"].startswith("/events"):
                        # Spec 002: "Every event gets a SHA-256 fingerprint generated from: tenant_id,
                        # app_id, app_user_id, event_name, event_time, device_token, context, and params."
                        body = json.loads(r["body"])
                        inputs = ["tenant_id", "app_id", "app_user_id", "event_name", "event_time", "device_token", "context", "params"]
                        events.add(json.dumps([body.get(k) for k in inputs], sort_keys=True))
                return found, events
            (a, ea), (b, eb) = identities(sys.argv[1]), identities(sys.argv[2])
            print(len(a), len(ea), len(a & b), len(ea & eb), sorted(a & b)[:5])
            """#
        let result = try cli.shell("python3", ["-c", check, logs[0], logs[1]])
        let fields = result.split(separator: " ", maxSplits: 4).map(String.init)
        try #require(fields.count == 5, "\(result)")
        #expect((Int(fields[0]) ?? 0) > 500 && (Int(fields[1]) ?? 0) > 200, "each night sent tokens, ids and events: \(result)")
        #expect(fields[2] == "0" && fields[3] == "0", "ids and tokens shared, event fingerprints shared, first shared: \(result)")
    }

    /// Every UUID PushSwarm sends, on every platform, is version 4 with variant 10 (issue 35: 76 of
    /// 80 warm-up `ic_token`s carried any version). All five platforms' devices, warm-up included,
    /// against a stand-in that takes everything; each UUID-shaped value in a path or a body is checked.
    @Test(.enabled(if: which("python3") != nil, "needs python3"))
    func everyUUIDSentOnEveryPlatformIsVersionFour() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-uuids-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = freePort()
        let log = directory.appendingPathComponent("captured").path
        let peer = try httpPeer(port: port, setup: "log = open(\"\(log)\", \"a\", buffering=1)", respond: #"""
            log.write(json.dumps({"path": self.path, "body": body.decode(errors="replace")}) + "\n")
            # A PushExpress instance is issued, so the warm-up ends with its installs, not its limit.
            answer = b'{"id": "issued"}' if self.path.endswith("/instances") else b'{}'
            """#)
        defer { peer.stop() }
        #expect(await peer.ready())
        let out = directory.appendingPathComponent("run").path
        let run = try await cli.run([
            "run", "Tests/Fixtures/all-platforms-wall-vs-simulated.json", "--clock", "wall", "--duration", "3s", "--target", "http://127.0.0.1:\(port)", "--out", out, "--quiet",
        ])
        #expect(run.status == 0, "\(run.error)")
        let text = try String(contentsOfFile: log, encoding: .utf8)
        let pattern = try NSRegularExpression(pattern: "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-([0-9a-fA-F])[0-9a-fA-F]{3}-([0-9a-fA-F])[0-9a-fA-F]{3}-[0-9a-fA-F]{12}")
        let matches = pattern.matches(in: text, range: NSRange(text.startIndex..., in: text))
        #expect(matches.count > 100, "UUIDs went out: \(matches.count)")
        for match in matches {
            let version = (text as NSString).substring(with: match.range(at: 1))
            let variant = (text as NSString).substring(with: match.range(at: 2)).lowercased()
            #expect(version == "4" && "89ab".contains(variant), "\((text as NSString).substring(with: match.range))")
        }
    }

    /// A warm-up against a listener that never answers ends when its installs' last tries have
    /// timed out and their retries are spent (about 4 s here), not at its 60 s limit, and says that
    /// none registered (issue 35: 100 requests had timed out 7 s in, and the warm-up went on to
    /// its 5 minutes).
    @Test(.enabled(if: which("python3") != nil, "needs python3"))
    func aWarmUpWhoseRequestsAllTimeOutEndsWithItsLastRetry() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-warm-timeout-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = freePort()
        let peer = try Peer(which("python3")!, ["-c", """
            import socket
            listener = socket.socket(); listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", \(port))); listener.listen(128)
            print("ready", flush=True)
            held = []
            while True: held.append(listener.accept()[0])
            """], readyWhen: "ready")
        defer { peer.stop() }
        #expect(await peer.ready())
        let file = directory.appendingPathComponent("scenario.json").path
        try Data(#"""
            {"name": "warm-timeout", "seed": 5, "duration": "1s", "devices": 5,
             "groups": [{"name": "g", "platform": "smartapppush", "os": "android"}],
             "behaviour": {"newInstallShare": 0, "tokenRotationsPerDay": 0},
             "platforms": {"smartapppush": {"requestTimeout": "1s",
               "retry": {"networkError": {"initialDelay": "500ms", "multiplier": 1, "maxRetries": 2, "whenExhausted": "drop"}}}},
             "warmUp": {"rate": "100/s", "maxDuration": "60s"}}
            """#.utf8).write(to: URL(fileURLWithPath: file))
        let out = directory.appendingPathComponent("run").path
        let run = try await cli.run(["run", file, "--clock", "wall", "--target", "http://127.0.0.1:\(port)", "--out", out, "--quiet"])
        #expect(run.status == 0, "\(run.error)")
        let section = try #require(try summary(out)["warmUp"], "summary.json reports the warm-up")
        #expect(section["timeouts"] == .number(15), "three tries each: \(section)")
        #expect(section["notRegistered"]?["failed"] == .number(5) && section["complete"] == .bool(false), "\(section)")
        // Three 1 s timeouts and two 0.5 s pauses: about 4 s, far from the 60 s limit.
        #expect((section["seconds"]?.numberValue ?? 99) < 20, "\(section)")
    }

    /// A PushExpress service whose `instances` always answers 503, and a warm-up cut at 3 s: the
    /// warm-up says it is incomplete and why, and no install then runs with an `ic_id` the
    /// service never issued. Spec 003: "Store aquired ic_id … In case of any error … retry
    /// infinitely"; "Generate UUIDv4 (or UUIDv7) to use as ic_token".
    @Test(.enabled(if: which("python3") != nil, "needs python3"))
    func aWarmUpCutShortSaysSoAndNoInstallInventsAnInstanceID() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-warm-cut-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = freePort()
        let log = directory.appendingPathComponent("captured").path
        let peer = try httpPeer(port: port, setup: "log = open(\"\(log)\", \"a\", buffering=1)", respond: #"""
            log.write(json.dumps({"method": self.command, "path": self.path, "body": body.decode()}) + "\n")
            if self.command == "POST" and self.path.endswith("/instances"):
                status = 503
            else:
                answer = b'{}'
            """#)
        defer { peer.stop() }
        #expect(await peer.ready())
        let file = directory.appendingPathComponent("scenario.json").path
        try Data(#"""
            {"name": "warm-cut", "seed": 9, "duration": "2s", "devices": 20,
             "groups": [{"name": "g", "platform": "pushexpress", "os": "android", "client": {"profile": "spec"}}],
             "behaviour": {"newInstallShare": 0, "tokenRotationsPerDay": 0, "pushPermissionRate": {"android": 1, "ios": 1}},
             "campaigns": [{"name": "offer", "platform": "pushexpress", "at": "500ms", "audience": 1, "deliveryDelay": "100ms", "tapRate": 1, "timeToOpen": "200ms"}],
             "warmUp": {"rate": "100/s", "maxDuration": "3s"}}
            """#.utf8).write(to: URL(fileURLWithPath: file))
        let out = directory.appendingPathComponent("run").path
        let run = try await cli.run(["run", file, "--clock", "wall", "--target", "http://127.0.0.1:\(port)", "--out", out])
        #expect(run.status == 0, "\(run.error)")
        let section = try #require(try summary(out)["warmUp"], "summary.json reports the warm-up")
        #expect(section["complete"] == .bool(false), "\(section)")
        #expect(section["notRegistered"]?["failed"] == .number(20), "every install's last answer was a 503: \(section)")
        #expect(run.output.contains("Warm-up") && run.output.contains("incomplete: not registered: failed 20"), "\(run.output)")
        let captured = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map { try JSONParser.parse(String($0)) }
        let paths = captured.compactMap { $0["path"]?.stringValue }
        #expect(paths.count > 40 && paths.allSatisfy { $0.hasSuffix("/instances") }, "only creates, never a request naming an instance: \(Set(paths))")
        let report = try summary(out)
        #expect((report["operations"]?["pushexpress.create_instance"]?["count"]?.numberValue ?? 0) >= 20, "the run's installs go on creating")
        #expect((report["counters"]?["notifications.tapped"]?.numberValue ?? 0) > 0, "pushes reached them, and their events wait for an instance")
        let tokens = captured.compactMap { $0["body"]?.stringValue }.compactMap { (try? JSONParser.parse($0))?["ic_token"]?.stringValue }
        #expect(tokens.count == paths.count)
        for token in Set(tokens) {
            // Version 4 (the third group's first digit), variant 10 (the fourth group's first: 8, 9, a or b).
            let groups = token.split(separator: "-")
            #expect(groups.map(\.count) == [8, 4, 4, 4, 12] && groups[2].first == "4" && "89ab".contains(groups[3].first ?? "x"), "\(token)")
        }
    }

    /// `--push-listen`: a service posts to it as to FCM's v1 API; the device holding the token
    /// shows the push, taps it and reports `/pushes/opened` with the push's own `tracking_token`.
    /// An unknown token is FCM's 404 UNREGISTERED, a malformed body its 400 INVALID_ARGUMENT.
    @Test(.enabled(if: which("python3") != nil && which("curl") != nil, "needs python3 and curl"))
    func aPushPostedToThePushListenerIsShownTappedAndReportedWithItsOwnData() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-push-listen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = freePort()
        let log = directory.appendingPathComponent("captured").path
        let peer = try captureServer(port: port, log: log)
        defer { peer.stop() }
        #expect(peer.isReady())
        let pushPort = freePort()
        let out = directory.appendingPathComponent("run").path
        let process = Process()
        process.executableURL = CommandLineTests.binary
        process.arguments = [
            "run", "Tests/Fixtures/push-listen.json", "--clock", "wall", "--target", "http://127.0.0.1:\(port)",
            "--push-listen", "127.0.0.1:\(pushPort)", "--out", out, "--quiet",
        ]
        process.currentDirectoryURL = CommandLineTests.root
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // A token the service has seen: the first event's device_token, once one has arrived
        // (the capture server prints each request). The push listener listens before any device
        // starts (WallRun's setup), so it takes posts by then.
        func token(_ line: String) -> String? {
            (try? JSONParser.parse(line))?["body"]?.stringValue.flatMap { try? JSONParser.parse($0) }?["device_token"]?.stringValue
        }
        let registered = try #require(peer.line { token($0) != nil }.flatMap(token), "no event reached the capture server")
        let endpoint = "http://127.0.0.1:\(pushPort)/v1/projects/staging/messages:send"
        func post(_ body: String) throws -> String {
            // From a file: a body over 128 KiB is more than one argument may carry.
            let file = directory.appendingPathComponent("body.json")
            try Data(body.utf8).write(to: file)
            return try cli.shell("curl", ["-s", "-w", " %{http_code}", "-X", "POST", "-H", "Content-Type: application/json", "--data-binary", "@\(file.path)", endpoint])
        }
        let sent = try post(#"{"message":{"token":"\#(registered)","data":{"tracking_token":"real-tracking-token-1","campaign_id":"staging"},"notification":{"title":"Sale","body":"Now"}}}"#)
        #expect(sent.hasSuffix(" 200") && sent.contains(#""name":"projects/staging/messages/"#), "\(sent)")
        let unknown = try post(#"{"message":{"token":"no-such-token","data":{"a":"b"}}}"#)
        #expect(unknown.hasSuffix(" 404") && unknown.contains("UNREGISTERED"), "\(unknown)")
        let malformed = try post(#"{"message":{"token":"\#(registered)","data":{"count":3}}}"#)
        #expect(malformed.hasSuffix(" 400") && malformed.contains("INVALID_ARGUMENT"), "\(malformed)")
        // FCM: "The maximum payload for both message types is 4096 bytes"; the device never holds more.
        let big = String(repeating: "x", count: 4_097)
        let tooBig = try post(#"{"message":{"token":"\#(registered)","data":{"blob":"\#(big)"}}}"#)
        #expect(tooBig.hasSuffix(" 400") && tooBig.contains("FCM takes at most 4096"), "\(tooBig)")
        let huge = String(repeating: "y", count: 900_000)
        #expect(try post(#"{"message":{"token":"\#(registered)","data":{"blob":"\#(huge)"}}}"#).hasSuffix(" 413"), "refused as it arrives, not held")
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let report = try summary(out)
        #expect(report["counters"]?["notifications.received"] == .number(1))
        let opens = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").compactMap { try? JSONParser.parse(String($0)) }
            .filter { $0["path"]?.stringValue == "/pushes/opened" }.compactMap { $0["body"]?.stringValue }
        #expect(opens.count == 1 && opens.first?.contains(#""tracking_token":"real-tracking-token-1""#) == true, "\(opens)")
    }

    /// `--dashboard`: the live page, opened in headless chromium while a wall run goes, draws the
    /// report's four charts from what its script fetched, and, left open, shows the request count
    /// grow by its own refresh (Tests/Browser/dashboard.py reads the page over the DevTools
    /// protocol; each wait ends on a change in the page, not after a set time).
    @Test(.enabled(if: which("chromium") != nil && which("curl") != nil && pythonHasWebsockets(), "needs chromium, curl and Python's websockets"))
    func theLiveDashboardDrawsTheChartsAndItsCountGrowsWhileTheRunGoes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-dashboard-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = freePort()
        let out = directory.appendingPathComponent("run").path
        let process = Process()
        process.executableURL = CommandLineTests.binary
        process.arguments = ["run", "Tests/Fixtures/wall-vs-simulated.json", "--clock", "wall", "--duration", "15s", "--dashboard", "127.0.0.1:\(port)", "--out", out]
        process.currentDirectoryURL = CommandLineTests.root
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // It says where the dashboard is once it listens.
        let said = OutputLines(reading: output)
        #expect(await onAThreadOfItsOwn { said.line { $0.contains("live dashboard at http://") } } != nil)
        let page = try cli.shell("curl", ["-s", "http://127.0.0.1:\(port)/"])
        #expect(page.hasPrefix("<!DOCTYPE html>") && page.contains("<script>"), "the page")
        #expect(!page.contains("src=") && !page.contains("href="), "one file: no script, style or image from anywhere else")

        let browser = try await cli.run(["python3", "Tests/Browser/dashboard.py", "http://127.0.0.1:\(port)/", "12"], executable: "/usr/bin/env")
        #expect(browser.status == 0, "\(browser.error.suffix(600))")
        let seen = browser.output
        let shown = try JSONParser.parse(seen.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(shown["first"]?["charts"] == .number(4) && shown["first"]?["drawn"] == .number(4), "the report's four charts, each with a series: \(seen)")
        let first = try #require(shown["first"]?["value"]?.numberValue)
        let later = try #require(shown["later"]?["value"]?.numberValue)
        #expect(first > 0 && later > first, "the count grew on the open page: \(seen)")

        await exited(process)
        #expect(process.terminationStatus == 0)
        // What the page showed is the run's own count, on its way to the total.
        let sent = try #require(summary(out)["requests"]?["sent"]?.numberValue)
        #expect(later <= sent, "\(later) shown, \(sent) sent in the end")
    }

    /// A server that answers every way a broken or hostile one can, in turn: the run neither
    /// crashes nor hangs, stays within a small address space, ends on time, and accounts for
    /// every request it sent (an answer, a transport error by reason, or a timeout).
    @Test(.enabled(if: which("python3") != nil, "needs python3"))
    func aHostileServerIsCountedNeverACrashOrAHang() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let port = freePort()
        let script = """
            import asyncio, itertools
            turn = itertools.count()
            answers = [
                b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nContent-Length: 19\\r\\n\\r\\n{\\"fingerprint\\":\\"0\\"}",
                b"HTTP/1.1 2OO OK\\r\\nContent-Length: 0\\r\\n\\r\\n",
                b"HTTP/1.1 600 Beyond\\r\\nContent-Length: 0\\r\\n\\r\\n",
                "reset", "silence",
                b"HTTP/1.1 200 OK\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n1\\r\\na\\r\\n7FFFFFFFFFFFFFFF\\r\\n",
                b"HTTP/1.1 200 OK\\r\\nX-Big: " + b"a" * 1048576 + b"\\r\\n\\r\\n",
                b"HTTP/1.1 200 OK\\r\\nContent-Length: -1\\r\\n\\r\\n",
                b"HTTP/1.1 429 Too Many Requests\\r\\nRetry-After: 1000000000000\\r\\nContent-Length: 0\\r\\n\\r\\n",
            ]
            async def serve(reader, writer):
                try:
                    while True:
                        head = await reader.readuntil(b"\\r\\n\\r\\n")
                        length = [int(l.split(b":")[1]) for l in head.split(b"\\r\\n") if l.lower().startswith(b"content-length")]
                        await reader.readexactly(length[0] if length else 0)
                        answer = answers[next(turn) % len(answers)]
                        if answer == "reset":
                            writer.transport.abort(); return
                        if answer == "silence":
                            await asyncio.sleep(30); return
                        writer.write(answer); await writer.drain()
                except Exception:
                    pass
                finally:
                    writer.close()
            async def main():
                server = await asyncio.start_server(serve, "127.0.0.1", \(port))
                print("ready", flush=True)
                async with server: await server.serve_forever()
            asyncio.run(main())
            """
        let peer = try Peer(which("python3")!, ["-c", script], readyWhen: "ready")
        defer { peer.stop() }
        #expect(await peer.ready())
        let out = directory.appendingPathComponent("run").path
        // 1.4 GiB of address space: what the runtime reserves and a little; a run that buffered
        // what the server announced (a chunk near Int.max) could not fit.
        let command = "ulimit -v 1468006 && exec \"$0\" run Tests/Fixtures/hostile-server.json --clock wall --target http://127.0.0.1:\(port) --no-warm-up --out \(out) --quiet"
        let run = try await cli.run(["-c", command, CommandLineTests.binary.path], executable: "/bin/sh")
        #expect(run.status == 0, "\(run.error)")
        let report = try summary(out)
        let requests = try #require(report["requests"])
        let sent = requests["sent"]?.numberValue ?? 0
        let answered = (requests["byStatus"]?.objectValue?.members ?? []).reduce(0) { $0 + ($1.value.numberValue ?? 0) }
        let failed = (requests["transportErrors"]?.numberValue ?? 0) + (requests["timeouts"]?.numberValue ?? 0)
        #expect(sent > 50 && sent == answered + failed + (requests["inFlightAtEnd"]?.numberValue ?? 0), "every request accounted: \(requests)")
        #expect((requests["byStatus"]?["200"]?.numberValue ?? 0) > 0)
        #expect((requests["timeouts"]?.numberValue ?? 0) > 0, "silence is a timeout")
        let reasons = requests["transportErrorsByReason"]?.objectValue?.keys ?? []
        #expect(reasons.contains("malformedResponse"), "\(reasons)")
        #expect((report["counters"]?["retryAfter.clamped"]?.numberValue ?? 0) > 0, "the 429's wait was cut to the rule's 1 s")
    }

    /// `network.connectionsPerSourceIP` caps each address's shared pool (`connections:
    /// perAddress`): 400 devices behind 2 addresses sending 300 events a second to the loopback
    /// mock, which takes about 40 ms to answer, keep about 6 requests in flight per address. With
    /// a cap of 1 each address holds one connection and the others wait for it; with the default
    /// (64) they open several.
    @Test func connectionsPerSourceAddressCapsEachAddressesConnections() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-conns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var connections: [String: Double] = [:]
        for (name, network) in [("capped", #""connections": "perAddress", "connectionsPerSourceIP": 1, "#), ("default", #""connections": "perAddress", "#)] {
            let file = directory.appendingPathComponent("\(name).json").path
            try Data(#"""
                {"name": "conns", "seed": 3, "duration": "2s", "devices": 400,
                 "network": {\#(network)"devicesPerSourceIP": 200},
                 "groups": [{"name": "load", "platform": "smartapppush", "os": "android", "workload": {"model": "open", "rate": "300/s"}}],
                 "behaviour": {"newInstallShare": 0, "tokenRotationsPerDay": 0}}
                """#.utf8).write(to: URL(fileURLWithPath: file))
            let out = directory.appendingPathComponent(name).path
            let run = try await cli.run(["run", file, "--clock", "wall", "--out", out, "--quiet"])
            #expect(run.status == 0, "\(run.error)")
            let report = try summary(out)
            guard case .object(let operations)? = report["operations"] else { Issue.record("no operations"); return }
            connections[name] = operations.members.reduce(0) { $0 + ($1.value["connections"]?.numberValue ?? 0) }
            #expect((report["requests"]?["sent"]?.numberValue ?? 0) > 400, "the load went out")
        }
        #expect(connections["capped"] == 2, "one connection per address: \(connections)")
        #expect((connections["default"] ?? 0) > 4, "the default opens more when requests overlap: \(connections)")
    }

    @Test func jitterCutsRetryAmplificationInWallTimeToo() async throws {
        // retry-storm.json, short: the same herd against the loopback mock's per-IP limit, retried
        // in lockstep and with full jitter, each for 60 s of wall time.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-storm-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var amplification: [String: Double] = [:]
        var dropped: [String: Double] = [:]
        for jitter in ["none", "full"] {
            let out = directory.appendingPathComponent(jitter).path
            let run = try await cli.run(["run", "Tests/Fixtures/retry-storm-\(jitter)-jitter.json", "--clock", "wall", "--out", out, "--quiet"])
            #expect(run.status == 0, "\(run.error)")
            let report = try summary(out)
            amplification[jitter] = report["retries"]?["amplification"]?.numberValue
            dropped[jitter] = report["dropped"]?["total"]?.numberValue
            #expect(report["ledger"]?["lost"] == .number(0))
        }
        #expect((amplification["none"] ?? 0) > 2, "a storm: \(amplification)")
        #expect((amplification["full"] ?? 9) < (amplification["none"] ?? 0), "jitter lowers amplification: \(amplification)")
        #expect((dropped["full"] ?? 9_999) < (dropped["none"] ?? 0), "and requests given up: \(dropped)")
    }

    /// capacity-events.json: the mock's edge admits 200 events/s in all (a token bucket, burst 20).
    /// Steps of 5 s in wall time from 100/s, halving the gap to 4 %: 100, 200, 150, 175, 187.5,
    /// 193.75. Judged on errors alone, so the limiter sets the answer, not how fast a debug build
    /// answers on a loaded machine (a p99 objective here once failed at 187.5/s beside other
    /// suites). Open-model arrivals are Poisson, and a bucket of 20 overflows on their bursts well
    /// below its rate (about 0.875^20 of the time at 175/s), so more than 1 % may be refused
    /// anywhere from about 165/s up: in 5 s steps of about 900 requests the answer has been 162.5,
    /// 168.75, 175, 187.5 and 193.75/s. A debug build's pools also hand requests to the mock in
    /// bunches (p99 130–180 ms against the mock's 15 ms median), which refuses 0.3–1.1 % at 150/s:
    /// 140.62 and 143.75/s came out beside the other suites, and 140.62/s from the build before
    /// the engine's latest changes on an idle machine. It must reach 125/s or more (the search
    /// left its start and bisected toward the limit), and never be above the limit. On a machine
    /// so loaded that the generator could not put a step's load on (marked saturated in
    /// capacity.json: beside two busy loops a debug build stalls at about 130/s), the search
    /// rightly refuses to credit the service with that rate; the answer may then be lower, but
    /// still never above the limit.
    @Test func capacityAgainstTheLoopbackMockFindsItsConfiguredLimit() async throws {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-capacity-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let run = try await cli.run([
            "capacity", "Scenarios/capacity-events.json", "--slo", "errors<1%", "--clock", "wall",
            "--duration", "5s", "--from", "100/s", "--precision", "4%", "--out", out,
        ])
        #expect(run.status == 0, "\(run.error)")
        #expect(run.output.contains("rate/s"), "the step table is printed")
        let report = try capacityReport(in: out)
        let steps = report["steps"]?.arrayValue ?? []
        let starved = steps.contains { $0["saturated"] == .bool(true) }
        if let capacity = report["capacityPerSecond"]?.numberValue {
            #expect(capacity >= (starved ? 100 : 125) && capacity <= 205, "capacity \(capacity)/s against a limit of 200/s:\n\(run.output)")
        } else {
            // A debug build beside the other suites can be the limit itself (its generator lag
            // p99 past 100 ms at 150/s, counted from the loop's own items since issue 49): the
            // search says PushSwarm was the limit, and credits the service with no more than it
            // held, which is never above its limit.
            // A machine so loaded that even the first step (100/s) was not put on holds less
            // (CI saw it with a second test run beside its own): then only the upper bound is
            // the service's.
            #expect(report["limitedByPushSwarmAtPerSecond"]?.numberValue != nil && starved, "\(run.output)")
            let firstStarved = steps.first?["saturated"] == .bool(true)
            if let held = report["heldPerSecond"]?.numberValue {
                #expect(held >= (firstStarved ? 0 : 100) && held <= 205, "held \(held)/s against a limit of 200/s:\n\(run.output)")
            } else {
                #expect(firstStarved, "no rate held, though the first step was put on:\n\(run.output)")
            }
        }
        #expect(steps.count >= 4)
    }

    @Test(arguments: [[], ["--workers", "2"]])
    func ctrlCStopsAWallRunThatStillWritesItsReport(extra: [String]) throws {
        let directory = NSTemporaryDirectory() + "pushswarm-interrupt-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The run says when it has sent requests, on its metrics endpoint: the signal to interrupt
        // it. With workers the parent serves it, adding up what its shards stream.
        let run = try startMeasuredWallRun(duration: "10m", out: directory, extra: extra)
        let (process, exited) = (run.process, run.exited)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let sent = try sentOnMetricsEndpoint(run) { $0 > 0 }
        try #require(sent > 0, "the run reported no request sent on its metrics endpoint")
        kill(process.processIdentifier, SIGINT)
        #expect(exited.wait(timeout: .now() + 30) == .success, "a wall run must stop after Ctrl-C")
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let report = try summary(directory)
        // With workers, each shard heard it and stopped; their reports were merged.
        #expect(report["counters"]?["run.interrupted"] == .number(extra.isEmpty ? 1 : 2))
        // It ran seconds of its 10 minutes, and says so.
        let seconds = try #require(report["simulatedSeconds"]?.numberValue, "summary.json has simulatedSeconds")
        #expect(seconds < 60)
        let reported = try #require(report["requests"]?["sent"]?.numberValue, "summary.json has requests.sent")
        #expect(reported >= sent)
    }

    /// A wall run of the wall-vs-simulated fixture into `out` that serves its metrics on a free
    /// port, started, with what it prints (`said`: the listener's address once it listens, the
    /// report, and "serving the final metrics" once the report is written and it lingers);
    /// `exited` is signalled when the process ends.
    private struct MeasuredWallRun {
        var process: Process
        var port: UInt16
        var exited: DispatchSemaphore
        var said: OutputLines
    }

    private func startMeasuredWallRun(duration: String, out: String, extra: [String]) throws -> MeasuredWallRun {
        let port = freePort()
        let process = Process()
        process.executableURL = CommandLineTests.binary
        process.arguments = [
            "run", "Tests/Fixtures/wall-vs-simulated.json", "--clock", "wall", "--duration", duration, "--out", out,
            "--metrics-listen", "127.0.0.1:\(port)",
        ] + extra
        process.currentDirectoryURL = CommandLineTests.root
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        return MeasuredWallRun(process: process, port: port, exited: exited, said: OutputLines(reading: output))
    }

    /// The run's requests sent so far, read from its metrics endpoint until `until` holds of them
    /// (or the process ends, or a minute passes): the sum of `pushswarm_requests_sent_total`.
    private func sentOnMetricsEndpoint(_ run: MeasuredWallRun, until: (Double) -> Bool) throws -> Double {
        try gaugesOnMetricsEndpoint(run) { until($0.sent) }.sent
    }

    /// `pushswarm_requests_sent_total` summed and `pushswarm_devices`, scraped from a run's
    /// metrics endpoint, once the run says it listens, until `until` holds of them (or the
    /// process ends, or a minute passes). Scraped as Prometheus does, at an interval (a fifth
    /// of a second here, waiting on the process's end meanwhile): the values change as the run
    /// goes, and only a scrape reads them.
    private func gaugesOnMetricsEndpoint(_ run: MeasuredWallRun, until: ((sent: Double, devices: Double)) -> Bool) throws -> (sent: Double, devices: Double) {
        var read = (sent: 0.0, devices: 0.0)
        guard run.said.line(timeout: 60, where: { $0.contains("metrics for Prometheus at http://") }) != nil else { return read }
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if let text = try? cli.shell("curl", ["-s", "http://127.0.0.1:\(run.port)/metrics"]) {
                let lines = text.split(separator: "\n")
                func value(_ line: Substring) -> Double? { line.split(separator: " ").last.flatMap { Double($0) } }
                read.sent = lines.filter { $0.hasPrefix("pushswarm_requests_sent_total{") }.compactMap(value).reduce(0, +)
                read.devices = lines.first { $0.hasPrefix("pushswarm_devices{") }.flatMap(value) ?? 0
            }
            if until(read) { break }
            if run.exited.wait(timeout: .now() + 0.2) == .success {
                run.exited.signal()  // still ended, for whoever waits next
                break
            }
        }
        return read
    }

    /// `--workers N` with `--metrics-listen`: the parent serves the whole run, adding up what each
    /// shard streams it. Its device count is the scenario's, where any one shard holds half, and
    /// what it served while the run went is within what the merged report counts at the end.
    /// After the report it keeps serving the merged run's final values (`--metrics-linger`), its
    /// dashboard too, and Ctrl-C ends that.
    @Test(.enabled(if: which("curl") != nil, "needs curl"))
    func workersServeTheWholeRunsMetricsAndLingerWithTheFinalValues() throws {
        let directory = NSTemporaryDirectory() + "pushswarm-live-workers-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let dashboard = freePort()
        let run = try startMeasuredWallRun(
            duration: "6s", out: directory, extra: ["--workers", "3", "--metrics-linger", "10m", "--dashboard", "127.0.0.1:\(dashboard)"])
        let (process, exited) = (run.process, run.exited)
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let live = try gaugesOnMetricsEndpoint(run) { $0.devices == 2_000 && $0.sent > 0 }
        #expect(live.devices == 2_000, "the three shards' devices on the parent's endpoint")
        #expect(live.sent > 0)
        // The report is written, and it says it lingers; the process still serves, the merged
        // report's count.
        let lingering = run.said.line(timeout: 60) { $0.hasPrefix("serving the final metrics for") }
        try #require(lingering != nil, "the run did not say it lingers:\n\(run.said.text)")
        let report = try summary(directory)
        let sent = try #require(report["requests"]?["sent"]?.numberValue, "summary.json has requests.sent")
        #expect(live.sent <= sent, "served while the run went: \(live.sent); the merged report: \(sent)")
        #expect(process.isRunning, "it lingers after the report")
        let final = try gaugesOnMetricsEndpoint(run) { $0.sent == sent }
        #expect(final.sent == sent, "served after the report: \(final.sent); the merged report: \(sent)")
        // The dashboard shows the whole run's count: the merged report's.
        let data = try JSONParser.parse(Array(try cli.shell("curl", ["-s", "http://127.0.0.1:\(dashboard)/data"]).utf8))
        let shown = data["tiles"]?.arrayValue?.first { $0["id"] == "requests" }?["value"]?.numberValue
        #expect(shown == sent, "the dashboard's requests: \(String(describing: shown)); the merged report: \(sent)")
        kill(process.processIdentifier, SIGINT)
        #expect(exited.wait(timeout: .now() + 30) == .success, "Ctrl-C ends the linger (of 10 minutes)")
        #expect(process.terminationStatus == 0)
    }

    @Test(.enabled(if: which("curl") != nil && pythonHasWebsockets(), "needs curl and Python's websockets"))
    func mockAnswersCurlAndPythonWebsocketsAndStopsOnCtrlC() throws {
        let port = freePort()
        let mock = Process()
        mock.executableURL = CommandLineTests.binary
        mock.arguments = ["mock", "--listen", "127.0.0.1:\(port)"]
        mock.currentDirectoryURL = CommandLineTests.root
        let output = Pipe()
        mock.standardOutput = output
        mock.standardError = FileHandle.nullDevice
        try mock.run()
        defer { if mock.isRunning { kill(mock.processIdentifier, SIGKILL) } }
        let said = OutputLines(reading: output)
        #expect(said.line { $0.hasPrefix("PushSwarm mock services on http://127.0.0.1:\(port)") } != nil, "it says it listens")
        let base = "http://127.0.0.1:\(port)"
        let event = #"{"tenant_id":"demo-tenant","api_key":"sap_demo_api_key","event_name":"screen_viewed","event_time":"2026-03-02T19:04:11.250+03:00","device_token":"token-1","platform":"android","push_permission_granted":true,"timezone":"Europe/Istanbul","language":"tr","country":"TR","session_id":"5f0c6a52-8a53-4a65-9b0e-1f3f1d2a7c41","params":{},"context":{"app_version":"2.1.0"}}"#
        let accepted = try cli.shell("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-H", "Content-Type: application/json", "--data", event, "\(base)/events"])
        #expect(accepted == "200")
        // The spec's 400: "errors" names each bad field.
        let rejected = try cli.shell("curl", ["-s", "-X", "POST", "--data", #"{"tenant_id":"demo-tenant"}"#, "\(base)/smartapppush/events"])
        #expect(rejected.contains(#""field":"api_key""#))
        let metrics = try cli.shell("curl", ["-s", "\(base)/metrics"])
        #expect(metrics.contains(#"pushswarm_mock_requests_total{operation="smartapppush.events",status="200"} 1"#))
        #expect(metrics.contains(#"pushswarm_mock_requests_total{operation="smartapppush.events",status="400"} 1"#))
        let ledger = try JSONParser.parse(Array(try cli.shell("curl", ["-s", "\(base)/ledger"]).utf8))
        #expect(ledger["platforms"]?["smartapppush"]?["accepted"] == .number(1))
        let echo = try cli.shell("python3", ["-c", """
            import asyncio, websockets
            async def main():
                async with websockets.connect("ws://127.0.0.1:\(port)/_pushswarm/echo") as ws:
                    await ws.send("hello"); print(await ws.recv())
            asyncio.run(main())
            """])
        #expect(echo == "hello")
        kill(mock.processIdentifier, SIGINT)
        mock.waitUntilExit()
        #expect(mock.terminationStatus == 0)
        #expect(said.line { $0.contains("smartapppush: accepted 1") } != nil, "\(said.text)")
    }
}

extension CommandLineTests {
    /// nginx on a free loopback port, one worker, `location` as its only location's body, `http`
    /// and `accessLog` (a path relative to its directory, and a format `http` defines) in its
    /// http block; stopped by the caller (`Peer.stop`). Returns the peer, its port and its
    /// directory.
    /// `tls`: a certificate and its key (PEM files) for nginx to terminate TLS with; `status`:
    /// its counts of connections at `/nginx-status` (stub_status, not logged).
    func startNginx(
        location: String, http: String = "", accessLog: String = "off", ok: String = #"{"fingerprint":"0"}"#, tls: (certificate: String, key: String)? = nil,
        status: Bool = false, http2: Bool = false
    ) throws -> (nginx: Peer, port: UInt16, directory: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("html"), withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: directory.appendingPathComponent("html/events"))
        let port = freePort()
        let config = """
            worker_processes 1; daemon off; pid \(directory.path)/nginx.pid; error_log \(directory.path)/error.log;
            events { worker_connections 4096; }
            http {
              \(http)
              access_log \(accessLog); client_body_temp_path \(directory.path); keepalive_requests 1000000;
              server {
                listen 127.0.0.1:\(port)\(tls == nil ? "" : " ssl")\(http2 ? " http2" : "") backlog=4096;
                \(tls.map { "ssl_certificate \($0.certificate); ssl_certificate_key \($0.key);" } ?? "")
                location / { \(location) }
                location @ok { default_type application/json; return 200 '\(ok)'; }
                \(status ? "location = /nginx-status { stub_status; access_log off; }" : "")
              }
            }
            """
        try config.write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
        let nginx = try Peer(which("nginx")!, ["-c", directory.appendingPathComponent("nginx.conf").path, "-p", directory.path, "-e", directory.appendingPathComponent("error.log").path])
        #expect(waitForPort(port))
        return (nginx, port, directory)
    }

    /// A self-signed certificate for `localhost` and its key (P-256), made in `directory` by openssl.
    func selfSignedCertificate(in directory: URL) throws -> (certificate: String, key: String) {
        let (key, certificate) = (directory.appendingPathComponent("key.pem").path, directory.appendingPathComponent("cert.pem").path)
        _ = try Peer(which("openssl")!, [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", certificate,
            "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
        ]).wait()
        return (certificate, key)
    }

    /// nginx's `location` and `http` lines that make it a proxy in front of a mock listening on
    /// `port` (kept-alive HTTP/1.1 upstream connections), its temporary files in `temporary`.
    func mockProxy(port: UInt16, temporary: URL) -> (location: String, http: String) {
        (
            #"proxy_pass http://mock; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host $http_host;"#,
            """
            upstream mock { server 127.0.0.1:\(port); keepalive 16; }
            proxy_temp_path \(temporary.path); fastcgi_temp_path \(temporary.path); uwsgi_temp_path \(temporary.path); scgi_temp_path \(temporary.path);
            """
        )
    }

    /// Runs a program and returns its standard output, trimmed.
    func shell(_ program: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [program] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
