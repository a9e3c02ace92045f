import Foundation
import Synchronization

/// Real time since the clock was made (or last `restart`ed), from the monotonic system clock.
public final class WallClock: Sendable {
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
}
