import Dispatch
import Foundation
import PushSwarmMetrics
import Synchronization
import Testing

@testable import PushSwarmCore

/// The progress board merges the partitions' copies and reports off the partitions' loops: a
/// partition that publishes never waits for a merge or for `onProgress` (a debug build of the
/// shortened nightly once stalled its loop 30–85 ms a second there).
@Suite struct ProgressBoardTests {
    /// A report that has not returned yet does not hold up the partition that made it due: its
    /// `publish` returns, later publishes return too, and they queue no second report behind it.
    @Test func publishingNeverWaitsForTheReport() {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let reports = Mutex<[(thread: UInt64, requests: UInt64)]>([])
        let board = ProgressBoard(partitions: 2, duration: .seconds(60), devices: 10) { progress in
            reports.withLock { $0.append((Self.threadID, progress.metrics.counters["test.requests"] ?? 0)) }
            entered.signal()
            // Bounded, so that a board reporting on the publishing thread fails below instead
            // of hanging here.
            _ = release.wait(timeout: .now() + 10)
        }
        var metrics = RunMetrics()
        metrics.increment(CounterKey("test.requests"), by: 3)
        board.publish(partition: 0, elapsed: .seconds(1), metrics: metrics)
        // The report has begun and is held: were it made on this thread, `publish` would not
        // have returned and this wait would never end.
        #expect(entered.wait(timeout: .now() + 60) == .success, "the first publish made a report")
        // Due again (the interval is a second) but the report under way is not done: nothing
        // more is queued, and publishing still returns at once.
        board.publish(partition: 1, elapsed: .seconds(1), metrics: metrics)
        release.signal()
        board.finish()
        let made = reports.withLock { $0 }
        #expect(made.count == 1, "one report while one was under way: \(made.count)")
        #expect(made.first?.thread != Self.threadID, "the report was made on the publishing thread")
        #expect(made.first?.requests == 3)
    }

    /// A report merges every partition's latest copy; between reports (a second of the board's
    /// clock) a publish only leaves its copy; after `finish` nothing is reported.
    @Test func aReportMergesEveryPartitionAndNoneComesAfterFinish() {
        let clock = Atomic<UInt64>(0)
        let reports = Mutex<[RunProgress]>([])
        let reported = DispatchSemaphore(value: 0)
        let board = ProgressBoard(partitions: 2, duration: .seconds(60), devices: 10, now: { clock.load(ordering: .relaxed) }) { progress in
            reports.withLock { $0.append(progress) }
            reported.signal()
        }
        var first = RunMetrics()
        first.increment(CounterKey("test.requests"), by: 2)
        var second = RunMetrics()
        second.increment(CounterKey("test.requests"), by: 5)
        board.publish(partition: 1, elapsed: .seconds(1), metrics: second)
        #expect(reported.wait(timeout: .now() + 60) == .success, "the board starts due")
        clock.store(500_000_000, ordering: .relaxed)
        board.publish(partition: 0, elapsed: .seconds(3), metrics: first)
        clock.store(1_000_000_000, ordering: .relaxed)
        board.publish(partition: 1, elapsed: .seconds(2), metrics: second)
        #expect(reported.wait(timeout: .now() + 60) == .success, "due again a second later")
        board.finish()
        clock.store(5_000_000_000, ordering: .relaxed)
        board.publish(partition: 0, elapsed: .seconds(4), metrics: first)
        board.finish()
        let made = reports.withLock { $0 }
        #expect(made.map { $0.metrics.counters["test.requests"] ?? 0 } == [5, 7], "the first report has partition 1's copy, the second both")
        #expect(made.last?.elapsed == .seconds(3), "the furthest partition's time")
    }

    static var threadID: UInt64 { UInt64(pthread_self()) }
}
