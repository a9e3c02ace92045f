import Foundation
import Synchronization

/// Where a run's time comes from. The scheduler asks the clock to wait until the next timer is
/// due; a simulated clock jumps there at once, a wall clock really waits. Devices, clients and
/// mocks never read a clock: they are handed `now`.
///
/// - Important: `wait(until:)` returns when `now` has reached the given instant (or at once if
///   it already has); it is called from one scheduling task at a time.
public protocol RunClock: Sendable {
    /// The current instant of the run.
    var now: Instant { get }
    /// Waits until `instant`.
    func wait(until instant: Instant) async
}

/// Discrete-event time: `now` is whatever the scheduler last advanced it to; waiting is free.
public final class SimulatedClock: RunClock {
    private let current = Mutex(Instant.start)

    public init() {}

    public var now: Instant { current.withLock { $0 } }

    public func wait(until instant: Instant) async {
        current.withLock { if instant > $0 { $0 = instant } }
    }
}

/// Real time since the clock was made (or last `restart`ed), from the monotonic system clock.
public final class WallClock: RunClock {
    private let base = ContinuousClock.now
    /// Instant zero, microseconds after `base`.
    private let originMicroseconds = Atomic<Int64>(0)
    private let originUnix = Atomic<Int64>(Int64(Date().timeIntervalSince1970))

    public init() {}

    /// The calendar time at instant zero, in whole Unix seconds: a wall run's calendar starts
    /// here, so its timestamps are today's and an HTTP-date `Retry-After` is read against the
    /// real time.
    public var originUnixSeconds: Int64 { originUnix.load(ordering: .relaxed) }

    /// Instant zero becomes now: the run after a warm-up starts its own timeline. Only between
    /// runs, when nothing is scheduled on this clock.
    public func restart() {
        originMicroseconds.store(Self.microseconds(ContinuousClock.now - base), ordering: .relaxed)
        originUnix.store(Int64(Date().timeIntervalSince1970), ordering: .relaxed)
    }

    public var now: Instant {
        Instant(microseconds: Self.microseconds(ContinuousClock.now - base) - originMicroseconds.load(ordering: .relaxed))
    }

    private static func microseconds(_ elapsed: Duration) -> Int64 {
        let (seconds, attoseconds) = elapsed.components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }

    public func wait(until instant: Instant) async {
        let remaining = instant - now
        guard remaining > .zero else { return }
        try? await Task.sleep(for: .microseconds(remaining.microseconds))
    }
}
