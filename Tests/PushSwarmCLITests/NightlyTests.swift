import Foundation
import PushSwarmMetrics
import PushSwarmTestSupport
import Testing

/// Issue 39's end to end: the README's nightly recipe (`run Scenarios/nightly.json --clock wall
/// --target …`, then `compare`), shortened, against the built-in mock served on a real port as the
/// service. Two runs against one service are the same in every median and count, with every row
/// judged (their tails too, on a quiet machine: `Benchmarks/nightly.sh`); a run against the service
/// made 30 % slower is "worse", exit 1, its medians moved. The full five minutes and their rate are
/// `Benchmarks/nightly.sh`'s (a test never times anything).
@Suite(.serialized) struct NightlyTests {
    private let cli = CommandLineTests()

    /// Scenarios/nightly.json for a debug build on a CI machine that runs other tests beside it:
    /// a minute instead of 5, half the fleet and a quarter of the open rates (about 900 requests
    /// a second, a fifth of a core for the run and a sixth for the mock peer here), the campaigns
    /// at 12 s. Every operation still gets more than 100 answers (`flocktory.order` the fewest,
    /// about 140).
    ///
    /// And 100 installs behind an address instead of 20, with SmartAppPush's mock limit lifted
    /// (its 10/s per address would refuse the denser addresses): five times fewer address pools,
    /// so five times fewer connections opened in the campaign's burst. Beside CI's other suites
    /// (the nginx incidents, 60 threads at times) the debug mock peer, which no generator check
    /// sees, opened them late now and then, and one night's p99 of `flocktory.setup` (a session's
    /// first request) came out 578 ms against 201 (CI on ed27a83). The shipped nightly, 20 an
    /// address at the spec limits, is measured whole by `Benchmarks/nightly.sh`: the same, exit 0.
    static func shortened(_ text: String) -> String {
        var text = text
            .replacingOccurrences(of: #""duration": "5m""#, with: #""duration": "60s""#)
            .replacingOccurrences(of: #""devices": 20000"#, with: #""devices": 10000"#)
            .replacingOccurrences(of: #""at": "2m""#, with: #""at": "12s""#)
            .replacingOccurrences(of: #""devicesPerSourceIP": 20}"#, with: #""devicesPerSourceIP": 100}"#)
            .replacingOccurrences(
                of: #""smartapppush": {"mock": {"latency": {"lognormal": {"median": "40ms", "sigma": 0.1}}}}"#,
                with: #""smartapppush": {"mock": {"latency": {"lognormal": {"median": "40ms", "sigma": 0.1}}, "rateLimitPerSecond": 1000000}}"#
            )
        // Smallest first, so that no rate is divided twice.
        for rate in [300, 600, 1200] {
            text = text.replacingOccurrences(of: #""rate": "\#(rate)/s""#, with: #""rate": "\#(rate / 4)/s""#)
        }
        return text
    }

    @Test(.enabled(if: ProcessInfo.processInfo.activeProcessorCount >= 2, "two wall runs and a peer need two cores"))
    func twoNightsOfOneBuildAreTheSameAndASlowerServiceIsWorse() async throws {
        let directory = NSTemporaryDirectory() + "pushswarm-nightly-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let recipe = try String(contentsOfFile: CommandLineTests.root.path + "/Scenarios/nightly.json", encoding: .utf8)
        let scenario = Self.shortened(recipe)
        #expect(scenario.contains(#""duration": "60s""#) && scenario.contains(#""rate": "300/s""#) && scenario.contains(#""at": "12s""#)
                    && scenario.contains(#""devicesPerSourceIP": 100}"#) && scenario.contains(#""rateLimitPerSecond": 1000000"#),
                "the shortening found what it edits in Scenarios/nightly.json")
        try scenario.write(toFile: directory + "/nightly.json", atomically: true, encoding: .utf8)
        // The same service, 30 % slower: every mock answers 30 % later.
        let slower = scenario.replacingOccurrences(of: #""median": "40ms""#, with: #""median": "52ms""#)
        #expect(slower.components(separatedBy: #""median": "52ms""#).count == 6, "each of the five mocks is slower")
        try slower.write(toFile: directory + "/slower.json", atomically: true, encoding: .utf8)

        /// One night: the recipe's run against `service` (a mock on a free port), run once, and
        /// whether its generator fell behind. On a CI machine the suites beside this one run 60
        /// threads at times, and a run then starts what is due over a second late; it says so
        /// itself (`generatorFellBehind`, the rule `compare` uses), and `compare` must then refuse
        /// to judge that pair rather than call it same or worse (exit 3, reason
        /// `generatorFellBehind` naming the run). That refusal is what this test asserts of such a
        /// pair: whether a night puts the load on is the machine's, and a test that ran nights
        /// again until one did would be measuring the machine. A pair that put the load on is
        /// judged as a nightly job judges it.
        func night(_ name: String, service: String) async throws -> Bool? {
            let port = freePort()
            let peer = try Peer(CommandLineTests.binary.path, ["mock", "\(directory)/\(service).json", "--listen", "127.0.0.1:\(port)"], readyWhen: "PushSwarm mock services on")
            defer { peer.stop() }
            #expect(await peer.ready())
            let out = "\(directory)/\(name)"
            let run = try await cli.run([
                "run", "\(directory)/nightly.json", "--clock", "wall", "--target", "http://127.0.0.1:\(port)", "--out", out, "--quiet",
            ])
            guard run.status == 0 else {
                Issue.record("\(name): run exited \(run.status): \(run.error)")
                return nil
            }
            let summary = try SummaryArchive.read(String(contentsOfFile: out + "/metrics.json", encoding: .utf8))
            if summary.generatorFellBehind {
                print("\(name): the generator fell behind (lag p99 \(summary.lagP99Milliseconds ?? 0) ms, \(summary.missedStarts) missed starts)")
            }
            return summary.generatorFellBehind
        }
        var fellBehind: [String: Bool] = [:]
        for (name, service) in [("baseline", "nightly"), ("tonight", "nightly"), ("slower", "slower")] {
            guard let behind = try await night(name, service: service) else { return }
            fellBehind[name] = behind
        }
        /// Compares two nights; where one fell behind, asserts that `compare` refused to judge
        /// them for that reason, and answers nil.
        func compared(_ baseline: String, _ current: String, json: String) async throws -> Compared? {
            let run = try await cli.run(["compare", "\(directory)/\(baseline)", "\(directory)/\(current)", "--json", "\(directory)/\(json)"])
            let parsed = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(json)"))))
            let behind = [("baseline", baseline), ("current", current)].filter { fellBehind[$0.1] == true }.map(\.0)
            guard behind.isEmpty else {
                let reasons = (parsed["cannotJudge"]?.arrayValue ?? []).filter { $0["code"] == .string("generatorFellBehind") }.compactMap { $0["run"]?.stringValue }
                #expect(run.status == 3 && parsed["outcome"] == .string("cannotJudge") && reasons.sorted() == behind.sorted(),
                        "\(behind) fell behind: compare must refuse to judge, exit 3, for that reason:\n\(run.output)")
                return nil
            }
            return Compared(run: run, json: parsed)
        }

        if let same = try await compared("baseline", "tonight", json: "same.json") {
            judgeTheSame(same)
        }
        if let worse = try await compared("baseline", "slower", json: "worse.json") {
            judgeWorse(worse)
        }
    }

    /// What `compare` said of two nights: its exit and terminal text, and its --json.
    private struct Compared {
        var run: CommandLineTests.Outcome
        var json: JSONValue
    }

    /// Two nights of one build against one service.
    private func judgeTheSame(_ same: Compared) {
        let sameJSON = same.json
        let rows = sameJSON["rows"]?.arrayValue ?? []
        // Each platform's operations are compared: all five sent.
        for platform in ["smartapppush.", "flocktory.", "meiro.", "pushexpress.", "smartico."] {
            #expect(rows.contains { $0["metric"]?.stringValue?.contains("(\(platform)") == true }, "no row of \(platform)")
        }
        let unjudged = rows.filter { $0["verdict"] == .string("few") }.compactMap { $0["metric"]?.stringValue }
        #expect(unjudged.isEmpty, "rows on too few samples: \(unjudged)")
        // Two nights of one build against one service: what the load and the service decide is the
        // same, every median and count. The tails (p90, p99) are compared but not asserted here: a
        // night's tail is its worst minute, and beside CI's other suites (60 threads at times on two
        // cores) the debug mock peer, a process no generator check sees, answers late now and then
        // (CI saw flocktory.setup p99 at 201 and 578 ms in one build's two nights, and another pair
        // 'worse' on tails alone with every median the same). That is the machine, not the build:
        // Benchmarks/nightly.sh runs the whole nightly on a quiet machine and asserts it all the
        // same, exit 0 (docs/nightly.md).
        let tail = { (metric: String) in metric.hasPrefix("p90") || metric.hasPrefix("p99") }
        let sameWorse = rows.filter { $0["verdict"] == .string("worse") }.compactMap { $0["metric"]?.stringValue }
        #expect(sameWorse.allSatisfy(tail), "two runs of one build against one service, worse beyond the tails:\n\(same.run.output)")
        #expect(rows.contains { $0["metric"] == .string("p50 latency, all operations") && ($0["verdict"] == .string("same") || $0["verdict"] == .string("noise")) },
                "\(same.run.output)")
        #expect(same.run.status == 0 || (same.run.status == 1 && !sameWorse.isEmpty), "exit \(same.run.status):\n\(same.run.output)")
    }

    /// A night against the service made 30 % slower.
    private func judgeWorse(_ worse: Compared) {
        #expect(worse.run.status == 1, "a service 30 % slower:\n\(worse.run.output)")
        let worseJSON = worse.json
        #expect(worseJSON["outcome"] == .string("worse"))
        let worseRows = (worseJSON["rows"]?.arrayValue ?? []).filter { $0["verdict"] == .string("worse") }.compactMap { $0["metric"]?.stringValue }
        // The medians move: all operations' and some of each platform's. The tails are not asserted:
        // on a CI machine whose other suites run 60 threads at times, the mock peer (a process
        // apart, which no generator check sees) answers late now and then, and one such minute in
        // the baseline raises its p99 past the slower service's (CI saw it once).
        #expect(worseRows.contains("p50 latency, all operations"), "worse: \(worseRows)\n\(worse.run.output)")
        for platform in ["smartapppush.", "flocktory.", "meiro.", "pushexpress.", "smartico."] {
            #expect(worseRows.contains { $0.hasPrefix("p50(\(platform)") }, "no median of \(platform) worse: \(worseRows)\n\(worse.run.output)")
        }
    }
}
