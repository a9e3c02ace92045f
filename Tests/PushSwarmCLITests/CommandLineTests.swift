import Foundation
import Testing
import PushSwarmMetrics
import PushSwarmTestSupport

/// Runs the built `pushswarm` binary as a user does, checking exit codes, messages and files.
@Suite struct CommandLineTests {
    struct Outcome {
        var status: Int32
        var output: String
        var error: String
    }

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var binary: URL {
        // The test bundle sits in the build products directory, next to the executable.
        var directory = Bundle.main.bundleURL
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("pushswarm")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return root.appendingPathComponent(".build/debug/pushswarm")
    }

    /// Runs the binary (or `executable`, such as a shell wrapping it) with `arguments`, waiting
    /// for it off the concurrency pool (`onAThreadOfItsOwn`). At most one process more than cores
    /// runs at once (`slots`): the suites start together, and every CLI suite's first runs at
    /// once would each measure the others.
    func run(_ arguments: [String], executable: String? = nil) async throws -> Outcome {
        await Self.slots.acquire()
        do {
            let outcome = try await Self.launch(arguments, executable: executable)
            await Self.slots.release()
            return outcome
        } catch {
            await Self.slots.release()
            throw error
        }
    }

    static let slots = ProcessSlots(ProcessInfo.processInfo.activeProcessorCount + 1)

