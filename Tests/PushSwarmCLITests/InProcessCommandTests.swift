import Foundation
@testable import PushSwarmCLI
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmPlatforms
import Testing

/// The commands called in-process, as the executable's one line calls them: option declarations
/// (parsing, help and checks from one place), then runs, thresholds, JUnit and merges without a
/// child process.
@Suite struct InProcessCommandTests {
    static let declarations: [(String, CommandDeclaration)] = PushSwarmCommand.commands.map { ($0.name, $0.command.declaration) }

    /// The overview shows each command's synopsis from its declaration, and each name reaches its
    /// command (`--help` is answered by the command's own parser).
    @Test func theOverviewListsEveryCommandAndEachNameReachesIt() async {
        #expect(PushSwarmCommand.commands.count == 8)
        for (name, declaration) in Self.declarations {
            #expect(PushSwarmCommand.usage.contains("  " + declaration.synopsis), "\(name)")
            #expect(await PushSwarmCommand.main([name, "--help"]) == .success, "\(name)")
            #expect(await PushSwarmCommand.main([name, "--no-such-option"]) == .badInput, "\(name)")
        }
    }

    private func path(_ relative: String) -> String {
        CommandLineTests.root.appendingPathComponent(relative).path
    }

    private func temporaryDirectory() -> String {
        NSTemporaryDirectory() + "pushswarm-in-process-\(UUID().uuidString)"
    }

    /// Each declared option is in its command's help, and is read as declared: a value after it or
    /// after `=`, a switch alone. An option no command declares is an error naming it.
    @Test(arguments: declarations.map(\.0))
    func eachDeclaredOptionIsInTheHelpAndParsesAsDeclared(command: String) throws {
        let declaration = try #require(Self.declarations.first { $0.0 == command }?.1)
        let usage = declaration.usage
        #expect(usage.contains("-h, --help"))
        for option in declaration.options {
            #expect(usage.contains("  " + option.name + (option.value.map { " " + $0 } ?? "")), "\(command) \(option.name) is not in the help")
            if option.value != nil {
                let sample = Self.goodValue(for: option.name)
                let spaced = try #require(try declaration.arguments(["FILE", option.name, sample]))
                let joined = try #require(try declaration.arguments(["FILE", "\(option.name)=\(sample)"]))
                #expect(spaced.value(option.name) == sample && joined.value(option.name) == sample, "\(command) \(option.name)")
                #expect(spaced.positionals == ["FILE"])
            } else {
                let parsed = try #require(try declaration.arguments([option.name, "FILE"]))
                #expect(parsed.flags.contains(option.name) && parsed.positionals == ["FILE"], "\(command) \(option.name)")
            }
        }
        #expect(try declaration.arguments(["--help"]) == nil)
        #expect(try declaration.arguments(["-h"]) == nil)
        do {
            _ = try declaration.arguments(["--no-such-option"])
            Issue.record("\(command) accepted an undeclared option")
        } catch {
            #expect(error.message == "unknown option --no-such-option")
        }
    }

