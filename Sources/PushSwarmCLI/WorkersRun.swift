import Foundation
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmNet
import PushSwarmSystem
import Synchronization

/// `pushswarm run FILE --workers N`: the fleet as N shard processes of this same binary, each
/// with its own built-in mock (or all against the same --target), then merged into one report.
///
/// Why processes: a process may open only so many files (20,000 here), and each socket is one
/// (two with the in-process mock: both ends). N processes hold N times as many, and use the
/// machine's cores. The shards are exactly those of `--shard i/N`, so the merged report is the
/// one `pushswarm merge` would make of them.
enum WorkersRun {
    /// What every shard process is given besides its `--shard`, `--out` and `--quiet`: the run's
    /// id, each option `run` declares `.forwarded` as it was given (`OptionDeclaration.shards`),
    /// and, for a wall run without a calendar start, this process's (one calendar for all).
    static func shardArguments(_ arguments: Arguments, runID: String, scenario: Scenario) -> [String] {
        var forwarded: [String] = ["--run-id", runID]
        for option in RunCommand.declaration.options where option.shards == .forwarded {
            if option.value == nil {
                if arguments.flags.contains(option.name) { forwarded.append(option.name) }
            } else {
                for value in arguments.values(option.name) { forwarded += [option.name, value] }
            }
        }
        if scenario.clock == .wall, !scenario.startIsExplicit {
            // One calendar for every worker: today's, as this process reads it (from when they
            // all start, with --start-at).
            let now = Int64(Date().timeIntervalSince1970)
            let calendarStart = arguments.value(RunCommand.startAt) ?? now
            forwarded += ["--start", String(max(now, calendarStart))]
        }
        return forwarded
    }

    /// `onProgress` (the parent's progress line, `--metrics-listen`, `--dashboard`) gets the whole
    /// run's progress, made of what the shards stream (`LiveShards`), as each shard reports;
    /// `finishProgress` runs once the shards are done, before the report.
    static func main(
        _ scenario: Scenario, workers: Int, runID: String, directory: String, arguments: Arguments,
        onProgress: (@Sendable (RunProgress) -> Void)?, listeners: [any LiveEndpoint], finishProgress: () -> Void
    ) async -> PushSwarmCommand.ExitCode {
        guard let file = arguments.positionals.first else { return .badInput }
        let forwarded = shardArguments(arguments, runID: runID, scenario: scenario)

        let quiet = arguments.flags.contains("--quiet")
        if !quiet {
            print("\(workers) shard processes of \(TerminalReport.group(UInt64(scenario.devices))) devices (\(scenario.clock.rawValue) clock); shard reports in \(directory)/shard-I")
        }
        // Each shard runs in its own process group, so Ctrl-C reaches this process alone: it passes
        // it on, each shard stops early and writes its report, and this process merges them. A
        // second Ctrl-C stops the shards without reports.
        let started = Mutex<[Process]>([])
        Signals.onInterrupt({
            for process in started.withLock({ $0 }) where process.isRunning { process.interrupt() }
        }, again: {
            for process in started.withLock({ $0 }) where process.isRunning { process.terminate() }
        })
        // The binary itself, by its path (ps shows it as pushswarm, not /proc/self/exe).
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let board = LiveShards.Board(shards: workers)
        // One progress at a time reaches the listeners, in the order the board made them.
        let publishing = Mutex(())
        var processes: [(shard: Int, process: Process, directory: String)] = []
        let expectation = LiveShards.Expectation(durationMicroseconds: scenario.duration.microseconds, devices: scenario.devices)
        var readers: [(shard: Int, reader: LiveShards.SharedReader)] = []
        for index in 1...workers {
            let shardDirectory = (directory as NSString).appendingPathComponent("shard-\(index)")
            let process = Process()
            process.executableURL = executable
            process.arguments = ["run", file, "--shard", "\(index)/\(workers)", "--out", shardDirectory, "--quiet"] + forwarded
            if let onProgress {
                process.arguments?.append("--progress-json")
                let output = Pipe()
                let shared = LiveShards.SharedReader(expecting: expectation)
                readers.append((index, shared))
                output.fileHandleForReading.readabilityHandler = { handle in
                    let bytes = handle.availableData
                    guard !bytes.isEmpty else {
                        handle.readabilityHandler = nil
                        return
                    }
                    for record in shared.reader.withLock({ $0.feed(bytes) }) {
                        publishing.withLock { _ in onProgress(board.update(shard: index, with: record)) }
                    }
                }
                process.standardOutput = output
                // A shard that ends is marked at once: killed, its last counts would otherwise
                // read as live until the run ends.
                process.terminationHandler = { ended in
                    guard ended.terminationReason != .exit || ended.terminationStatus != 0 else {
                        _ = board.ended(shard: index, .finished)
                        return
                    }
                    let why = ended.terminationReason == .uncaughtSignal ? "signal \(ended.terminationStatus)" : "exit \(ended.terminationStatus)"
                    publishing.withLock { _ in onProgress(board.ended(shard: index, .stopped(why: why))) }
                }
            } else {
                process.standardOutput = FileHandle.nullDevice
            }
            do {
                try process.run()
            } catch {
                PushSwarmCommand.printError("cannot start shard \(index)/\(workers): \(error.localizedDescription)")
                for (_, started, _) in processes { started.terminate() }
                return .failure
            }
            processes.append((index, process, shardDirectory))
            started.withLock { $0.append(process) }
        }
        var failed: [String] = []
        for (index, process, _) in processes {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                DispatchQueue.global().async {
                    process.waitUntilExit()
                    continuation.resume()
                }
            }
            // A shard judges no thresholds; the whole run is judged after the merge.
            let status = process.terminationStatus
            if process.terminationReason == .uncaughtSignal || status != 0 {
                failed.append("shard \(index)/\(workers) exited with \(process.terminationReason == .uncaughtSignal ? "signal " : "status ")\(status)")
            }
        }
        finishProgress()
        for (index, reader) in readers {
            if let refusals = reader.reader.withLock({ $0.refusals }) {
                FileHandle.standardError.write(Data("pushswarm: shard \(index)/\(workers)'s progress stream: \(refusals); the merged report is read from its files\n".utf8))
            }
        }
        guard failed.isEmpty else {
            PushSwarmCommand.printError(failed.joined(separator: "; ") + "; no merged report (the shards that finished left theirs in \(directory))")
            return .failure
        }
        var summary: Summary
        do {
            summary = try MergeCommand.merge(processes.map(\.directory), onOneMachine: true)
        } catch {
            PushSwarmCommand.printError("\(error)")
            return .failure
        }
        summary.runID = runID
        summary.thresholds = scenario.thresholds.map(\.text)
        RunCommand.publishFinal(summary, to: listeners)
        return RunCommand.report(summary, to: directory, thresholds: scenario.thresholds, arguments: arguments)
    }
}