    /// A count of processes that may run at once; a test waits for one without holding a thread.
    actor ProcessSlots {
        private var free: Int
        private var waiting: [CheckedContinuation<Void, Never>] = []

        init(_ count: Int) { free = count }

        func acquire() async {
            if free > 0 {
                free -= 1
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }

        /// Hands the slot to the longest waiting test, or frees it.
        func release() {
            if waiting.isEmpty { free += 1 } else { waiting.removeFirst().resume() }
        }
    }

    /// Starts the process and reads its standard output and standard error to their ends, each
    /// on a thread of its own: a process filling one pipe while the other is read would
    /// otherwise wait forever.
    private static func launch(_ arguments: [String], executable: String?) async throws -> Outcome {
        let process = Process()
        process.executableURL = executable.map { URL(fileURLWithPath: $0) } ?? Self.binary
        process.arguments = arguments
        process.currentDirectoryURL = Self.root
        let output = Pipe()
        let error = Pipe()
        process.standardOutput = output
        process.standardError = error
        try process.run()
        let (outHandle, errHandle) = (output.fileHandleForReading, error.fileHandleForReading)
        async let errData = onAThreadOfItsOwn { errHandle.readDataToEndOfFile() }
        let outData = await onAThreadOfItsOwn { outHandle.readDataToEndOfFile() }
        await exited(process)
        return Outcome(status: process.terminationStatus, output: String(decoding: outData, as: UTF8.self), error: String(decoding: await errData, as: UTF8.self))
    }

    @Test(arguments: [
        ("missing-devices.json", "$.devices: is required but missing"),
        ("devices-wrong-type.json", "$.devices: expected a number, found a string"),
        ("devices-negative.json", "$.devices: must be at least 1, found -5"),
        ("unknown-platform.json", "$.groups[0].platform: unknown platform \"onesignal\""),
        ("unknown-key.json", "$.devcies: unknown key"),
        ("nested-out-of-range.json", "$.groups[0].behaviour.tapRate.ios: 1.5 is out of range"),
        ("unknown-client-key.json", "$.groups[0].client.profil: unknown key"),
        ("bad-duration.json", "$.duration: \"an hour\" is not a duration"),
        ("campaign-after-end.json", "$.campaigns[0].at: is after the end of the run"),
        ("not-json.json", "$: not valid JSON: line 3, column"),
        // Once accepted, then the run never ended (or sent nothing, silently).
        ("rate-too-high.json", "$.groups[0].workload.rate: must be at most 10000000/s"),
        ("rate-zero.json", "$.groups[0].workload.rate: every rate is zero"),
        ("sessions-too-many.json", "$.behaviour.sessionsPerDay: 1000000000000 is out of range; expected 0 to 1000000"),
        ("edge-tls-unknown.json", "$.platforms.smartapppush.mock.edge.tls: \"1.1\" is not one of: none, 1.2, 1.3"),
        ("rtt-not-a-duration.json", "$.network.rtt: \"fast\" is not a duration"),
    ])
    func aBadScenarioExitsTwoNamingThePath(file: String, expected: String) async throws {
        let path = "Tests/Fixtures/bad-scenarios/\(file)"
        for command in ["validate", "run"] {
            let outcome = try await run([command, path])
            #expect(outcome.status == 2, "\(command) \(file)")
            #expect(outcome.error.contains(expected), "\(command) \(file): \(outcome.error)")
            #expect(!outcome.error.contains("Fatal error"), "no stack trace")
            #expect(outcome.output.isEmpty)
        }
    }

    /// The documented maximum fleet under a 4 GiB address-space limit once died part way with
    /// "failed to allocate" (SIGABRT); it is refused before it starts, with the estimate.
    /// `validate` refuses it too (it once exited 0 with a note).
    @Test func aRunThatCannotFitInMemoryIsRefusedWithTheEstimate() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-10m-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        var quickstart = try String(contentsOfFile: "Scenarios/quickstart.json", encoding: .utf8)
        quickstart = quickstart.replacingOccurrences(of: #""devices": 10000,"#, with: #""devices": 10000000,"#)
        try quickstart.write(toFile: file, atomically: true, encoding: .utf8)
        for command in ["run \"$1\" --out /tmp/pushswarm-never-written", "validate \"$1\""] {
            let outcome = try await run(["-c", "ulimit -v 4194304 && exec \"$0\" \(command)", Self.binary.path, file], executable: "/bin/sh")
            #expect(outcome.status == 2, "\(command): \(outcome.error)")
            #expect(outcome.error.contains("this run cannot fit in memory: 10000000 devices need about 95.4 GiB"), "\(command): \(outcome.error)")
            #expect(outcome.error.contains("limit of 4.0 GiB (ulimit -v)"))
            #expect(!outcome.error.contains("Fatal error"))
        }
        #expect(!FileManager.default.fileExists(atPath: "/tmp/pushswarm-never-written"))
    }

    /// Issue 35: a valid scenario passed the memory check and then died. SmartAppPush's mock
    /// answering 503 to everything, with the documented `whenExhausted: keepForNextLaunch`: 4,000
    /// devices for 6 h under `ulimit -v 1.5 GiB` ended in "failed to allocate" (signal 6), their
    /// queues at 400 KB a device. Now they stay under the ceiling the estimate weighs (16,000 of
    /// them queue about 120,000 in 12 h, past the 100,000 of one a device and within the floor
    /// of 8 a device, and drop the oldest past each address's share), and the run
    /// fits under `ulimit -v` set to the figure `validate` gives; below it, it is refused before
    /// it starts.
    @Test func aFailingServiceRunsWithinItsEstimate() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-503-keep-\(UUID().uuidString).json").path
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-503-keep-\(UUID().uuidString)").path
        defer {
            try? FileManager.default.removeItem(atPath: file)
            try? FileManager.default.removeItem(atPath: out)
        }
        try Data(#"""
            {"name": "503-keep", "seed": 4, "duration": "12h", "devices": 16000, "network": {"devicesPerSourceIP": 20},
             "groups": [{"name": "g", "platform": "smartapppush", "os": "android"}],
             "platforms": {"smartapppush": {"retry": {"serverError": {"whenExhausted": "keepForNextLaunch"}}, "mock": {"http503Rate": 1}}}}
            """#.utf8).write(to: URL(fileURLWithPath: file))
        let validated = try await run(["validate", file])
        #expect(validated.status == 0, "\(validated.error)")
        let figure = try #require(validated.output.firstMatch(of: /ulimit -v (\d+)/).flatMap { Int($0.1) }, "\(validated.output)")
        let atEstimate = try await run(["-c", "ulimit -v \(figure) && exec \"$0\" run \"$1\" --out \"$2\" --quiet", Self.binary.path, file, out], executable: "/bin/sh")
        #expect(atEstimate.status == 0, "\(atEstimate.error)")
        #expect(!atEstimate.error.contains("Fatal error"))
        let summary = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: out).appendingPathComponent("summary.json"))))
        let pending = summary["queue"]?["pendingAtEnd"]?.numberValue ?? .infinity
        #expect(pending > 100_000 && pending <= 128_000, "under 8 a device, the ceiling the estimate weighs: \(pending)")
        #expect((summary["dropped"]?["byReason"]?["waitingCeiling"]?.numberValue ?? 0) > 0, "the oldest went, counted")

        let below = try await run(["-c", "ulimit -v \(figure - 65_536) && exec \"$0\" run \"$1\" --out \"$2\" --quiet", Self.binary.path, file, out + "-below"], executable: "/bin/sh")
        #expect(below.status == 2 && below.error.contains("cannot fit in memory"), "\(below.error)")
    }

    @Test(arguments: [
        (["run", "Scenarios/quickstart.json", "--devices", "0"], "--devices: expected a whole number from 1"),
        (["run", "Scenarios/quickstart.json", "--seed", "-1"], "--seed: expected a whole number"),
        (["run", "Scenarios/quickstart.json", "--duration", "forever"], "--duration: expected a duration"),
        (["run", "Scenarios/quickstart.json", "--clock", "sundial"], "--clock: expected simulated or wall"),
        (["run", "Scenarios/quickstart.json", "--frobnicate"], "unknown option --frobnicate"),
        (["run"], "run takes one scenario file"),
        (["run", "Scenarios/nope.json"], "no such file: Scenarios/nope.json"),
        (["explode"], "unknown command \"explode\""),
    ])
    func badFlagsAndCommandsExitTwoWithAMessage(arguments: [String], expected: String) async throws {
        let outcome = try await run(arguments)
        #expect(outcome.status == 2)
        #expect(outcome.error.contains(expected), "\(outcome.error)")
    }

    @Test func validateAcceptsTheShippedScenarios() async throws {
        let shipped = try FileManager.default.contentsOfDirectory(atPath: Self.root.path + "/Scenarios")
            .filter { $0.hasSuffix(".json") && $0 != "schema.json" }.sorted()
        #expect(shipped.contains("quickstart.json") && shipped.contains("nightly.json"))
        for file in shipped.map({ "Scenarios/" + $0 }) {
            let outcome = try await run(["validate", file])
            #expect(outcome.status == 0, "\(file): \(outcome.error)")
            #expect(outcome.output.contains("valid scenario"))
            // No shipped scenario's open load trips its own service's per-address limit.
            #expect(!outcome.error.contains("warning:"), "\(file): \(outcome.error)")
        }
        // One that does is told which groups and how many addresses would fit: the nightly with
        // 400 installs an address (50 addresses) offers SmartAppPush's 36/s each.
        let directory = NSTemporaryDirectory() + "pushswarm-overrun-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let nightly = try String(contentsOfFile: Self.root.path + "/Scenarios/nightly.json", encoding: .utf8)
        let crowded = nightly.replacingOccurrences(of: #""devicesPerSourceIP": 20"#, with: #""devicesPerSourceIP": 400"#)
        #expect(crowded != nightly)
        try crowded.write(toFile: directory + "/crowded.json", atomically: true, encoding: .utf8)
        let warned = try await run(["validate", directory + "/crowded.json"])
        #expect(warned.status == 0)
        #expect(warned.error.contains("warning: $.groups[0], $.groups[1] (smartapppush) offer 36 requests/s per address at their peak (1800/s over 50 addresses), over the 10/s per address that smartapppush's own mock allows: 180 addresses or more fit (network.devicesPerSourceIP 111 or fewer)"), "\(warned.error)")
    }

    @Test func helpIsThereForEveryCommand() async throws {
        for arguments in [["--help"], ["run", "--help"], ["validate", "--help"]] {
            let outcome = try await run(arguments)
            #expect(outcome.status == 0)
            #expect(outcome.output.contains("Usage"))
        }
    }

    @Test func runWritesASummaryWhoseAccountsBalance() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushswarm-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let outcome = try await run(["run", "Scenarios/quickstart.json", "--devices", "300", "--duration", "6h", "--seed", "5", "--out", directory.path])
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.output.contains("Requests by operation"))
        #expect(outcome.output.contains("Ledger"))
        let summary = try JSONParser.parse(Array(try Data(contentsOf: directory.appendingPathComponent("summary.json"))))
        #expect(summary["schema"] == 1)
        #expect(summary["scenario"] == "quickstart")
        #expect(summary["seed"] == 5)
        #expect(summary["devices"] == 300)
        #expect(summary["simulatedSeconds"] == 21_600)
        let requests = summary["requests"]
        let byStatus = requests?["byStatus"]?.objectValue?.members.reduce(0.0) { $0 + ($1.value.numberValue ?? 0) } ?? -1
        let sent = requests?["sent"]?.numberValue ?? 0
        #expect(sent > 0)
        #expect(sent == byStatus + (requests?["transportErrors"]?.numberValue ?? -1) + (requests?["timeouts"]?.numberValue ?? -1))
        #expect(summary["ledger"]?["lost"] == 0)
        for key in ["p50", "p90", "p99", "p999", "max"] {
            #expect(summary["operations"]?["smartapppush.events"]?["latencyMs"]?[key]?.numberValue != nil, "\(key)")
        }
    }

    /// A `--duration` shorter than the scenario's runs a part of it; the campaigns after its end
    /// are left out, and the run says which (it once went on without them, silently).
    @Test func aDurationThatEndsBeforeACampaignSaysTheCampaignIsLeftOut() async throws {
        let directory = NSTemporaryDirectory() + "pushswarm-short-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func run(_ duration: String) async throws -> (Outcome, JSONValue) {
            let outcome = try await self.run(["run", "Tests/Fixtures/warm-up-pushexpress.json", "--duration", duration, "--out", directory + "/" + duration, "--quiet"])
            #expect(outcome.status == 0, "\(outcome.error)")
            let summary = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + duration + "/summary.json"))))
            return (outcome, summary)
        }
        func launched(_ summary: JSONValue) -> Double { summary["counters"]?["campaigns.launched"]?.numberValue ?? 0 }
        let (short, shortSummary) = try await run("800ms")
        #expect(short.error.contains(#"note: --duration 800ms ends the run before a campaign, left out: "offer" at 1s ($.campaigns[0].at)"#), "\(short.error)")
        let (long, longSummary) = try await run("2s")
        #expect(!long.error.contains("left out"), "\(long.error)")
        #expect(launched(shortSummary) == 0 && launched(longSummary) == 1, "campaigns launched: \(launched(shortSummary)), \(launched(longSummary))")
    }

    @Test func aFailingThresholdExitsNinetyNineAndFailsItsJUnitCase() async throws {
        let directory = NSTemporaryDirectory() + "pushswarm-thresholds-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let junit = directory + "/junit.xml"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let failing = try await run(["run", "Scenarios/meiro.json", "--threshold", "p50 < 1ms", "--threshold", "ledger.lost == 0", "--junit", junit, "--out", directory, "--quiet"])
        #expect(failing.status == 99)
        #expect(failing.error.contains("1 of 2 thresholds failed"))
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(xml.contains("failures=\"1\""))
        #expect(xml.contains("name=\"p50 &lt; 1ms\"><failure"))
        #expect(xml.contains("name=\"ledger.lost == 0\"/>"))
        // The report is written all the same.
        #expect(FileManager.default.fileExists(atPath: directory + "/summary.json"))
        let holding = try await run(["run", "Scenarios/meiro.json", "--threshold", "ledger.lost == 0", "--junit", junit, "--out", directory, "--quiet"])
        #expect(holding.status == 0)
        #expect(try String(contentsOfFile: junit, encoding: .utf8).contains("failures=\"0\""))
        // A threshold that cannot be read is bad input, named.
        let bad = try await run(["run", "Scenarios/meiro.json", "--threshold", "p99 < 200"])
        #expect(bad.status == 2 && bad.error.contains("--threshold: a time limit needs a unit"))
        // In a scenario file, the error names the JSON path.
        var object = try #require(try JSONParser.parse(Array(try Data(contentsOf: Self.root.appendingPathComponent("Scenarios/meiro.json")))).objectValue)
        object["thresholds"] = ["ledger.lost == 0", "rate(status=429) < lots"]
        let file = directory + "/bad-threshold.json"
        try Data(JSONWriter.bytes(of: .object(object))).write(to: URL(fileURLWithPath: file))
        let invalid = try await run(["validate", file])
        #expect(invalid.status == 2 && invalid.error.contains("$.thresholds[1]: \"lots\" is not a number"))
    }

    /// A reader of `--progress-json` that goes away (`| head -1`, or the `--workers` parent
    /// killed) ends the stream and nothing else: the run goes on to its report and exits 0. A
    /// write into the broken pipe once trapped (a `try!` inside FileHandle: SIGILL, no report).
    /// The pipe's reader is closed before the run starts, so that the first record meets it
    /// broken whatever the machine's load (`| head -1` read the first; on a busy machine the pipe
    /// held every later one before head had exited).
    @Test(.enabled(if: which("python3") != nil, "needs python3"))
    func aProgressStreamWhoseReaderWentAwayEndsAndTheRunReports() async throws {
        let directory = NSTemporaryDirectory() + "pushswarm-progress-closed-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let closedReader = "import os, subprocess, sys; r, w = os.pipe(); os.close(r); code = subprocess.call(sys.argv[1:], stdout=w); sys.exit(128 - code if code < 0 else code)"
        let outcome = try await run(
            ["-c", closedReader, Self.binary.path, "run", "Scenarios/quickstart.json", "--clock", "wall", "--duration", "2s", "--no-warm-up", "--progress-json", "--out", directory],
            executable: which("python3")!
        )
        #expect(outcome.status == 0, "\(outcome.error)")
        #expect(outcome.error.contains("--progress-json: standard output was closed; the progress stream ends here and the run goes on to its report"), "\(outcome.error)")
        #expect(FileManager.default.fileExists(atPath: directory + "/summary.json"))
    }
}
