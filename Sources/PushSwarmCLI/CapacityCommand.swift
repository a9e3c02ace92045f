import Foundation
import PushSwarmCore
import PushSwarmMetrics

/// `pushswarm capacity FILE --slo 'p99<200ms,errors<1%'`: the highest open-model rate at which
/// the service still meets the objective.
enum CapacityCommand: Command {
    static let declaration = CommandDeclaration(
        synopsis: "pushswarm capacity FILE --slo OBJECTIVE [--threshold EXPR ...] [options]",
        about: """
            Steps the arrival rate of FILE's open-workload groups up (doubling from --from) until the
            objective breaks, then narrows the gap to --precision, running the scenario once per step
            for its duration. Prints the step table and the highest rate that held, and writes
            capacity.json. A step PushSwarm could not put on (its lag, missed starts, its CPU, or
            arrivals shed on busy devices while the service answered within the objective) is
            PushSwarm's limit, not the service's: run again, and if it stays so the search ends
            "limited by PushSwarm at X/s" instead of claiming a capacity for the service.
            """,
        options: [
            OptionDeclaration(
                "--slo", "OBJECTIVE",
                """
                pNN<duration and/or errors<percent, e.g. 'p99<200ms,errors<1%'.
                Errors are answers other than 1xx-3xx, transport errors, timeouts.
                """
            ),
            SharedOptions.threshold.help(
                """
                A further condition each step must meet, as for `run`, such as
                'p99(smartapppush.events) < 150ms' or 'rate(status=429) < 0.5%';
                repeat for several. With thresholds, --slo may be left out.
                """
            ),
            OptionDeclaration("--from", "RATE", "First step (default 10/s)."),
            OptionDeclaration("--precision", "P", "Stop when the gap is within P of the rate that held (default 2%)."),
            SharedOptions.clock.help(
                """
                simulated (default) or wall (each step in real time, against the
                built-in mocks or --target).
                """
            ).declaration,
            SharedOptions.target.help("Wall clock: the service to measure, as for `run`."),
            SharedOptions.insecure, SharedOptions.caFile,
            SharedOptions.warmUp.help("With --target: have the installs register before each step\n(default as for `run`)."),
            SharedOptions.noWarmUp.help("With --target: skip the installs' registration before each step."),
            SharedOptions.seed.declaration, SharedOptions.devices.declaration,
            SharedOptions.duration.help("Each step's length: seconds, or with units (90s, 30m).").declaration,
            SharedOptions.maxWaiting.declaration,
            OptionDeclaration("--out", "DIR", "Write capacity.json into DIR instead of Reports/<run-id>."),
        ]
    )

    static func run(_ arguments: Arguments) async -> PushSwarmCommand.ExitCode {
        guard var scenario = PushSwarmCommand.loadScenarioArgument(arguments, command: "capacity", usage: usage) else { return .badInput }
        var search: CapacitySearch
        do {
            for note in RunCommand.applyOverrides(arguments, to: &scenario) { PushSwarmCommand.printError("note: \(note)") }
            let thresholds = try PushSwarmCommand.thresholdArguments(arguments)
            var objective = ServiceLevelObjective(latencyQuantile: 0.99)
            if let sloText = arguments.value("--slo") {
                objective = try ServiceLevelObjective(parsing: sloText)
            } else if thresholds.isEmpty {
                throw ScenarioError(path: "--slo", message: "is required (or --threshold), e.g. --slo 'p99<200ms,errors<1%'")
            }
            var start = 10.0
            if let text = arguments.value("--from") { start = try JSONReader(.string(text), path: "--from").ratePerSecond() }
            var precision = 0.02
            if let text = arguments.value("--precision") {
                guard let number = Quantity.share(text), number > 0, number < 1 else { throw ScenarioError(path: "--precision", message: "expected a share such as 2% or 0.02, found \"\(text)\"") }
                precision = number
            }
            search = try CapacitySearch(scenario: scenario, objective: objective, startRate: start, precision: precision)
            search.thresholds = thresholds
        } catch {
            PushSwarmCommand.printError("\(error)")
            return .badInput
        }
        guard let targetWords = PushSwarmCommand.targetArguments(arguments, clock: scenario.clock) else { return .badInput }
        let quantile = Quantity.name(ofQuantile: search.objective.latencyQuantile)
        let goals = ([search.objective.description].filter { !$0.isEmpty } + search.thresholds.map(\.text)).joined(separator: ", ")
        print("capacity search: \(scenario.name), \(goals), steps of \(scenario.duration) in \(scenario.clock.rawValue) time")
        print("rate/s      sent  \(quantile.padding(toLength: 10, withPad: " ", startingAt: 0))  errors  held")
        var failedToRun = false
        let outcome = await search.run({ stepped in
            if stepped.clock == .wall {
                guard let result = await RunCommand.runWall(stepped, arguments: arguments, targetWords: targetWords, quiet: true) else {
                    failedToRun = true
                    return CapacityRun(metrics: RunMetrics())
                }
                return CapacityRun(metrics: result.metrics, cpuBusy: result.cpuBusy, pendingAtEnd: result.pendingAtEnd)
            }
            return CapacityRun(metrics: await Run.simulated(stepped).run().metrics)
        }, progress: { step in
            let latency = step.latency.map { String(format: "%.2f ms", Double($0) / 1_000) } ?? "-"
            let limit = step.generatorLimit.map { " (PushSwarm's limit, not the service's: \($0))" } ?? ""
            print("\(String(format: "%-8.2f", step.rate)) \(String(format: "%7d", step.sent))  \(latency.padding(toLength: 10, withPad: " ", startingAt: 0))  \(String(format: "%5.2f%%", step.errorRate * 100))  \(step.held ? "yes" : "no")\(limit)\(step.failedThresholds.isEmpty ? "" : " (" + step.failedThresholds.joined(separator: "; ") + ")")")
        })
        if failedToRun { return .badInput }
        let steps = outcome.steps
        let capacity = outcome.capacity
        if let limit = outcome.generatorLimit {
            let held = outcome.held.map { String(format: "%.2f", $0) + " requests/s" } ?? "no rate tried"
            let why = steps.last(where: { $0.rate == limit })?.generatorLimit ?? "it fell behind"
            print("capacity: limited by PushSwarm at \(String(format: "%.2f", limit)) requests/s (\(why)); the service held \(held) \(goals), so its capacity is at least that, not known.")
            print("  To measure further: more devices (--devices) if arrivals were shed on busy devices; more cores for PushSwarm, or shards on more machines (--workers N, --shard I/N), if its lag or CPU was the limit.")
        } else if let capacity {
            print("capacity: \(String(format: "%.2f", capacity)) requests/s held \(goals)")
        } else {
            print("capacity: not found: the objective did not hold at any rate tried")
        }
        let report = CapacityReport(
            scenario: scenario.name, objective: search.objective.description, thresholds: search.thresholds.map(\.text), outcome: outcome
        )
        let directory = arguments.value("--out") ?? "Reports/\(RunCommand.makeRunID(scenario: scenario))-capacity"
        let file = (directory as NSString).appendingPathComponent("capacity.json")
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try Data(report.text.utf8).write(to: URL(fileURLWithPath: file))
        } catch {
            PushSwarmCommand.printError("cannot write \(file): \(error.localizedDescription)")
            return .failure
        }
        print("Capacity report written to \(file)")
        return .success
    }
}
