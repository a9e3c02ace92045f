import Foundation
import PushSwarmCore
import Synchronization

/// The live progress of a run on standard error: on a terminal one line rewritten in place once a
/// second; otherwise (a CI log) a plain line every 10 seconds. The line is `RunProgress.line`.
final class ProgressLine: Sendable {
    private struct State {
        var lastPrinted = Date()
        var previous: RunProgress?
        var printedOnTerminal = false
    }

    private let isTerminal = isatty(STDERR_FILENO) == 1
    /// Updates come from the run's progress, or with --workers from each shard's stream.
    private let state = Mutex(State())

    /// Prints `progress` when it is time to.
    func update(_ progress: RunProgress) {
        let isTerminal = isTerminal
        state.withLock { state in
            let now = Date()
            guard now.timeIntervalSince(state.lastPrinted) >= (isTerminal ? 1 : 10) else { return }
            state.lastPrinted = now
            let line = progress.line(since: state.previous)
            state.previous = progress
            if isTerminal {
                FileHandle.standardError.write(Data(("\r\u{1B}[2K" + line).utf8))
                state.printedOnTerminal = true
            } else {
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
        }
    }

    /// Ends the updating line before the report is printed.
    func finish() {
        if state.withLock({ $0.printedOnTerminal }) { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
    }
}
