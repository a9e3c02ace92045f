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

    /// Instant zero becomes now: the run after a warm-up starts its own timeline, and a run
    /// starts once its devices are made. Only between runs, when nothing is scheduled on this
    /// clock. `keepingCalendar`: the calendar time at instant zero stays what it was (the
    /// scenario's calendar was already set from it; the restart moves it by milliseconds).
    public func restart(keepingCalendar: Bool = false) {
        originMicroseconds.store(Self.microseconds(ContinuousClock.now - base), ordering: .relaxed)
        if !keepingCalendar { originUnix.store(Int64(Date().timeIntervalSince1970), ordering: .relaxed) }
    }

    public var now: Instant {
        Instant(microseconds: Self.microseconds(ContinuousClock.now - base) - originMicroseconds.load(ordering: .relaxed))
    }

    private static func microseconds(_ elapsed: Duration) -> Int64 {
        let (seconds, attoseconds) = elapsed.components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}
