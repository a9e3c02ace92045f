import PushSwarmMetrics
import Dispatch
import Synchronization

/// Where partitions leave their progress. Each partition hands the board a copy of its metrics
/// about once a second (`Partition.reportProgress`): nothing on the path of an event takes the
/// board's lock. The board keeps the latest copy of each, and about once a second of wall time the
/// partition whose copy finds a report due merges them, outside the lock, and hands the whole to
/// the run's `onProgress` (one call at a time).
final class ProgressBoard: Sendable {
    private struct State {
        var latest: [(elapsed: TimeSpan, metrics: RunMetrics)?]
        var nextReport: UInt64 = 0
    }

    private let state: Mutex<State>
    /// Held while a report is merged and handed over: reports come one at a time.
    private let reporting = Mutex<Void>(())
    private let duration: TimeSpan
    private let devices: Int
    private let report: @Sendable (RunProgress) -> Void

    /// How often partitions publish and the board reports, in nanoseconds of the monotonic clock.
    static let interval: UInt64 = 1_000_000_000

    init(partitions: Int, duration: TimeSpan, devices: Int, report: @escaping @Sendable (RunProgress) -> Void) {
        state = Mutex(State(latest: Array(repeating: nil, count: partitions)))
        self.duration = duration
        self.devices = devices
        self.report = report
    }

    /// The monotonic clock partitions and the board pace themselves by.
    static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Partition `partition`'s latest progress, from its own thread, about once a second.
    func publish(partition: Int, elapsed: TimeSpan, metrics: RunMetrics) {
        let now = Self.now
        let due: [(elapsed: TimeSpan, metrics: RunMetrics)?]? = state.withLock { state in
            state.latest[partition] = (elapsed, metrics)
            guard now >= state.nextReport else { return nil }
            state.nextReport = now + Self.interval
            return state.latest
        }
        guard let due else { return }
        reporting.withLock { _ in
            var merged = RunMetrics()
            var elapsed = TimeSpan.zero
            for case let slot? in due {
                merged.merge(slot.metrics)
                elapsed = max(elapsed, slot.elapsed)
            }
            report(RunProgress(elapsed: elapsed, duration: duration, metrics: merged, devices: devices))
        }
    }
}
