import PushSwarmMetrics
import Dispatch
import Synchronization

/// Where partitions leave their progress. Each partition hands the board a copy of its metrics
/// about once a second (`Partition.reportProgress`): nothing on the path of an event takes the
/// board's lock, and no partition merges. About once a second of wall time, the partition whose
/// copy finds a report due hands the latest copies to the board's own queue, which merges them
/// and calls the run's `onProgress` (one call at a time), off every partition's loop.
///
/// The merge once ran on that partition's loop: in a debug build of the shortened nightly it took
/// 30–85 ms a second (a copy of every operation's histograms and of the whole timeline so far),
/// every request due meanwhile started that late, and the run's latency p99 was about 130 ms
/// against a service answering in 40–50 ms. Two runs of one build compared "worse" on it.
final class ProgressBoard: Sendable {
    private struct State {
        var latest: [(elapsed: TimeSpan, metrics: RunMetrics)?]
        var nextReport: UInt64 = 0
        /// A report handed to the queue and not yet made: the next waits for it (a slow merge
        /// never piles up copies).
        var reportPending = false
        /// After `finish`, nothing more is reported.
        var finished = false
    }

    private let state: Mutex<State>
    /// Merges and reports, one at a time, off the partitions' loops.
    private let queue = DispatchQueue(label: "pushswarm.progress")
    private let duration: TimeSpan
    private let devices: Int
    private let report: @Sendable (RunProgress) -> Void
    /// The monotonic clock in nanoseconds (`ProgressBoard.now`; a test's own).
    private let clock: @Sendable () -> UInt64

    /// How often partitions publish and the board reports, in nanoseconds of the monotonic clock.
    static let interval: UInt64 = 1_000_000_000

    init(
        partitions: Int, duration: TimeSpan, devices: Int, now: @escaping @Sendable () -> UInt64 = { ProgressBoard.now },
        report: @escaping @Sendable (RunProgress) -> Void
    ) {
        clock = now
        state = Mutex(State(latest: Array(repeating: nil, count: partitions)))
        self.duration = duration
        self.devices = devices
        self.report = report
    }

    /// The monotonic clock partitions and the board pace themselves by.
    static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Partition `partition`'s latest progress, from its own thread, about once a second.
    func publish(partition: Int, elapsed: TimeSpan, metrics: RunMetrics) {
        let now = clock()
        let due: [(elapsed: TimeSpan, metrics: RunMetrics)?]? = state.withLock { state in
            state.latest[partition] = (elapsed, metrics)
            guard now >= state.nextReport, !state.reportPending, !state.finished else { return nil }
            state.nextReport = now + Self.interval
            state.reportPending = true
            return state.latest
        }
        guard let due else { return }
        queue.async { [self] in
            var merged = RunMetrics()
            var elapsed = TimeSpan.zero
            for case let slot? in due {
                merged.merge(slot.metrics)
                elapsed = max(elapsed, slot.elapsed)
            }
            let finished = state.withLock { state in
                state.reportPending = false
                return state.finished
            }
            if !finished { report(RunProgress(elapsed: elapsed, duration: duration, metrics: merged, devices: devices)) }
        }
    }

    /// The run has ended: waits for a report under way, and makes no more. The run's own result
    /// comes after the last progress, never beside it.
    func finish() {
        state.withLock { $0.finished = true }
        queue.sync {}
    }
}
