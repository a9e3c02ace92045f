import Foundation
import PushSwarmCore
import PushSwarmMetrics

enum RunCommand {
    static let usage = """
        Usage: pushswarm run FILE [options]

        Runs the scenario in FILE and writes Reports/<run-id>/summary.json.

        Options:
          --seed N            Seed for all randomness (default: the scenario's, else 1).
                              The same scenario and seed give the same summary.
          --devices N         Number of devices, overriding the scenario.
          --duration D        Run length: seconds, or with units (90s, 30m, 24h).
          --clock KIND        simulated (default): discrete-event time, no waiting.
                              wall: real time over sockets (not in this build yet).
          --out DIR           Write the report into DIR instead of Reports/<run-id>.
          --quiet             Print only the path of the summary.
          -h, --help          Show this help.
        """

    static func main(_ words: [String]) async -> PushSwarmCommand.ExitCode {
        let arguments: Arguments
        do {
            arguments = try Arguments(words, valued: ["--seed", "--devices", "--duration", "--clock", "--out"], switches: ["--help", "--quiet"])
        } catch {
            PushSwarmCommand.printError("\(error.message)\n\n\(usage)")
            return .badInput
        }
        if arguments.flags.contains("--help") {
            print(usage)
            return .success
        }
        guard arguments.positionals.count == 1, let path = arguments.positionals.first else {
            PushSwarmCommand.printError("run takes one scenario file\n\n\(usage)")
            return .badInput
        }
        guard var scenario = PushSwarmCommand.loadScenario(path) else { return .badInput }
        do {
            try applyOverrides(arguments, to: &scenario)
        } catch {
            PushSwarmCommand.printError(error.description)
            return .badInput
        }
        guard scenario.clock == .simulated else {
            PushSwarmCommand.printError("--clock wall: wall-clock runs over real sockets are not in this build yet; use --clock simulated")
            return .badInput
        }

        let result = await Run.simulated(scenario).run()
        let runID = makeRunID(scenario: scenario)
        let directory = arguments.value("--out") ?? "Reports/\(runID)"
        let summary = result.summary(runID: runID, version: PushSwarmCommand.version)
        let summaryPath = (directory as NSString).appendingPathComponent("summary.json")
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data(summary.jsonText.utf8).write(to: URL(fileURLWithPath: summaryPath))
        } catch {
            PushSwarmCommand.printError("cannot write the report to \(summaryPath): \(error.localizedDescription)")
            print(TerminalReport.render(summary, reportPath: nil))
            return .failure
        }
        if arguments.flags.contains("--quiet") {
            print(summaryPath)
        } else {
            print(TerminalReport.render(summary, reportPath: summaryPath))
        }
        return .success
    }

    static func applyOverrides(_ arguments: Arguments, to scenario: inout Scenario) throws(ScenarioError) {
        if let text = arguments.value("--seed") {
            guard let seed = UInt64(text) else { throw ScenarioError(path: "--seed", message: "expected a whole number from 0, found \"\(text)\"") }
            scenario.seed = seed
        }
        if let text = arguments.value("--devices") {
            guard let devices = Int(text), devices >= 1, devices <= 10_000_000 else {
                throw ScenarioError(path: "--devices", message: "expected a whole number from 1 to 10000000, found \"\(text)\"")
            }
            scenario.devices = devices
        }
        if let text = arguments.value("--duration") {
            guard let duration = TimeSpan(parsing: text), duration > .zero, duration <= .days(366) else {
                throw ScenarioError(path: "--duration", message: "expected a duration above zero and at most 366 days, such as 3600, 90s, 30m or 24h; found \"\(text)\"")
            }
            scenario.duration = duration
        }
        if let text = arguments.value("--clock") {
            guard let clock = Scenario.ClockKind(rawValue: text) else {
                throw ScenarioError(path: "--clock", message: "expected simulated or wall, found \"\(text)\"")
            }
            scenario.clock = clock
        }
    }

    /// `quickstart-20261121-140502-s1`, made unique within Reports/ if two runs share a second.
    static func makeRunID(scenario: Scenario) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        let base = "\(scenario.name)-\(formatter.string(from: Date()))-s\(scenario.seed)"
        var candidate = base
        var suffix = 2
        while FileManager.default.fileExists(atPath: "Reports/\(candidate)") {
            candidate = "\(base)-\(suffix)"
            suffix += 1
        }
        return candidate
    }
}
