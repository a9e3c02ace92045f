import Foundation
import PushSwarmCore

/// The live progress of a run on standard error: on a terminal one line rewritten in place once a
/// second; otherwise (a CI log) a plain line every 10 seconds. The line is `RunProgress.line`.
final class ProgressLine: @unchecked Sendable {
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private var lastPrinted = Date()
    private var previous: RunProgress?
    private var printedOnTerminal = false

    /// Prints `progress` when it is time to.
    func update(_ progress: RunProgress) {
        let now = Date()
        guard now.timeIntervalSince(lastPrinted) >= (isTerminal ? 1 : 10) else { return }
        lastPrinted = now
        let line = progress.line(since: previous)
        previous = progress
        if isTerminal {
            FileHandle.standardError.write(Data(("\r\u{1B}[2K" + line).utf8))
            printedOnTerminal = true
        } else {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
    }

    /// Ends the updating line before the report is printed.
    func finish() {
        if printedOnTerminal { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
    }
}
