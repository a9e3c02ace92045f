/// Admits at most `limit` requests per key in any window of length `window` (a sliding log).
///
/// Chosen for spec limits such as SmartAppPush's "10 requests/second per IP": unlike a token
/// bucket, which lets 2 × limit through across a window boundary, no 1-second span ever sees more
/// than `limit` admitted, which is what the spec's sentence promises.
///
/// Each key's log is a ring of `limit` admit times (8 bytes each) in one shared array, its slot
/// reused by another key once its log is dropped: a key costs no allocation of its own, and a
/// busy mock none per request. The code is `@inlinable` so that a mock in another module gets it
/// specialised for its key (unspecialised, every `admit` boxed the key and allocated).
public struct SlidingWindowLimiter<Key: Hashable & Sendable>: Sendable {
    public enum Admission: Sendable, Equatable {
        case admitted
        /// Refused; the earliest a request from this key would be admitted is after `retryAfter`.
        case limited(retryAfter: TimeSpan)
    }

    /// One key's admit times still inside the window: `count` of them, oldest first, in the ring
    /// at `times[slot * limit ..< (slot + 1) * limit]` starting at `oldest`.
    @usableFromInline
    struct Log: Sendable {
        @usableFromInline var slot: Int
        @usableFromInline var oldest = 0
        @usableFromInline var count = 0

        @usableFromInline
        init(slot: Int) { self.slot = slot }
    }

    public let limit: Int
    public let window: TimeSpan
    @usableFromInline var logs: [Key: Log] = [:]
    @usableFromInline var times: [Int64] = []
    /// Slots of dropped logs, for the next new key.
    @usableFromInline var freeSlots: [Int] = []
    /// When logs whose every admit has left the window were last dropped: a key holds memory
    /// while it is active, not for the rest of the run (a day's fleet touches every address).
    @usableFromInline var lastSweep: Int64 = .min
    /// How many logs make a sweep worth its walk over all of them: twice what the last one left,
    /// and at least `minimumLogsToSweep`.
    @usableFromInline var sweepAtLogs = SlidingWindowLimiter.minimumLogsToSweep
    @usableFromInline static var minimumLogsToSweep: Int { 1_024 }

    public init(limit: Int, window: TimeSpan) {
        precondition(limit > 0 && window > .zero)
        self.limit = limit
        self.window = window
    }

    @inlinable
    public mutating func admit(_ key: Key, at now: Instant) -> Admission {
        sweepIfDue(at: now)
        if let index = logs.index(forKey: key) {
            return Self.admit(&logs.values[index], in: &times, limit: limit, window: window, at: now)
        }
        var log = Log(slot: freeSlots.popLast() ?? newSlot())
        let admission = Self.admit(&log, in: &times, limit: limit, window: window, at: now)
        logs[key] = log
        return admission
    }

    /// Keys tracked now, and rings allocated so far (for tests).
    var trackedKeys: Int { logs.count }
    var slotCount: Int { times.count / limit }

    @inlinable
    mutating func newSlot() -> Int {
        // Through an array, which the standard library fills at memset speed even in a debug
        // build: a limit set huge to switch a spec's limit off makes rings of a million slots.
        times.append(contentsOf: [Int64](repeating: 0, count: limit))
        return times.count / limit - 1
    }

    /// Every 64 windows (at least a minute), once the logs have doubled since the last sweep
    /// (and number at least `minimumLogsToSweep`), drops the logs with nothing left in the
    /// window: a key with no admit inside the window is exactly as if it had never been seen, so
    /// when this runs changes no answer. A sweep hashes every log it drops; each minute, those
    /// sweeps cost 1 % of the quickstart, more than all its admissions. Logs held stay within
    /// twice what the last sweep left, or the minimum, plus the keys of one period.
    @inlinable
    mutating func sweepIfDue(at now: Instant) {
        let period = max(window.microseconds * 64, 60_000_000)
        guard lastSweep == .min || (now.microseconds - lastSweep >= period && logs.count >= sweepAtLogs) else { return }
        if lastSweep != .min {
            let cutoff = now.microseconds - window.microseconds
            let stale = logs.filter { _, log in log.count == 0 || latest(of: log) <= cutoff }
            for (key, log) in stale {
                logs[key] = nil
                freeSlots.append(log.slot)
            }
        }
        lastSweep = now.microseconds
        sweepAtLogs = max(Self.minimumLogsToSweep, 2 * logs.count)
    }

    @inlinable
    func latest(of log: Log) -> Int64 {
        times[log.slot * limit + (log.oldest + log.count - 1) % limit]
    }

    /// Works on the log in place, in its ring in `times`.
    @inlinable
    static func admit(_ log: inout Log, in times: inout [Int64], limit: Int, window: TimeSpan, at now: Instant) -> Admission {
        let cutoff = now.microseconds - window.microseconds
        let base = log.slot * limit
        while log.count > 0, times[base + log.oldest] <= cutoff {
            log.oldest = (log.oldest + 1) % limit
            log.count -= 1
        }
        if log.count < limit {
            times[base + (log.oldest + log.count) % limit] = now.microseconds
            log.count += 1
            return .admitted
        }
        return .limited(retryAfter: TimeSpan(microseconds: times[base + log.oldest] - cutoff))
    }
}
