import Foundation
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmPlatforms
import PushSwarmTestSupport
import Testing

/// The scenario format has one definition: `ScenarioDecoder` reads it, `ScenarioEncoder` writes
/// it, and what one writes the other reads back to the same scenario. For every shipped scenario,
/// every fixture and a scenario `fit` wrote: decode, encode, decode again, and the two scenarios
/// hold the same values, field by field (a setting the encoder leaves out, or writes under a key
/// the decoder does not know, fails here: the decoder refuses unknown keys); encoding the second
/// gives the same text (a fixed point).
@Suite struct ScenarioRoundTripTests {
    private let cli = CommandLineTests()
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Every scenario the repository ships or tests with (not the bad ones, nor the schema).
    static var files: [String] {
        ["Scenarios", "Tests/Fixtures"].flatMap { folder -> [String] in
            let names = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path)) ?? []
            return names.filter { $0.hasSuffix(".json") && $0 != "schema.json" }.sorted().map { "\(folder)/\($0)" }
        }
    }

    @Test func everyShippedScenarioIsFound() {
        #expect(Self.files.contains("Scenarios/quickstart.json") && Self.files.count >= 25, "\(Self.files)")
    }

    @Test(arguments: files)
    func aScenarioReadsBackAsItWasWritten(file: String) throws {
        try Self.roundTrip(try Data(contentsOf: Self.root.appendingPathComponent(file)), file: file)
    }

    /// The scenario `fit` writes from the committed incident (a limit, a retry rule, campaigns),
    /// read back through the decoder, written by the encoder and read back again; and `validate
    /// --print` prints what the encoder writes.
    @Test func aFittedScenarioReadsBackAsItWasWritten() async throws {
        let directory = NSTemporaryDirectory() + "pushswarm-round-trip-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let fitted = directory + "/incident.json"
        let fit = try await cli.run([
            "fit", "Tests/Fixtures/logs/incident.log.gz", "--nginx-format", #"$remote_addr [$time_local] "$request" $status $request_time $msec"#, "--out", fitted,
        ])
        try #require(fit.status == 0, "\(fit.error)")
        let scenario = try Self.roundTrip(try Data(contentsOf: URL(fileURLWithPath: fitted)), file: "fitted")
        #expect(!scenario.campaigns.isEmpty && scenario.platforms.values.contains { !$0.mockBehaviour.rateLimits.isEmpty }, "the fit's limit and campaigns are in it")
        let printed = try await cli.run(["validate", fitted, "--print"])
        #expect(printed.status == 0, "\(printed.error)")
        #expect(printed.output == ScenarioEncoder().text(scenario), "validate --print writes what the encoder does")
    }

    /// Decodes `data`, encodes and decodes again; returns the scenario read first.
    @discardableResult
    static func roundTrip(_ data: Data, file: String) throws -> Scenario {
        let decoder = ScenarioDecoder(platforms: PlatformRegistry.all)
        let first = try decoder.decode(text: Array(data))
        let written = ScenarioEncoder().text(first)
        let second: Scenario
        do {
            second = try decoder.decode(text: Array(written.utf8))
        } catch {
            Issue.record("\(file): what the encoder wrote does not read: \(error)\n\(written)")
            return first
        }
        let (before, after) = (canonical(first), canonical(second))
        if before != after {
            let difference = zip(before.split(separator: ","), after.split(separator: ",")).first { $0 != $1 }
            Issue.record("\(file): read back differently, first at \(difference.map { "\($0.0) → \($0.1)" } ?? "the end")")
        }
        #expect(ScenarioEncoder().text(second) == written, "\(file): writing it again gives the same text")
        return first
    }

    /// A value's stored properties, all the way down, as text: a set's and a dictionary's members
    /// in a fixed order, a class by its properties and its superclasses' (not its identity).
    static func canonical(_ value: Any, depth: Int = 0) -> String {
        guard depth < 40 else { return "…" }
        let mirror = Mirror(reflecting: value)
        let children = mirror.storedChildren.map { (label: $0.label, text: canonical($0.value, depth: depth + 1)) }
        switch mirror.displayStyle {
        case .set?, .dictionary?:
            return "{" + children.map(\.text).sorted().joined(separator: ",") + "}"
        case .optional?:
            return children.first?.text ?? "nil"
        default:
            guard !children.isEmpty else { return String(reflecting: value) }
            return "\(mirror.subjectType)(" + children.map { "\($0.label ?? ""):\($0.text)" }.joined(separator: ",") + ")"
        }
    }
}

/// metrics.json, the archive `merge` and `compare` read: what a real run wrote reads back to the
/// same summary, field by field, and writing that again gives the file's own bytes; summary.json
/// is written from the same value.
@Suite struct ArchiveRoundTripTests {
    private let cli = CommandLineTests()

    @Test func aRunsMetricsJSONReadsBackAsItWasWritten() async throws {
        let directory = NSTemporaryDirectory() + "pushswarm-archive-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The quickstart's campaign and storm (ticks, marks, ledgers, retries, drops) on a small fleet.
        let run = try await cli.run(["run", "Scenarios/quickstart.json", "--devices", "2000", "--out", directory, "--quiet"])
        try #require(run.status == 0, "\(run.error)")
        let written = try String(contentsOfFile: directory + "/metrics.json", encoding: .utf8)
        let summary = try SummaryArchive.read(written)
        #expect(summary.metrics.sent > 1_000 && !summary.metrics.timeline.ticks.isEmpty && !summary.metrics.marks.isEmpty, "a run with a storm in it")
        #expect(SummaryArchive.text(of: summary) == written, "writing what was read gives the file's own bytes")
        let again = try SummaryArchive.read(SummaryArchive.text(of: summary))
        #expect(ScenarioRoundTripTests.canonical(again) == ScenarioRoundTripTests.canonical(summary))
        let readable = try String(contentsOfFile: directory + "/summary.json", encoding: .utf8)
        #expect(summary.jsonText == readable, "summary.json is the read summary's, byte for byte")
    }
}
