import Foundation
import PushSwarmMetrics
import Testing

/// Report files, `compare`, `--shard` with `merge`, and `--workers`, through the built binary.
@Suite struct ReportCommandTests {
    private let cli = CommandLineTests()

    private func temporary(_ name: String) -> String {
        NSTemporaryDirectory() + "pushswarm-\(name)-\(UUID().uuidString)"
    }

    private func json(_ path: String) throws -> JSONValue {
        try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// quickstart at 1,000 devices for 6 h, with `median` as the mock's latency median: a scenario
    /// file written for the test.
    private func quickstart(median: String, in directory: String) throws -> String {
        let source = try String(contentsOf: CommandLineTests.root.appendingPathComponent("Scenarios/quickstart.json"), encoding: .utf8)
        #expect(source.contains("\"median\": \"40ms\""))
        let path = directory + "/quickstart-\(median).json"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try source.replacingOccurrences(of: "\"median\": \"40ms\"", with: "\"median\": \"\(median)\"")
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func aRunWritesSummaryMetricsTimeSeriesAndHTML() async throws {
        let out = temporary("files")
        defer { try? FileManager.default.removeItem(atPath: out) }
        let outcome = try await cli.run(["run", "Scenarios/quickstart.json", "--devices", "500", "--duration", "2h", "--out", out])
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.output.contains("HTML report written to \(out)/report.html"))
        let summary = try json(out + "/summary.json")
        let sent = try #require(summary["requests"]?["sent"]?.numberValue)
        let lines = try String(contentsOfFile: out + "/timeseries.ndjson", encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 240, "2 h in 30 s intervals")
        let series = try lines.map { try JSONParser.parse(String($0)) }
        #expect(series.reduce(0) { $0 + ($1["sent"]?.numberValue ?? 0) } == sent)
        #expect(series.last?["t"] == .number(7_170))
        let html = try String(contentsOfFile: out + "/report.html", encoding: .utf8)
        #expect(html.contains("<svg class=\"chart\" id=\"chart-latency\""))
        #expect(html.contains("smartapppush.events"))
        #expect(try json(out + "/metrics.json")["format"] == .string("pushswarm-metrics"))
    }

    @Test func compareFlagsADoubledMockLatencyAndPassesTwoRunsOfTheSameBuild() async throws {
        let work = temporary("compare")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let normal = try quickstart(median: "40ms", in: work)
        let slow = try quickstart(median: "80ms", in: work)
        for (file, out) in [(normal, "base"), (normal, "again"), (slow, "slow")] {
            let outcome = try await cli.run(["run", file, "--devices", "1000", "--duration", "6h", "--out", "\(work)/\(out)", "--quiet"])
            #expect(outcome.status == 0, "\(outcome.error)")
        }
        let same = try await cli.run(["compare", "\(work)/base", "\(work)/again"])
        #expect(same.status == 0, "\(same.output)")
        #expect(same.output.contains("no change worse than 10.00 %"))
        let slower = try await cli.run(["compare", "\(work)/base", "\(work)/slow", "--json", "\(work)/compare.json", "--junit", "\(work)/compare.xml"])
        #expect(slower.status == 1, "\(slower.output)")
        for row in ["p50 latency, all operations", "p99 latency, all operations", "p90(smartapppush.events)"] {
            #expect(slower.output.contains(row), "\(row) in \(slower.output)")
        }
        #expect(slower.output.contains("WORSE"))
        let written = try json("\(work)/compare.json")
        #expect(written["worse"] == .bool(true))
        let junit = try String(contentsOfFile: "\(work)/compare.xml", encoding: .utf8)
        #expect(junit.contains("name=\"p99(smartapppush.events)\"><failure message=\"worse than the baseline beyond 10.00 %"), "\(junit)")
        // The other way round it is faster: not worse.
        #expect(try await cli.run(["compare", "\(work)/slow", "\(work)/base"]).status == 0)
        // An output file that cannot be written is exit 2, not 1: a CI job reads 1 as a regression.
        let unwritable = try await cli.run(["compare", "\(work)/base", "\(work)/again", "--json", "\(work)/no-such-directory/compare.json"])
        #expect(unwritable.status == 2 && unwritable.error.contains("--json: cannot write \(work)/no-such-directory/compare.json"), "\(unwritable.error)")
        // Another seed is another load: neither the same nor worse, exit 3 with the reason.
        let seed = try await cli.run(["run", normal, "--devices", "1000", "--duration", "6h", "--seed", "2", "--out", "\(work)/seed", "--quiet"])
        #expect(seed.status == 0, "\(seed.error)")
        let unjudged = try await cli.run(["compare", "\(work)/base", "\(work)/seed", "--json", "\(work)/unjudged.json"])
        #expect(unjudged.status == 3, "\(unjudged.output)")
        #expect(unjudged.output.contains("note: the runs have different seeds") && unjudged.output.contains("cannot judge"), "\(unjudged.output)")
        // A CI job reads why by its code, with the case's values; the sentence is for a person.
        let reasons = try json("\(work)/unjudged.json")
        #expect(reasons["outcome"] == .string("cannotJudge"))
        guard case .array(let cannotJudge)? = reasons["cannotJudge"], case .object(let reason)? = cannotJudge.first, cannotJudge.count == 1 else {
            Issue.record("one reason expected: \(String(describing: reasons["cannotJudge"]))")
            return
        }
        #expect(reason["code"] == .string("differentSeeds") && reason["baseline"] == .number(1) && reason["current"] == .number(2), "\(reason)")
        guard case .array(let rows)? = written["rows"], case .object(let first)? = rows.first else {
            Issue.record("rows expected")
            return
        }
        #expect(first["metric"] == .string("throughput (answers 1xx-3xx per second)") && first["unit"] == .string("perSecond"), "\(first)")
    }

    @Test(arguments: [
        (["compare", "one"], "compare takes two runs"),
        (["compare", "/nonexistent-a", "/nonexistent-b"], "no such report: /nonexistent-a"),
        (["compare", "Scenarios", "Scenarios", "--tolerance", "lots"], "--tolerance: expected a share"),
        (["merge"], "merge takes the report directories"),
        (["run", "Scenarios/quickstart.json", "--shard", "5/4"], "--shard: expected I/N with 1 <= I <= N"),
        (["run", "Scenarios/quickstart.json", "--workers", "0"], "--workers: expected a whole number from 1 to 64"),
        (["run", "Scenarios/quickstart.json", "--workers", "2", "--shard", "1/2"], "--shard: does not go with --workers: the parent runs the shards itself"),
        (["run", "Scenarios/quickstart.json", "--start-at", "tomorrow"], "--start-at: expected an instant as RFC 3339"),
        (["run", "Scenarios/quickstart.json", "--metrics-listen", "127.0.0.1:9464"], "--metrics-listen needs --clock wall"),
        (["run", "Scenarios/quickstart.json", "--clock", "wall", "--metrics-listen", "localhost"], "--metrics-listen: expected ADDRESS:PORT"),
        (["run", "Scenarios/quickstart.json", "--run-id", "../elsewhere"], "--run-id: expected 1 to 100 letters, digits"),
        (["run", "Scenarios/quickstart.json", "--clock", "wall", "--metrics-linger", "2h"], "--metrics-linger: expected a duration from 0 to 1h"),
        (["run", "Scenarios/quickstart.json", "--dashboard", "127.0.0.1:8089"], "--dashboard needs --clock wall"),
        (["run", "Scenarios/quickstart.json", "--clock", "wall", "--dashboard", "localhost"], "--dashboard: expected ADDRESS:PORT"),
        (["run", "Scenarios/quickstart.json", "--clock", "wall", "--push-listen", "127.0.0.1:8089", "--workers", "2"], "--push-listen: does not go with --workers"),
    ])
    func badReportArgumentsExitTwoWithAMessage(arguments: [String], expected: String) async throws {
        let outcome = try await cli.run(arguments)
        #expect(outcome.status == 2)
        #expect(outcome.error.contains(expected), "\(outcome.error)")
    }

    @Test func shardsMergedByTheCommandEqualTheWholeRunAndAMissingShardIsRefused() async throws {
        let work = temporary("merge")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let common = ["--devices", "1200", "--duration", "24h", "--quiet"]
        #expect(try await cli.run(["run", "Scenarios/quickstart.json", "--out", "\(work)/whole"] + common).status == 0)
        for index in 1...4 {
            #expect(try await cli.run(["run", "Scenarios/quickstart.json", "--shard", "\(index)/4", "--out", "\(work)/shard-\(index)"] + common).status == 0)
        }
        let missing = try await cli.run(["merge", "\(work)/shard-1", "\(work)/shard-2", "\(work)/shard-4"])
        #expect(missing.status == 2)
        #expect(missing.error.contains("shard 3/4 missing"), "\(missing.error)")
        let twice = try await cli.run(["merge", "\(work)/shard-1", "\(work)/shard-1"])
        #expect(twice.error.contains("shard 1/4 is already in"), "\(twice.error)")
        let notShard = try await cli.run(["merge", "\(work)/whole"])
        #expect(notShard.error.contains("not a shard's report"), "\(notShard.error)")
        // A shard whose ticks are another length (edited, or of another run) is refused with the
        // lengths, not added up (nor a trap).
        let edited = "\(work)/shard-2-other-ticks"
        try FileManager.default.copyItem(atPath: "\(work)/shard-2", toPath: edited)
        let archive = try String(contentsOfFile: "\(edited)/metrics.json", encoding: .utf8)
        #expect(archive.contains(#""tickMicroseconds":1000000"#))
        try archive.replacingOccurrences(of: #""tickMicroseconds":1000000"#, with: #""tickMicroseconds":2000000"#)
            .write(toFile: "\(edited)/metrics.json", atomically: true, encoding: .utf8)
        let otherTicks = try await cli.run(["merge", "\(work)/shard-1", edited, "\(work)/shard-3", "\(work)/shard-4", "--out", "\(work)/refused"])
        // (Which shard is named depends on which non-empty one came first: 1,200 devices fill
        // three NAT addresses of 500, so one shard of four holds none.)
        #expect(otherTicks.status == 2, "\(otherTicks.error)")
        #expect(otherTicks.error.contains("a shard of another run (its ticks are") && otherTicks.error.contains("2000000 µs"), "\(otherTicks.error)")

        let merged = try await cli.run(["merge"] + (1...4).map { "\(work)/shard-\($0)" } + ["--out", "\(work)/merged", "--threshold", "ledger.lost == 0", "--junit", "\(work)/junit.xml"])
        #expect(merged.status == 0, "\(merged.error)")
        let whole = try json("\(work)/whole/metrics.json")
        let sum = try json("\(work)/merged/metrics.json")
        #expect(whole["metrics"]?["operations"] == sum["metrics"]?["operations"], "counts and every histogram bucket")
        #expect(whole["metrics"]?["timeline"] == sum["metrics"]?["timeline"])
        #expect(whole["ledger"] == sum["ledger"])
        #expect(try json("\(work)/merged/summary.json")["mergedFrom"] == .number(4))
        #expect(try String(contentsOfFile: "\(work)/junit.xml", encoding: .utf8).contains("ledger.lost == 0"))
    }

    @Test func workersRunShardProcessesAndMergeThem() async throws {
        let work = temporary("workers")
        defer { try? FileManager.default.removeItem(atPath: work) }
        let common = ["--devices", "1200", "--duration", "12h"]
        #expect(try await cli.run(["run", "Scenarios/quickstart.json", "--out", "\(work)/whole", "--quiet"] + common).status == 0)
        let workers = try await cli.run(["run", "Scenarios/quickstart.json", "--workers", "3", "--out", "\(work)/workers", "--threshold", "requests.sent < 10"] + common)
        #expect(workers.status == 99, "thresholds are judged on the merged run: \(workers.error)")
        #expect(workers.output.contains("3 shard processes"))
        #expect(try json("\(work)/whole/metrics.json")["metrics"]?["operations"] == json("\(work)/workers/metrics.json")["metrics"]?["operations"])
        #expect(FileManager.default.fileExists(atPath: "\(work)/workers/shard-3/summary.json"))
    }
}
