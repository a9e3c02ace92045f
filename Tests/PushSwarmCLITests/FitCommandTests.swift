import Foundation
import PushSwarmMetrics
import PushSwarmTestSupport
import Testing

/// `pushswarm fit` as a user runs it on the fixtures' logs (Tests/Fixtures/logs: the same eight
/// requests in four formats, one line in each that is not a record).
@Suite struct FitCommandTests {
    private let cli = CommandLineTests()

    @Test(arguments: [
        (["Tests/Fixtures/logs/combined.log"], "combined.log:5"),
        (["Tests/Fixtures/logs/custom.log", "--nginx-format", #"$remote_addr [$time_local] "$request" $status $request_time $msec"#], "custom.log:7"),
        (["Tests/Fixtures/logs/lines.jsonl", "--format", "json"], "lines.jsonl:2"),
        (["Tests/Fixtures/logs/alb.log", "--format", "alb"], "alb.log:8"),
    ])
    func eachFormatsLogIsReadAndCounted(arguments: [String], unread: String) async throws {
        let run = try await cli.run(["fit"] + arguments)
        #expect(run.status == 0, "\(run.error)")
        #expect(run.output.contains("9 lines, 8 read, 1 not"), "\(run.output)")
        #expect(run.output.contains("not read: Tests/Fixtures/logs/\(unread):"), "\(run.output)")
        let rows = run.output.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        #expect(rows.contains(["smartapppush.events", "3", "2", "1", "0"]), "\(run.output)")
        #expect(rows.contains(["smartapppush.pushes_opened", "1", "1", "0", "0"]))
        #expect(rows.contains(["pushexpress.update_info", "1", "1", "0", "0"]))
        #expect(rows.contains(["meiro.mobile", "1", "1", "0", "0"]))
        #expect(rows.contains(["flocktory.setup", "1", "1", "0", "0"]))
        #expect(run.output.contains("requests 7 · 429s 1"))
        #expect(run.output.contains("paths no platform serves: 1 requests (/favicon.ico 1)"))
        #expect(run.output.contains("client addresses 4"), "the addresses of the platforms' requests")
    }

    /// A log in another format than the one given, a log that is not a log, a format definition
    /// that cannot read anything: exit 2, naming the line or what is missing.
    @Test func aBadLogExitsTwoNamingTheLine() async throws {
        let wrongFormat = try await cli.run(["fit", "Tests/Fixtures/logs/combined.log", "--format", "alb"])
        #expect(wrongFormat.status == 2)
        #expect(wrongFormat.error.contains("9 of 9 lines are not access log records in this format; the first: Tests/Fixtures/logs/combined.log:1:"), "\(wrongFormat.error)")
        let scenario = try await cli.run(["fit", "Scenarios/quickstart.json"])
        #expect(scenario.status == 2)
        #expect(scenario.error.contains("Scenarios/quickstart.json:1:"), "\(scenario.error)")
        let definition = try await cli.run(["fit", "Tests/Fixtures/logs/custom.log", "--nginx-format", "$remote_addr $status"])
        #expect(definition.status == 2)
        #expect(definition.error.contains("--nginx-format: the format has no time"), "\(definition.error)")
        let missing = try await cli.run(["fit", "/nonexistent/access.log"])
        #expect(missing.status == 2)
        #expect(missing.error.contains("cannot open /nonexistent/access.log"), "\(missing.error)")
        let none = try await cli.run(["fit"])
        #expect(none.status == 2)
        // A log of more than a week is not an incident's: the scenario would be a week of seconds.
        let long = NSTemporaryDirectory() + "pushswarm-long-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: long) }
        try """
            203.0.113.7 - - [01/Nov/2026:10:00:00 +0000] "POST /events HTTP/1.1" 200 2 "-" "app"
            203.0.113.7 - - [09/Nov/2026:10:00:00 +0000] "POST /events HTTP/1.1" 200 2 "-" "app"

            """.write(toFile: long, atomically: true, encoding: .utf8)
        let week = try await cli.run(["fit", long, "--out", long + ".json"])
        #expect(week.status == 2)
        #expect(week.error.contains("the logs span 8 days"), "\(week.error)")
    }

    /// A log larger than the memory `fit` may use is exit 2 with a message naming the way out,
    /// not a signal (a 29 MB gzip of valid lines once ended in SIGABRT, "failed to allocate 3.3
    /// GB"). Under `ulimit -v` 1.1 GiB (the runtime reserves 1 GiB of address space) 400,000
    /// requests from 100,000 addresses do not fit; without the limit they do.
    @Test func aLogPastTheMemoryItMayUseExitsTwoNotASignal() async throws {
        let log = NSTemporaryDirectory() + "pushswarm-big-\(UUID().uuidString).log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let generate = """
            import sys
            with open(sys.argv[1], "w") as f:
                for i in range(400000):
                    a = i % 100000
                    f.write(f'10.{a >> 16 & 255}.{a >> 8 & 255}.{a & 255} - - [26/Nov/2026:18:{i // 20000 % 60:02d}:{i // 400 % 60:02d} +0000] "POST /events HTTP/1.1" 200 12 "-" "okhttp"\\n')
            """
        _ = try cli.shell("python3", ["-c", generate, log])
        let limited = try await cli.run(["-c", "ulimit -v 1153434; exec \"$0\" fit \"$1\"", CommandLineTests.binary.path, log], executable: "/bin/bash")
        #expect(limited.status == 2, "\(limited.error)")
        #expect(limited.error.contains("the logs hold more than fit can keep in memory") && limited.error.contains("Give it the incident's window alone"), "\(limited.error)")
        let free = try await cli.run(["fit", log])
        #expect(free.status == 0, "\(free.error)")
        #expect(free.output.contains("400,000 lines, 400,000 read, 0 not"), "\(free.output)")
    }

    /// The committed incident (nginx's gzipped log of the run the README's counterfactuals
    /// edit): the fit finds nginx's limit and the clients' rule, and `--check` prints the
    /// simulation beside the log, which it lands within the issue's tolerances.
    @Test func theCommittedIncidentFitsAndItsCheckLandsNearTheLog() async throws {
        let directory = NSTemporaryDirectory() + "pushswarm-fit-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (run, scenario, figures) = try await fitCommitted("incident.log.gz", in: directory)
        #expect(run.output.contains("per-address limit: 5 r/s, burst 10, nodelay"), "\(run.output)")
        #expect(run.output.contains("retry rule: 500ms × 2 up to 4s, 5 retries, jitter none"), "\(run.output)")
        let validate = try await cli.run(["validate", scenario])
        #expect(validate.status == 0, "\(validate.error)")
        let requests = try figures("requests")
        #expect(requests.count >= 2 && abs(requests[1] - requests[0]) <= 0.05 * requests[0], "\(run.output)")
        let share = try figures("429 share")
        #expect(share.count >= 2 && abs(share[1] - share[0]) <= 3, "\(run.output)")
    }

    /// Issue 62, item 2: a log cut to end 5 s after its first 429 (as someone cuts a log around
    /// an incident), fitted as far as it goes: the delays it shows (0.5, 1, 2 s; the clients'
    /// 4 s retries come after it ends), a limit said to be a floor, and the cut named: its last
    /// seconds refused more than a quarter of its busiest.
    @Test func aLogEndingWithinTheStormSaysWhatItCannotSee() async throws {
        let directory = NSTemporaryDirectory() + "pushswarm-fit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let whole = try await cli.run(["fit", "Tests/Fixtures/logs/incident.log.gz", "--nginx-format", #"$remote_addr [$time_local] "$request" $status $request_time $msec"#, "--out", directory + "/whole.json"])
        // The whole recording shows its clients giving up (its run ended as the storm drained,
        // a third of its busiest second still refused: it ends within the storm too).
        #expect(whole.output.contains("retry rule: 500ms × 2 up to 4s, 5 retries") && !whole.output.contains("retry limit:"), "\(whole.output)")
        let lines = try gunzipped("Tests/Fixtures/logs/incident.log.gz").split(separator: "\n")
        let msec = { (line: Substring) in Double(line.split(separator: " ").last ?? "") ?? 0 }
        let first429 = try #require(lines.first { $0.split(separator: " ").dropLast(2).last == "429" }.map(msec))
        let cut = directory + "/cut.log"
        try (lines.filter { msec($0) <= first429 + 5 }.joined(separator: "\n") + "\n").write(toFile: cut, atomically: true, encoding: .utf8)
        let run = try await cli.run(["fit", cut, "--nginx-format", #"$remote_addr [$time_local] "$request" $status $request_time $msec"#, "--out", directory + "/cut.json"])
        #expect(run.status == 0, "\(run.error)")
        #expect(run.output.contains("the log ends within the storm"), "\(run.output)")
        #expect(run.output.contains("retry rule: 500ms × 2 up to 2s, 3 retries, jitter none"), "\(run.output)")
        #expect(run.output.contains("retry limit: 3 at least"), "\(run.output)")
        // Issue 62, item 4: its check misses the log (the retries after the cut are not in it,
        // the scenario's devices retry three times at least where the clients made five), and
        // says so: the figures that missed, what the fit could not see, exit 99.
        let check = try await cli.run(["fit", cut, "--nginx-format", #"$remote_addr [$time_local] "$request" $status $request_time $msec"#, "--check", "--report", directory + "/check"])
        #expect(check.status == 99, "\(check.output)\n\(check.error)")
        #expect(check.output.contains("the fit does not reproduce the log: requests "), "\(check.output)")
        #expect(check.output.contains("the log ends within the storm: the retries after it are not in it"), "\(check.output)")
        #expect(check.output.contains("no client is seen giving up: the scenario retries 3 times"), "\(check.output)")
    }

    /// Issue 62, item 3: the committed incident as two edge nodes log it, their clocks 7 ms
    /// apart. Behind a balancer that spreads each address's requests over both (a line in two
    /// to the second node, its `$msec` 7 ms ahead), a retry answered on one node and sent to the
    /// other shows the offset: `fit` measures it from both files, removes it, and fits what the
    /// one log gave (the rule, the limit, the devices, the taps). Behind one that pins each
    /// address to a node, nothing shows the offset and nothing needs it: `fit` says so and fits
    /// the same.
    @Test func anIncidentLoggedByTwoNodesIsFittedOnOneClock() async throws {
        let directory = NSTemporaryDirectory() + "pushswarm-fit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let format = #"$remote_addr [$time_local] "$request" $status $request_time $msec"#
        let one = try await cli.run(["fit", "Tests/Fixtures/logs/incident.log.gz", "--nginx-format", format, "--out", directory + "/one.json"])
        let lines = try gunzipped("Tests/Fixtures/logs/incident.log.gz").split(separator: "\n")
        let ahead = { (line: Substring) -> String in
            var fields = line.split(separator: " ").map(String.init)
            fields[fields.count - 1] = String(format: "%.3f", (Double(fields[fields.count - 1]) ?? 0) + 0.007)
            return fields.joined(separator: " ")
        }
        func fitBoth(_ toSecond: (Int, Substring) -> Bool, _ name: String) async throws -> CommandLineTests.Outcome {
            let (first, second) = (directory + "/\(name)-a.log", directory + "/\(name)-b.log")
            let split = lines.enumerated().map { (index: $0.offset, line: $0.element, second: toSecond($0.offset, $0.element)) }
            try (split.filter { !$0.second }.map { String($0.line) }.joined(separator: "\n") + "\n").write(toFile: first, atomically: true, encoding: .utf8)
            try (split.filter(\.second).map { ahead($0.line) }.joined(separator: "\n") + "\n").write(toFile: second, atomically: true, encoding: .utf8)
            let run = try await cli.run(["fit", first, second, "--nginx-format", format, "--out", directory + "/\(name).json"])
            #expect(run.status == 0, "\(run.error)")
            return run
        }
        func line(_ run: CommandLineTests.Outcome, _ prefix: String) -> String {
            run.output.split(separator: "\n").first { $0.hasPrefix(prefix) }.map(String.init) ?? "no \(prefix) line"
        }
        // Every other line, by a hash of its place: a balancer's round robin of connections.
        let spread = try await fitBoth({ index, _ in (UInt64(index) &* 0x9E37_79B9_7F4A_7C15) >> 63 == 1 }, "spread")
        #expect(spread.output.contains("clock of \(directory)/spread-b.log: +7 ± "), "\(spread.output)")
        #expect(line(spread, "retry rule:").hasPrefix("retry rule: 500ms × 2 up to 4s, 5 retries, jitter none"), "\(spread.output)")
        #expect(line(spread, "per-address limit:").hasPrefix("per-address limit: 5 r/s, burst 10, nodelay"), "\(spread.output)")
        #expect(line(spread, "campaign on") == line(one, "campaign on"), "\(spread.output)\n\(one.output)")
        // Two of the four NAT addresses on each node.
        let pinned = try await fitBoth({ _, line in ["127.0.0.2", "127.0.0.4"].contains(line.split(separator: " ").first ?? "") }, "pinned")
        #expect(pinned.output.contains("clock of \(directory)/pinned-b.log: no offset measured"), "\(pinned.output)")
        for prefix in ["fit:", "retry rule:", "per-address limit:", "requests "] {
            #expect(line(pinned, prefix) == line(one, prefix), "\(pinned.output)\n\(one.output)")
        }
    }

    /// A gzip file's text, read by gzip.
    private func gunzipped(_ path: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gzip", "-dc", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// `fit --out --check` of a committed log (Tests/Fixtures/logs), writing in `directory`: the
    /// run, the scenario's path, and the check table's figures by row.
    private func fitCommitted(_ log: String, in directory: String) async throws -> (run: CommandLineTests.Outcome, scenario: String, figures: (String) throws -> [Double]) {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let scenario = directory + "/incident.json"
        let run = try await cli.run([
            "fit", "Tests/Fixtures/logs/" + log, "--nginx-format", #"$remote_addr [$time_local] "$request" $status $request_time $msec"#,
            "--out", scenario, "--check", "--report", directory + "/check",
        ])
        #expect(run.status == 0, "\(run.error)")
        // The table's rows: what, then the log's and the simulation's figures.
        let figures = { (row: String) throws -> [Double] in
            let line = try #require(run.output.split(separator: "\n").last { $0.hasPrefix(row + " ") }, "no row \(row): \(run.output)")
            return line.dropFirst(row.count).split(separator: " ").compactMap { Double($0.filter { $0 != "," }) }
        }
        return (run, scenario, figures)
    }

    /// Issue 62: the committed incident recorded through a carrier-like network
    /// (`Tests/Fixtures/logs/incident-jittered.log.gz`: the same incident as incident.log.gz,
    /// each way of every connection delayed 40 ± 20 ms by Tests/Fixtures/delay-proxy.py). The
    /// fit finds the clients' rule, not "full jitter assumed" (what it printed before), tells
    /// the network's noise apart and writes it as `network.rtt`, and its check lands near the log.
    @Test func theCommittedJitteredIncidentFitsWithTheNetworksNoise() async throws {
        let directory = NSTemporaryDirectory() + "pushswarm-fit-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (run, scenario, figures) = try await fitCommitted("incident-jittered.log.gz", in: directory)
        #expect(run.output.contains("retry rule: 500ms × 2 up to 4s, 5 retries, jitter none"), "\(run.output)")
        #expect(run.output.contains("network noise: retries reached the service"), "\(run.output)")
        let fitted = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: scenario))))
        let median = fitted["network"]?["rtt"]?["lognormal"]?["median"]?.stringValue.flatMap(ScenarioFitTestsSupport.milliseconds) ?? -1
        #expect(median >= 60 && median <= 100, "a round trip of two 40 ms ways: \(String(describing: fitted["network"]))")
        let requests = try figures("requests")
        #expect(requests.count >= 2 && abs(requests[1] - requests[0]) <= 0.05 * requests[0], "\(run.output)")
        let share = try figures("429 share")
        #expect(share.count >= 2 && abs(share[1] - share[0]) <= 3, "\(run.output)")
        // The wall run behind the log: its devices tapped 285 times.
        let taps = try figures("campaign taps")
        #expect(taps.count >= 1 && abs(taps[0] - 285) <= 0.1 * 285, "\(run.output)")
    }

    /// Issue 37's end to end: nginx with `limit_req` (5r/s burst=10 nodelay per address, not
    /// PushSwarm's defaults) in front of a wall run with a campaign, logging `$msec`; `fit` reads
    /// nginx's log alone, and the fitted scenario's simulated run reproduces it: total requests
    /// within 5 %, the 429 share within 3 points, the busiest minute within 10 %, the drain time
    /// within 20 %. The fitted limit and retry rule are nginx's and the clients'.
    ///
    /// Three incidents: `incident-campaign`, whose storm is its taps, and `incident-deliveries`
    /// (issue 49, item 1), whose devices report every push they display (SmartAppPush's
    /// `push_received`, on /events beside every other event) before a fifth of them tap over the
    /// next seconds: the delivery wave makes most of the storm, and the fit must find it, apart
    /// from the taps, near what the devices did. And the quickstart's own storm: its 10,000
    /// installs from 17:59 to 18:01:30, its campaign at 18:00 reported by every device it
    /// reaches and tapped by one in ten, behind nginx at SmartAppPush's spec limit (10 r/s per
    /// address), retried by the spec's table.
    ///
    /// And issue 62's: `incident-campaign` recorded through a carrier network, a proxy on
    /// loopback (Tests/Fixtures/delay-proxy.py) that forwards each NAT address's connections
    /// from that address and delays every chunk each way by 40 ± 20 ms (normal). The clients
    /// retry 429s at fixed delays, and each retry reaches nginx some 80 ms after its delay,
    /// spread over tens of milliseconds: `fit` finds the clients' rule exactly and the network's
    /// noise apart from it (written as `network.rtt`). The same through 150 ± 80 ms each way
    /// (log-normal), retries some 260 ms after their delays, spread over hundreds.
    ///
    /// Everything is asserted however late the generator ran (issue 62): a loaded client's
    /// late retries are timing noise, as a network's are, and the fit measures it (recorded
    /// beside the other suites, generator lag p99 3 to 30 ms, and with busy loops beside it).
    /// A recording whose generator PushSwarm itself calls saturated (lag p99 over 100 ms) is
    /// not the fixture's incident: its clients did not retry at their rule but up to a first
    /// delay later (CI once recorded at 643 ms, as the suite started). It is recorded again,
    /// twice at most, and the last recording is asserted whatever its lag. The five are
    /// recorded one after another, so that they do not load each other.
    @Test(.enabled(if: which("nginx") != nil, "needs nginx (apt-get install nginx-light)"), .serialized, arguments: [
        ("incident-campaign", nil), ("incident-deliveries", nil), ("quickstart", nil), ("incident-campaign", "normal:40:20"), ("incident-campaign", "lognormal:150:80"),
    ] as [(String, String?)])
    func aFittedIncidentReproducesNginxsLogInSimulatedTime(fixture: String, through delay: String?) async throws {
        var saturated: [Double] = []
        while true {
            switch try await fitAnIncident(fixture, through: delay, mayRecordAgain: saturated.count < 2) {
            case .recordAgain(let lag):
                saturated.append(lag)
            case .checked(let problems):
                let again = saturated.isEmpty ? "" : " (recorded again after generator lag p99 \(saturated.map { "\($0) ms" }.joined(separator: ", ")))"
                for problem in problems { Issue.record(Comment(rawValue: problem + again)) }
                return
            }
        }
    }

    private enum Outcome {
        /// The generator fell behind: lag p99 over `Summary.saturationThresholdMs`.
        case recordAgain(lagP99: Double)
        /// What is wrong with the fit of the recording.
        case checked([String])
    }

    /// Records the incident (through a delaying proxy, where `through` gives its delay), fits
    /// its log, checks the fit against it: what is wrong.
    private func fitAnIncident(_ fixture: String, through delay: String?, mayRecordAgain: Bool) async throws -> Outcome {
        let format = #"$remote_addr [$time_local] "$request" $status $request_time $msec"#
        // Paths relative to nginx's prefix, the peer's directory; POST to a static file is a 405
        // that error_page turns into a 200, after limit_req.
        let rate = fixture == "quickstart" ? 10 : 5
        let (nginx, port, directory) = try cli.startNginx(
            location: "limit_req zone=perip burst=10 nodelay; limit_req_status 429; root html; error_page 405 =200 @ok;",
            http: "log_format fit '\(format)'; limit_req_zone $binary_remote_addr zone=perip:1m rate=\(rate)r/s;", accessLog: "access.log fit")
        defer {
            nginx.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("html/pushes"), withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: directory.appendingPathComponent("html/pushes/opened"))
        var scenarioFile = "Tests/Fixtures/\(fixture).json"
        if fixture == "quickstart" {
            // The campaign's minutes of the day: from 17:59, the campaign at 60 s, 150 s.
            let day = try String(contentsOfFile: CommandLineTests.root.path + "/Scenarios/quickstart.json", encoding: .utf8)
            let minutes = day.replacingOccurrences(of: #""duration": "24h""#, with: #""duration": "150s""#)
                .replacingOccurrences(of: #""start": "2026-03-02T00:00:00Z""#, with: #""start": "2026-03-02T17:59:00Z""#)
                .replacingOccurrences(of: #""at": "18h""#, with: #""at": "60s""#)
            guard minutes.contains(#""at": "60s""#), minutes.contains("17:59:00Z"), minutes.contains(#""duration": "150s""#) else {
                return .checked(["Scenarios/quickstart.json no longer has what the test edits"])
            }
            scenarioFile = directory.appendingPathComponent("quickstart.json").path
            try minutes.write(toFile: scenarioFile, atomically: true, encoding: .utf8)
        }
        var target = port
        var proxy: Peer?
        defer { proxy?.stop() }
        if let delay {
            // On a port of its own choosing (one picked here could be taken meanwhile).
            let listening = "delay-proxy listening on 127.0.0.1:"
            let started = try Peer(which("python3")!, [
                CommandLineTests.root.path + "/Tests/Fixtures/delay-proxy.py", "--target", "\(port)", "--delay", delay, "--seconds", "600",
            ], readyWhen: listening)
            proxy = started
            guard let line = await onAThreadOfItsOwn({ started.line { $0.contains(listening) } }),
                let listened = line.components(separatedBy: listening).last.flatMap({ UInt16($0.trimmingCharacters(in: .whitespaces)) })
            else { return .checked(["the delaying proxy did not say where it listens"]) }
            target = listened
        }
        let wall = try await cli.run([
            "run", scenarioFile, "--clock", "wall", "--target", "http://127.0.0.1:\(target)", "--no-warm-up",
            "--out", directory.appendingPathComponent("wall").path, "--quiet",
        ])
        proxy?.stop()
        nginx.stop()
        guard wall.status == 0 else { return .checked(["the wall run exited \(wall.status): \(wall.error)"]) }
        let recorded = try SummaryArchive.read(String(contentsOfFile: directory.appendingPathComponent("wall/metrics.json").path, encoding: .utf8))
        let lag = recorded.lagP99Milliseconds ?? 0
        if mayRecordAgain, lag > Summary.saturationThresholdMs {
            print("\(fixture)\(delay.map { " through \($0)" } ?? ""): recorded at generator lag p99 \(lag) ms, saturated: recording again")
            return .recordAgain(lagP99: lag)
        }
        let log = directory.appendingPathComponent("access.log").path
        let scenario = directory.appendingPathComponent("incident.json").path
        let report = directory.appendingPathComponent("check").path
        let fit = try await cli.run(["fit", log, "--nginx-format", format, "--out", scenario, "--check", "--report", report])
        // 99: the fitted run missed the log's figures, which the checks below name.
        guard fit.status == 0 || fit.status == 99 else { return .checked(["fit exited \(fit.status): \(fit.error)"]) }
        var problems: [String] = []
        func check(_ holds: Bool, _ problem: @autoclosure () -> String) {
            if !holds { problems.append(problem()) }
        }
        check(fit.status == 0 && fit.output.contains("the fit reproduces the log within its tolerances"), "fit --check's verdict, exit \(fit.status): \(fit.output.split(separator: "\n").filter { $0.hasPrefix("the fit ") || $0.hasPrefix("  ") })")
        print("\(fixture)\(delay.map { " through \($0)" } ?? ""): recorded at generator lag p99 \(lag) ms")

        // What the fit found: nginx's limit and the clients' rule.
        let fitted = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: scenario))))
        let platform = fitted["platforms"]?["smartapppush"]
        let limit = platform?["mock"]?["rateLimits"]?.arrayValue?.first
        check(limit?["burst"] == 10 && limit?["nodelay"] == true, "limit: \(String(describing: limit))\n\(fit.output)")
        // nginx's rate: the whole number it was given, or within 0.5 % of it (a rate a hair off
        // can tell one request more: 10.006 r/s for 10 from a loaded machine's log, and 5.0024
        // for 5 from one recorded on time, lag p99 0.68 ms, in CI's run alone).
        let fittedRate = limit?["rate"]?.stringValue.flatMap { Double($0.dropLast(2)) } ?? 0
        check(limit?["rate"] == .string("\(rate)/s") || abs(fittedRate - Double(rate)) <= 0.005 * Double(rate),
              "limit: \(String(describing: limit))\n\(fit.output)")
        let retry = platform?["retry"]?["rateLimited"]
        // The fixtures' rule, or the spec's table the quickstart's devices follow: 1 s, 2 s, 4 s.
        let (first, retries): (JSONValue, JSONValue) = fixture == "quickstart" ? ("1s", 3) : ("500ms", 5)
        check(retry?["initialDelay"] == first && retry?["multiplier"] == 2 && retry?["maxDelay"] == "4s", "retry: \(String(describing: retry))\n\(fit.output)")
        check(retry?["jitter"] == "none", "retry: \(String(describing: retry))\n\(fit.output)")
        check(retry?["maxRetries"] == retries, "retry: \(String(describing: retry))\n\(fit.output)")
        check(fitted["campaigns"]?.arrayValue?.count == 1, "campaigns: \(String(describing: fitted["campaigns"]))")
        if let delay {
            // The network's noise, apart from the rule: each retry crossed it twice (its answer
            // back, itself out), 80 ms in all at the median, and a loaded machine's lag on top;
            // the replay crosses it too.
            let mean = 2 * (Double(delay.split(separator: ":")[1]) ?? 0)
            let rtt = fitted["network"]?["rtt"]?["lognormal"]
            let median = rtt?["median"]?.stringValue.flatMap { ScenarioFitTestsSupport.milliseconds($0) } ?? -1
            check(median >= 0.75 * mean && median <= 2 * mean + 2 * lag, "network.rtt \(String(describing: rtt)): the round trip's median is \(mean) ms and the lag p99 \(lag) ms\n\(fit.output)")
            check(fit.output.contains("network noise: retries reached the service"), "the noise told apart: \(fit.output)")
        }
        // The campaign as the devices made it: the deliveries they reported (where they did) and
        // their taps, within 10 % of the wall run's own counts.
        let displayed = Double(recorded.metrics.counters["notifications.displayed"] ?? 0)
        let tapped = Double(recorded.metrics.counters["notifications.tapped"] ?? 0)
        let note = fitted["fit"]?["campaigns.smartapppush-1"]?.stringValue ?? ""
        let numbers = note.split(separator: " ").prefix(8).compactMap { Double($0) }
        if fixture != "incident-campaign" {
            check(platform?["sendPushReceived"] == true, "devices report deliveries: \(String(describing: platform))")
            check(note.contains("deliveries reported"), "deliveries: \(note)")
            check(numbers.count >= 1 && abs(numbers[0] - displayed) <= 0.1 * displayed,
                       "deliveries: the devices displayed \(displayed); \(note)\n\(fit.output)")
            check(fit.output.contains("campaign deliveries"), "--check shows deliveries apart: \(fit.output)")
        } else {
            check(platform?["sendPushReceived"] == nil && note.hasPrefix("\(Int(numbers.first ?? -1)) taps"), "no deliveries: \(note)")
        }
        let taps = note.range(of: #"[0-9]+ taps:"#, options: .regularExpression).flatMap { Double(note[$0].dropLast(6)) } ?? -1
        check(abs(taps - tapped) <= 0.1 * tapped, "taps: the devices tapped \(tapped); \(note)")

        // The log's figures, counted here from nginx's lines: seconds from the first request's start.
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        let requests = lines.map { line -> (start: Double, status: Int) in
            let fields = line.split(separator: " ")
            return (Double(fields[fields.count - 1])! - Double(fields[fields.count - 2])!, Int(fields[fields.count - 3])!)
        }
        let origin = (requests.map(\.start).min() ?? 0).rounded(.down)
        var logSent: [Int: Int] = [:]
        var logRefused: [Int: Int] = [:]
        for request in requests {
            logSent[Int(request.start - origin), default: 0] += 1
            if request.status == 429 { logRefused[Int(request.start - origin), default: 0] += 1 }
        }
        // The simulation's, from its report's seconds.
        var simulatedSent: [Int: Int] = [:]
        var simulatedRefused: [Int: Int] = [:]
        for line in try String(contentsOfFile: report + "/timeseries.ndjson", encoding: .utf8).split(separator: "\n") {
            let tick = try JSONParser.parse(Array(line.utf8))
            guard let second = tick["t"]?.integerValue else { continue }
            simulatedSent[second, default: 0] += tick["sent"]?.integerValue ?? 0
            simulatedRefused[second, default: 0] += tick["rateLimited"]?.integerValue ?? 0
        }
        func peakMinute(_ sent: [Int: Int]) -> Int {
            (0...(sent.keys.max() ?? 0)).map { first in (first..<(first + 60)).reduce(0) { $0 + (sent[$1] ?? 0) } }.max() ?? 0
        }
        func drain(_ refused: [Int: Int]) -> Int {
            let seconds = refused.filter { $0.value > 0 }.keys
            return (seconds.max() ?? 0) - (seconds.min() ?? 0) + 1
        }
        let logTotal = Double(logSent.values.reduce(0, +))
        let simulatedTotal = Double(simulatedSent.values.reduce(0, +))
        check(logTotal > 1_000 && Double(logRefused.values.reduce(0, +)) > 0.3 * logTotal, "a storm: \(logTotal) requests")
        check(abs(simulatedTotal - logTotal) <= 0.05 * logTotal, "requests: log \(logTotal), simulated \(simulatedTotal)\n\(fit.output)")
        let logShare = Double(logRefused.values.reduce(0, +)) / logTotal
        let simulatedShare = Double(simulatedRefused.values.reduce(0, +)) / simulatedTotal
        check(abs(simulatedShare - logShare) <= 0.03, "429 share: log \(logShare), simulated \(simulatedShare)")
        let logPeak = Double(peakMinute(logSent))
        check(abs(Double(peakMinute(simulatedSent)) - logPeak) <= 0.1 * logPeak, "peak minute: log \(logPeak), simulated \(peakMinute(simulatedSent))")
        let logDrain = Double(drain(logRefused))
        check(abs(Double(drain(simulatedRefused)) - logDrain) <= 0.2 * logDrain, "drain: log \(logDrain) s, simulated \(drain(simulatedRefused)) s")
        check(fit.output.contains("429 share"), "the side-by-side table: \(fit.output)")
        check(FileManager.default.fileExists(atPath: report + "/fit-check.html"), "no fit-check.html")
        return .checked(problems)
    }
}

enum ScenarioFitTestsSupport {
    /// A scenario's duration text ("81ms", "1.5s") in milliseconds.
    static func milliseconds(_ text: String) -> Double? {
        if text.hasSuffix("ms") { return Double(text.dropLast(2)) }
        if text.hasSuffix("us") { return Double(text.dropLast(2)).map { $0 / 1_000 } }
        if text.hasSuffix("s") { return Double(text.dropLast()).map { $0 * 1_000 } }
        return nil
    }
}
