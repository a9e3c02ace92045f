import Foundation
import PushSwarmCore
import PushSwarmMetrics

enum MergeCommand: Command {
    static let declaration = CommandDeclaration(
        synopsis: "pushswarm merge DIR... [options]",
        about: """
            Adds up the reports of a sharded run (`pushswarm run --shard i/N --out DIR`, one DIR per
            shard, from any number of machines) into one report, as if one process had run the whole
            fleet: counts add, latency histograms merge bucket by bucket (percentiles are exact, not
            averaged), time series add interval by interval. The run's thresholds are judged on the
            whole. Every shard 1..N must be there exactly once.
            """,
        options: [
            OptionDeclaration("--out", "DIR", "Write the merged report into DIR (default Reports/<scenario>-merged-…)."),
            SharedOptions.threshold.help("A condition the whole run must meet, besides the run's own; repeat\nfor several. Any failing: exit 99."),
            SharedOptions.junit,
            SharedOptions.quiet.help("Print only the path of the merged summary."),
        ]
    )

    static func run(_ arguments: Arguments) -> PushSwarmCommand.ExitCode {
        guard !arguments.positionals.isEmpty else {
            PushSwarmCommand.printError("merge takes the report directories of a sharded run\n\n\(usage)")
            return .badInput
        }
        var summary: Summary
        do {
            summary = try merge(arguments.positionals)
        } catch {
            PushSwarmCommand.printError("\(error)")
            return .badInput
        }
        var thresholds: [Threshold] = []
        do {
            for (position, text) in summary.thresholds.enumerated() {
                do { thresholds.append(try Threshold(parsing: text)) } catch { throw ScenarioError(path: "thresholds[\(position)] of the shards' run", message: error.message) }
            }
            thresholds += try PushSwarmCommand.thresholdArguments(arguments)
        } catch {
            PushSwarmCommand.printError("\(error)")
            return .badInput
        }
        summary.thresholds = thresholds.map(\.text)
        summary.runID = "\(summary.scenario)-merged-\(RunCommand.timestamp())-s\(summary.seed)"
        let directory = arguments.value("--out") ?? "Reports/\(summary.runID)"
        return RunCommand.report(summary, to: directory, thresholds: thresholds, arguments: arguments)
    }

    struct MergeError: Error, CustomStringConvertible {
        var description: String
    }

    /// The shards' summaries added into one; refuses shards of different runs, repeated shards and
    /// missing ones (a merge without them would undercount). Shards `onOneMachine` kept it as busy
    /// as the sum of their CPU shares; from several machines, the busiest one's share stands.
    static func merge(_ paths: [String], onOneMachine: Bool = false) throws -> Summary {
        var merged: Summary?
        var cpuShares: [Double] = []
        var seen: [Int: String] = [:]
        var count: Int?
        for path in paths {
            let shard = try ReportFiles.read(path)
            guard let part = shard.shard else {
                throw MergeError(description: "\(path): not a shard's report (it was not run with --shard i/N)")
            }
            if let count, count != part.count {
                throw MergeError(description: "\(path): shard \(part.index)/\(part.count) is from a run of \(count) shards")
            }
            count = part.count
            if let other = seen[part.index] {
                throw MergeError(description: "\(path): shard \(part.index)/\(part.count) is already in \(other)")
            }
            seen[part.index] = path
            if let share = shard.cpuBusy { cpuShares.append(share) }
            guard var whole = merged else {
                merged = shard
                continue
            }
            for (name, mine, theirs) in [("scenario", whole.scenario, shard.scenario), ("seed", String(whole.seed), String(shard.seed)), ("clock", whole.clock, shard.clock)] where mine != theirs {
                throw MergeError(description: "\(path): a shard of another run (\(name) \(theirs), not \(mine))")
            }
            guard whole.metrics.timeline.intervalMicroseconds == shard.metrics.timeline.intervalMicroseconds else {
                throw MergeError(description: "\(path): a shard of another run (its time series has another interval)")
            }
            // Ticks of different lengths cannot be added up (an archive from before ticks has none).
            guard whole.metrics.timeline.ticks.isEmpty || shard.metrics.timeline.ticks.isEmpty
                || whole.metrics.timeline.tickMicroseconds == shard.metrics.timeline.tickMicroseconds
            else {
                throw MergeError(description: "\(path): a shard of another run (its ticks are \(shard.metrics.timeline.tickMicroseconds) µs long, not \(whole.metrics.timeline.tickMicroseconds) µs)")
            }
            whole.merge(shard)
            merged = whole
        }
        guard var whole = merged, let count else { throw MergeError(description: "nothing to merge") }
        let missing = (1...count).filter { seen[$0] == nil }
        guard missing.isEmpty else {
            throw MergeError(description: "shard\(missing.count == 1 ? "" : "s") \(missing.map { "\($0)/\(count)" }.joined(separator: ", ")) missing: a merge without \(missing.count == 1 ? "it" : "them") would undercount the run")
        }
        whole.shard = nil
        whole.mergedFrom = count
        if onOneMachine && !cpuShares.isEmpty { whole.cpuBusy = cpuShares.reduce(0, +) }
        return whole
    }
}
