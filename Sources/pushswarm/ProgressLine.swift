import Foundation
import PushSwarmCore
import PushSwarmMetrics

/// The live progress of a run on standard error: on a terminal one line rewritten in place once a
/// second; otherwise (a CI log) a plain line every 10 seconds.
///
///     [ 6h00m of 24h00m  25% ] 1,204 devices active · 14.2 req/s · p99 88.1 ms · 429s 0 · errors 0
final class ProgressLine: @unchecked Sendable {
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private var lastPrinted = Date()
    private var previous: (elapsed: TimeSpan, sent: UInt64, wall: Date)?
    private var printedOnTerminal = false

    /// Prints `progress` when it is time to.
    func update(_ progress: RunProgress) {
        let now = Date()
        guard now.timeIntervalSince(lastPrinted) >= (isTerminal ? 1 : 10) else { return }
        lastPrinted = now
        let line = Self.render(progress, since: previous, wallNow: now)
        previous = (progress.elapsed, progress.metrics.sent, now)
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

    static func render(_ progress: RunProgress, since previous: (elapsed: TimeSpan, sent: UInt64, wall: Date)?, wallNow: Date) -> String {
        let metrics = progress.metrics
        let share = progress.duration.microseconds > 0 ? Double(progress.elapsed.microseconds) / Double(progress.duration.microseconds) : 0
        // Requests per second of the run's timeline since the last line (simulated or wall).
        var rate = 0.0
        let elapsedBefore = previous?.elapsed ?? .zero
        let sentBefore = previous?.sent ?? 0
        let span = (progress.elapsed - elapsedBefore).seconds
        if span > 0 { rate = Double(metrics.sent - min(metrics.sent, sentBefore)) / span }
        // The latest interval that has answers: p99 and active devices now, not over the whole run.
        let intervals = metrics.timeline.intervals
        let recent = intervals.last { !$0.latency.isEmpty }
        let p99 = recent?.latency.value(atQuantile: 0.99).map { "\(TerminalReport.format2(Double($0) / 1_000)) ms" } ?? "-"
        let active = intervals.last { $0.activeDevices > 0 }?.activeDevices ?? 0
        // Answered with anything but 1xx-3xx, or failed; requests still in flight are not errors.
        let errors = metrics.byStatus.reduce(0) { (100..<400).contains($1.key) ? $0 : $0 + $1.value } + metrics.transportErrors + metrics.timeouts
        return "[ \(clock(progress.elapsed)) of \(clock(progress.duration))  \(Int((share * 100).rounded(.down)))% ] "
            + "\(TerminalReport.group(active)) of \(TerminalReport.group(UInt64(progress.devices))) devices active · \(TerminalReport.format2(rate)) req/s · p99 \(p99) · "
            + "429s \(TerminalReport.group(metrics.byStatus[429] ?? 0)) · errors \(TerminalReport.group(errors)) · sent \(TerminalReport.group(metrics.sent))"
    }

    /// 1h05m, 3m20s, 42s.
    static func clock(_ span: TimeSpan) -> String {
        let seconds = Int(span.seconds.rounded(.down))
        if seconds >= 3_600 { return "\(seconds / 3_600)h\(String(format: "%02d", (seconds % 3_600) / 60))m" }
        if seconds >= 60 { return "\(seconds / 60)m\(String(format: "%02d", seconds % 60))s" }
        return "\(seconds)s"
    }
}
