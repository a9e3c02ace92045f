import Foundation
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
    func eachFormatsLogIsReadAndCounted(arguments: [String], unread: String) throws {
        let run = try cli.run(["fit"] + arguments)
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
    @Test func aBadLogExitsTwoNamingTheLine() throws {
        let wrongFormat = try cli.run(["fit", "Tests/Fixtures/logs/combined.log", "--format", "alb"])
        #expect(wrongFormat.status == 2)
        #expect(wrongFormat.error.contains("9 of 9 lines are not access log records in this format; the first: Tests/Fixtures/logs/combined.log:1:"), "\(wrongFormat.error)")
        let scenario = try cli.run(["fit", "Scenarios/quickstart.json"])
        #expect(scenario.status == 2)
        #expect(scenario.error.contains("Scenarios/quickstart.json:1:"), "\(scenario.error)")
        let definition = try cli.run(["fit", "Tests/Fixtures/logs/custom.log", "--nginx-format", "$remote_addr $status"])
        #expect(definition.status == 2)
        #expect(definition.error.contains("--nginx-format: the format has no time"), "\(definition.error)")
        let missing = try cli.run(["fit", "/nonexistent/access.log"])
        #expect(missing.status == 2)
        #expect(missing.error.contains("cannot open /nonexistent/access.log"), "\(missing.error)")
        let none = try cli.run(["fit"])
        #expect(none.status == 2)
    }
}
