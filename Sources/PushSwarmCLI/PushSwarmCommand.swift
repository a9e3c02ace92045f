import Foundation
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmPlatforms

/// The `pushswarm` command line: each command's options declared once, its words parsed and
/// checked, the modules wired, the outcome printed and returned as an exit code.
public enum PushSwarmCommand {
    static let version = "0.1.0"

    /// Exit codes, documented in the README.
    public enum ExitCode: Int32, Error {
        case success = 0
        /// The run could not be carried out (a report could not be written).
        case failure = 1
        /// Bad input: a scenario file, a flag, a command.
        case badInput = 2
        /// `compare`: the two runs cannot be judged against each other (not the same load, or too
        /// few samples), neither the same nor worse.
        case cannotJudge = 3
        /// The run finished and its report is written, but a threshold failed.
        case thresholdsFailed = 99
    }

    /// The commands: a name, what it is, and a line for the overview.
    static let commands: [(name: String, command: any Command.Type, summary: String)] = [
        ("run", RunCommand.self, "Run a scenario and write its report (`--shard I/N`, `--workers N`: sharded)."),
        ("capacity", CapacityCommand.self, "Step an open load up until an objective breaks: the highest rate that held."),
        ("mock", MockCommand.self, "Serve the built-in mock services on real sockets until Ctrl-C."),
        ("bench", BenchCommand.self, "Closed-loop HTTP load like wrk, with each device's own requests."),
        ("merge", MergeCommand.self, "Add the reports of a sharded run into one (exact histograms)."),
        ("compare", CompareCommand.self, "Compare two runs' reports: exit 1 when the current is worse (nightly runs)."),
        ("fit", FitCommand.self, "Read a push platform's access logs: the load they recorded."),
        ("validate", ValidateCommand.self, "Check a scenario file without running it."),
    ]

    /// The overview: each command's synopsis and summary from its declaration.
    static var usage: String {
        let synopses = commands.map { "  " + $0.command.declaration.synopsis } + ["  pushswarm help | --help | --version"]
        let summaries = commands.map { "  " + $0.name.padding(toLength: 11, withPad: " ", startingAt: 0) + $0.summary }
        return """
            pushswarm \(version): simulate fleets of app installs talking to push platforms.

            Usage:
            \(synopses.joined(separator: "\n"))

            Commands (`pushswarm COMMAND --help` for each one's options):
            \(summaries.joined(separator: "\n"))

            Exit codes: 0 success, 1 run failed (compare: the current run is worse), 2 bad input
            (scenario file, flag or command), 99 a threshold failed (the report is still written).
            """
    }

    /// Runs the command `words` name (the words after the program's name) and says how it ended.
    public static func main(_ words: [String]) async -> ExitCode {
        var words = words
        let name = words.isEmpty ? "help" : words.removeFirst()
        if let entry = commands.first(where: { $0.name == name }) { return await entry.command.main(words) }
        switch name {
        case "help", "--help", "-h":
            print(usage)
            return .success
        case "--version", "version":
            print("pushswarm \(version)")
            return .success
        default:
            printError("unknown command \"\(name)\"\n\n\(usage)")
            return .badInput
        }
    }

    static func printError(_ message: String) {
        FileHandle.standardError.write(Data(("pushswarm: " + message + "\n").utf8))
    }

    /// The `--target` words, which only a wall-clock run takes; nil (the problem printed) otherwise.
    static func targetArguments(_ arguments: Arguments, clock: Scenario.ClockKind) -> [String]? {
        let words = arguments.values("--target")
        if !words.isEmpty && clock != .wall {
            printError("--target needs --clock wall (a simulated run answers from the built-in mocks)")
            return nil
        }
        return words
    }

    /// The `--threshold` options, read; a bad one names the option.
    static func thresholdArguments(_ arguments: Arguments) throws(ScenarioError) -> [Threshold] {
        var thresholds: [Threshold] = []
        for text in arguments.values("--threshold") {
            do { thresholds.append(try Threshold(parsing: text)) } catch { throw ScenarioError(path: "--threshold", message: error.message) }
        }
        return thresholds
    }

    /// The one scenario file `command` takes, read and validated; nil (the problem printed) otherwise.
    static func loadScenarioArgument(_ arguments: Arguments, command: String, usage: String) -> Scenario? {
        guard arguments.positionals.count == 1, let path = arguments.positionals.first else {
            printError("\(command) takes one scenario file\n\n\(usage)")
            return nil
        }
        return loadScenario(path)
    }

    /// Reads and validates a scenario file, printing what is wrong when it is not valid.
    static func loadScenario(_ path: String) -> Scenario? {
        guard let data = FileManager.default.contents(atPath: path) else {
            let exists = FileManager.default.fileExists(atPath: path)
            printError(exists ? "cannot read \(path)" : "no such file: \(path)")
            return nil
        }
        do {
            return try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array(data))
        } catch let error as ScenarioError {
            printError("\(path): \(error)")
        } catch {
            printError("\(path): \(error)")
        }
        return nil
    }
}
