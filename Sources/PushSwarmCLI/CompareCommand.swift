import Foundation
import PushSwarmMetrics

enum CompareCommand: Command {
    static let declaration = CommandDeclaration(
        synopsis: "pushswarm compare BASELINE CURRENT [options]",
        about: """
            Compares two runs of one scenario (report directories written by `pushswarm run` or
            `pushswarm merge`, or their metrics.json) and prints the changes that matter: throughput,
            latency percentiles overall and per operation, error and 429 rates, retry amplification,
            the ledger. Exits 1 when the current run is worse than the baseline beyond the tolerance;
            a latency percentile must also move past its sampling noise (the ranks either side of
            it that its samples could as well have put there), else it is "same (within noise)".
            The nightly recipe is in docs/nightly.md.
            """,
        options: [
            OptionDeclaration(
                "--tolerance", "P", "A relative change beyond P counts (default 10%).",
                check: OptionDeclaration.parsed("a share such as 10% or 0.1", by: share)
            ),
            OptionDeclaration(
                "--latency-floor", "D", "Latency changes smaller than D never count (default 1ms).",
                check: OptionDeclaration.parsed("a duration such as 1ms or 0.5ms", by: milliseconds)
            ),
            OptionDeclaration(
                "--rate-floor", "P", "Error and 429 rate changes smaller than P (percentage points)\nnever count (default 0.1%).",
                check: OptionDeclaration.parsed("a share such as 0.1% or 0.001", by: share)
            ),
            OptionDeclaration(
                "--min-samples", "N", "Judge percentiles and rates only with at least N samples in\nboth runs (default 100).",
                check: OptionDeclaration.parsed("a whole number from 0", by: { UInt64($0) })
            ),
            OptionDeclaration("--all", nil, "Show every row, not only the headline ones and the changes."),
            OptionDeclaration("--json", "FILE", "Also write the comparison as JSON for a CI job."),
            OptionDeclaration("--junit", "FILE", "Also write it as JUnit XML: a test case per row, failed when worse."),
        ],
        footer: """
            Exit codes: 0 no change worse than the tolerance, 1 worse, 2 bad input or an output
            file that cannot be written, 3 cannot judge (the runs differ in scenario, scenario
            file, seed, clock, fleet or length, a run's generator fell behind, or a headline figure
            has too few samples and nothing judged is worse).
            """
    )

    /// A share (`10%`, `0.1`) of zero or more.
    private static func share(_ text: String) -> Double? {
        Quantity.share(text).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// Milliseconds (`1ms`, `0.5ms`), zero or more.
    private static func milliseconds(_ text: String) -> Double? {
        Quantity.milliseconds(text).flatMap { $0 >= 0 ? $0 : nil }
    }

    static func run(_ arguments: Arguments) -> PushSwarmCommand.ExitCode {
        guard arguments.positionals.count == 2 else {
            PushSwarmCommand.printError("compare takes two runs, BASELINE and CURRENT\n\n\(usage)")
            return .badInput
        }
        // Checked as the words were parsed (CompareCommand.declaration).
        var options = Comparison.Options()
        if let tolerance = arguments.value("--tolerance").flatMap(share) { options.tolerance = tolerance }
        if let floor = arguments.value("--rate-floor").flatMap(share) { options.rateFloor = floor }
        if let floor = arguments.value("--latency-floor").flatMap(milliseconds) { options.latencyFloorMilliseconds = floor }
        if let samples = arguments.value("--min-samples").flatMap({ UInt64($0) }) { options.minimumSamples = samples }
        let baseline: Summary
        let current: Summary
        do {
            baseline = try ReportFiles.read(arguments.positionals[0])
            current = try ReportFiles.read(arguments.positionals[1])
        } catch {
            PushSwarmCommand.printError("\(error)")
            return .badInput
        }
        let comparison = Comparison(baseline: baseline, current: current, options: options)
        print("baseline \(baseline.runID) · current \(current.runID) · \(current.scenario)")
        print(comparison.render(everything: arguments.flags.contains("--all")))
        for (option, text) in [("--json", { JSONWriter.text(of: comparison.json, indent: 2) + "\n" }), ("--junit", { comparison.junit(scenario: current.scenario) })] {
            guard let path = arguments.value(option) else { continue }
            do {
                try Data(text().utf8).write(to: URL(fileURLWithPath: path))
            } catch {
                // Not "worse" (1): a CI job would read a full disk as a regression.
                PushSwarmCommand.printError("\(option): cannot write \(path): \(error.localizedDescription)")
                return .badInput
            }
        }
        switch comparison.outcome {
        case .same: return .success
        case .worse: return .failure
        case .cannotJudge: return .cannotJudge
        }
    }
}
