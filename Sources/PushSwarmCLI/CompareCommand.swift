import Foundation
import PushSwarmMetrics

enum CompareCommand: Command {
    static let declaration = CommandDeclaration(
        synopsis: "pushswarm compare BASELINE CURRENT [options]",
        about: """
            Compares two runs of one scenario (report directories written by `pushswarm run` or
            `pushswarm merge`, or their metrics.json) and prints the changes that matter: throughput,
            latency percentiles overall and per operation, error and 429 rates, retry amplification,
            the ledger. Exits 1 when the current run is worse than the baseline beyond the tolerance.
            The nightly recipe is in docs/nightly.md.
            """,
        options: [
            OptionDeclaration("--tolerance", "P", "A relative change beyond P counts (default 10%)."),
            OptionDeclaration("--latency-floor", "D", "Latency changes smaller than D never count (default 1ms)."),
            OptionDeclaration("--rate-floor", "P", "Error and 429 rate changes smaller than P (percentage points)\nnever count (default 0.1%)."),
            OptionDeclaration(
                "--min-samples", "N", "Judge percentiles and rates only with at least N samples in\nboth runs (default 100).",
                check: OptionDeclaration.wholeNumber(1...Int.max)
            ),
            OptionDeclaration("--all", nil, "Show every row, not only the headline ones and the changes."),
            OptionDeclaration("--json", "FILE", "Also write the comparison as JSON for a CI job."),
            OptionDeclaration("--junit", "FILE", "Also write it as JUnit XML: a test case per row, failed when worse."),
        ],
        footer: "Exit codes: 0 no change worse than the tolerance, 1 worse, 2 bad input."
    )

    static func run(_ arguments: Arguments) -> PushSwarmCommand.ExitCode {
        guard arguments.positionals.count == 2 else {
            PushSwarmCommand.printError("compare takes two runs, BASELINE and CURRENT\n\n\(usage)")
            return .badInput
        }
        var options = Comparison.Options()
        /// Reads option `name` with `parse` into `options`; false (the problem printed) when it does not read.
        func read<Value>(_ name: String, _ expected: String, _ parse: (String) -> Value?, into keyPath: WritableKeyPath<Comparison.Options, Value>) -> Bool {
            guard let text = arguments.value(name) else { return true }
            guard let value = parse(text) else {
                PushSwarmCommand.printError("\(name): expected \(expected), found \"\(text)\"")
                return false
            }
            options[keyPath: keyPath] = value
            return true
        }
        let nonNegativeShare = { (text: String) in Quantity.share(text).flatMap { $0 >= 0 ? $0 : nil } }
        guard read("--tolerance", "a share such as 10% or 0.1", nonNegativeShare, into: \.tolerance),
              read("--rate-floor", "a share such as 0.1% or 0.001", nonNegativeShare, into: \.rateFloor),
              read("--latency-floor", "a duration such as 1ms or 0.5ms", { Quantity.milliseconds($0).flatMap { $0 >= 0 ? $0 : nil } }, into: \.latencyFloorMilliseconds),
              read("--min-samples", "a whole number from 0", { UInt64($0) }, into: \.minimumSamples)
        else { return .badInput }
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
                PushSwarmCommand.printError("cannot write \(path): \(error.localizedDescription)")
                return .failure
            }
        }
        return comparison.isWorse ? .failure : .success
    }
}
