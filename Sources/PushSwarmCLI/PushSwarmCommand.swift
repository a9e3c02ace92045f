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
        /// The run finished and its report is written, but a threshold failed.
        case thresholdsFailed = 99
    }

    static let usage = """
        pushswarm \(version): simulate fleets of app installs talking to push platforms.

        Usage:
          pushswarm run FILE [--seed N] [--devices N] [--duration D] [--clock simulated|wall] [--target URL] [--out DIR]
                             [--threshold EXPR ...] [--junit FILE]
          pushswarm capacity FILE --slo 'p99<200ms,errors<1%' [--threshold EXPR ...] [--from RATE] [--clock wall]
          pushswarm mock [FILE] [--listen ADDRESS:PORT]
          pushswarm bench URL [--connections N] [--duration D]
          pushswarm run FILE --shard I/N | --workers N
          pushswarm merge DIR... [--out DIR] [--threshold EXPR ...]
          pushswarm compare BASELINE CURRENT [--tolerance 10%] [--json FILE]
          pushswarm validate FILE
          pushswarm help | --help | --version

        Commands:
          run        Run a scenario and write its report (see `pushswarm run --help`).
          capacity   Step an open load up until an objective breaks: the highest rate that held.
          mock       Serve the built-in mock services on real sockets until Ctrl-C.
          bench      Closed-loop HTTP load like wrk, with each device's own requests.
          merge      Add the reports of a sharded run into one (exact histograms).
          compare    Compare two runs' reports: exit 1 when the current is worse (nightly runs).
          validate   Check a scenario file without running it.

        Exit codes: 0 success, 1 run failed (compare: the current run is worse), 2 bad input
        (scenario file, flag or command), 99 a threshold failed (the report is still written).
        """

    /// Runs the command `words` name (the words after the program's name) and says how it ended.
    public static func main(_ words: [String]) async -> ExitCode {
        var words = words
        let command = words.isEmpty ? "help" : words.removeFirst()
        let code: ExitCode
        switch command {
        case "run": code = await RunCommand.main(words)
        case "capacity": code = await CapacityCommand.main(words)
        case "mock": code = await MockCommand.main(words)
        case "bench": code = await BenchCommand.main(words)
        case "validate": code = await ValidateCommand.main(words)
        case "compare": code = await CompareCommand.main(words)
        case "merge": code = await MergeCommand.main(words)
        case "help", "--help", "-h":
            print(usage)
            code = .success
        case "--version", "version":
            print("pushswarm \(version)")
            code = .success
        default:
            printError("unknown command \"\(command)\"\n\n\(usage)")
            code = .badInput
        }
        return code
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