    /// `run --workers`: every option `run` declares says what the parent does with it, and each
    /// one passed on reaches every shard's argument list, with every value of a repeated one; the
    /// others are the parent's or refused with a reason. The list was once kept by hand and left
    /// out `--max-waiting`.
    @Test func everyRunOptionGivenToWorkersReachesTheShardsOrIsTheParentsOrRefused() throws {
        let declaration = RunCommand.declaration
        var words = ["FILE"]
        var expected: [[String]] = []
        for option in declaration.options {
            let passing = try #require(option.shards, "\(option.name) does not say what --workers does with it")
            switch passing {
            case .forwarded:
                if option.value == nil {
                    words.append(option.name)
                    expected.append([option.name])
                } else {
                    // Twice: a repeatable option (--target, --threshold) passes on every value,
                    // and any other as given (the shard reads the last, as this process does).
                    let value = Self.goodValue(for: option.name)
                    words += [option.name, value, option.name, value]
                    expected.append([option.name, value])
                }
            case .parent(let why), .refused(let why):
                #expect(!why.isEmpty, "\(option.name)")
            }
        }
        #expect(expected.contains(["--max-waiting", "7"]))
        let arguments = try #require(try declaration.arguments(words))
        let scenario = try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array(try Data(contentsOf: URL(fileURLWithPath: path("Scenarios/quickstart.json")))))
        let shard = WorkersRun.shardArguments(arguments, runID: "r-1", scenario: scenario)
        #expect(Array(shard.prefix(2)) == ["--run-id", "r-1"])
        for pair in expected {
            let found = shard.indices.filter { index in index + pair.count <= shard.count && Array(shard[index..<index + pair.count]) == pair }.count
            // As given: a switch once, each value of an option (given twice here) in its turn.
            #expect(found == (pair.count == 1 ? 1 : 2), "\(pair) is \(found) times in the shards' arguments \(shard)")
        }
    }

    /// Issue 49, item 5: an option's value is read by the function that checked it
    /// (`TypedOption`), so what `run` accepted is what it uses: each override reaches the
    /// scenario as the value given, and the workers' options as numbers.
    @Test func typedOptionsReachTheRunAsGiven() throws {
        let declaration = RunCommand.declaration
        let arguments = try #require(try declaration.arguments([
            "FILE", "--seed", "18446744073709551615", "--devices", "12", "--duration", "90s", "--clock", "wall",
            "--start", "2026-11-22T02:00:00Z", "--max-waiting", "5", "--workers", "3", "--partitions", "4", "--shard", "2/3",
            "--metrics-linger", "0",
        ]))
        var scenario = try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array(try Data(contentsOf: URL(fileURLWithPath: path("Scenarios/quickstart.json")))))
        _ = RunCommand.applyOverrides(arguments, to: &scenario)
        #expect(scenario.seed == UInt64.max && scenario.devices == 12 && scenario.duration == .seconds(90) && scenario.clock == .wall)
        #expect(scenario.startUnixSeconds == 1_795_312_800 && scenario.startIsExplicit && scenario.maximumWaiting == 5)
        #expect(arguments.value(RunCommand.workers) == 3 && arguments.value(RunCommand.partitions) == 4)
        #expect(arguments.value(RunCommand.shard).map { "\($0.index)/\($0.count)" } == "2/3")
        #expect(arguments.value(RunCommand.metricsLinger) == .zero && arguments.value(RunCommand.startAt) == nil)
    }

    /// A value that passes every declared check.
    private static func goodValue(for option: String) -> String {
        switch option {
        case "--shard": "1/2"
        case "--clock": "wall"
        case "--latency-floor": "7ms"
        case "--format": "json"
        case "--nginx-format": #"$remote_addr [$time_local] "$request" $status"#
        case "--json-fields": "time=ts"
        default: "7"
        }
    }

    /// The checks come with the declaration: a bad value is an error naming the option and
    /// saying what it expected, before anything runs.
    @Test func aBadValueIsRefusedNamingItsOption() {
        let cases: [(CommandDeclaration, [String], String)] = [
            (RunCommand.declaration, ["--workers", "0"], "--workers: expected a whole number from 1 to 64, found \"0\""),
            (RunCommand.declaration, ["--partitions", "many"], "--partitions: expected a whole number from 1 to 256"),
            (RunCommand.declaration, ["--shard", "3/2"], "--shard: expected I/N with 1 <= I <= N"),
            (RunCommand.declaration, ["--clock", "sometimes"], "--clock: expected simulated or wall, found \"sometimes\""),
            (RunCommand.declaration, ["--seed", "-1"], "--seed: expected a whole number from 0"),
            (CapacityCommand.declaration, ["--devices", "0"], "--devices: expected a whole number from 1 to 10000000"),
            (BenchCommand.declaration, ["--connections", "0"], "--connections: expected a whole number from 1"),
            (CompareCommand.declaration, ["--min-samples", "x"], "--min-samples: expected a whole number from 0"),
            (CompareCommand.declaration, ["--tolerance", "-5%"], "--tolerance: expected a share such as 10% or 0.1"),
            // Past Double's range: infinity is no tolerance.
            (CompareCommand.declaration, ["--tolerance", "1e400%"], "--tolerance: expected a share such as 10% or 0.1"),
            (CompareCommand.declaration, ["--latency-floor", "1e400ms"], "--latency-floor: expected a duration such as 1ms"),
            // An option's own name is not a value: `--run-id --quiet` forgot the id.
            (RunCommand.declaration, ["--run-id", "--quiet"], "--run-id needs a value; found the option --quiet"),
            (RunCommand.declaration, ["--out", "--seed=3"], "--out needs a value; found the option --seed"),
            (BenchCommand.declaration, ["--connections", "10001"], "--connections: expected a whole number from 1 to 10000"),
            (BenchCommand.declaration, ["--duration", "2h"], "--duration: expected a duration above zero and at most 1h"),
            (RunCommand.declaration, ["--duration", "400d"], "--duration: expected a duration above zero and at most 366 days"),
            (RunCommand.declaration, ["--start-at", "tomorrow"], "--start-at: expected an instant as RFC 3339"),
        ]
        // Values at the edges of what each check takes.
        for (declaration, words) in [
            (CompareCommand.declaration, ["--min-samples", "0"]), (BenchCommand.declaration, ["--connections", "10000"]),
            (BenchCommand.declaration, ["--duration", "1h"]), (RunCommand.declaration, ["--duration", "366d"]),
            (RunCommand.declaration, ["--start", "2026-11-22T02:00:00Z"]),
        ] {
            #expect(throws: Never.self, "\(words)") { _ = try declaration.arguments(["FILE"] + words) }
        }
        for (declaration, words, message) in cases {
            do {
                _ = try declaration.arguments(["FILE"] + words)
                Issue.record("\(words) was accepted")
            } catch {
                #expect(error.message.hasPrefix(message), "\(words): \(error.message)")
            }
        }
    }

    /// A whole run in-process: the summary written, a failing threshold exit 99 with its JUnit
    /// case failed, bad input exit 2.
    @Test func aRunInProcessWritesItsReportAndJudgesItsThresholds() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let junit = directory + "/junit.xml"
        let code = await PushSwarmCommand.main([
            "run", path("Scenarios/quickstart.json"), "--devices", "200", "--duration", "30m", "--seed", "3",
            "--threshold", "rate(errors) < 100%", "--threshold", "p99(smartapppush.events) < 0.001ms", "--junit", junit,
            "--out", directory + "/run", "--quiet",
        ])
        #expect(code == .thresholdsFailed)
        let summary = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/run/summary.json"))))
        let sent = try #require(summary["requests"]?["sent"]?.numberValue)
        #expect(sent > 0)
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(xml.contains("tests=\"2\"") && xml.contains("failures=\"1\""), "\(xml)")
        #expect(await PushSwarmCommand.main(["run", path("Scenarios/quickstart.json"), "--workers", "0"]) == .badInput)
        #expect(await PushSwarmCommand.main(["validate", path("Scenarios/quickstart.json")]) == .success)
        #expect(await PushSwarmCommand.main(["no-such-command"]) == .badInput)
    }

    /// Two shards run in-process and merged in-process add up to the whole run.
    @Test func shardsRunAndMergedInProcessAddUpToTheWholeRun() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let common = [path("Scenarios/quickstart.json"), "--devices", "300", "--duration", "20m", "--seed", "5", "--quiet"]
        #expect(await PushSwarmCommand.main(["run"] + common + ["--out", directory + "/whole"]) == .success)
        #expect(await PushSwarmCommand.main(["run"] + common + ["--shard", "1/2", "--out", directory + "/one"]) == .success)
        #expect(await PushSwarmCommand.main(["run"] + common + ["--shard", "2/2", "--out", directory + "/two"]) == .success)
        #expect(await PushSwarmCommand.main(["merge", directory + "/one", directory + "/two", "--out", directory + "/merged", "--quiet"]) == .success)
        func sent(_ name: String) throws -> Double? {
            try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/\(name)/summary.json"))))["requests"]?["sent"]?.numberValue
        }
        let whole = try #require(try sent("whole"))
        #expect(whole > 0)
        #expect(try sent("merged") == whole)
        #expect(try sent("one")! + sent("two")! == whole)
    }
}
