/// Admits at most `limit` requests per key in any window of length `window` (a sliding log).
///
/// Its code is `@inlinable` so that a mock in another module gets it specialised for its key:
/// unspecialised, every `admit` boxed the key and allocated twice.
///
/// Chosen for spec limits such as SmartAppPush's "10 requests/second per IP": unlike a token
/// bucket, which lets 2 × limit through across a window boundary, no 1-second span ever sees more
/// than `limit` admitted, which is what the spec's sentence promises.
public struct SlidingWindowLimiter<Key: Hashable & Sendable>: Sendable {
    public enum Admission: Sendable, Equatable {
        case admitted
        /// Refused; the earliest a request from this key would be admitted is after `retryAfter`.
        case limited(retryAfter: TimeSpan)
    }

    /// The admit times still inside the window, oldest first, as a ring of `limit` slots.
    @usableFromInline
    struct Log: Sendable {
        @usableFromInline var times: [Int64]
        @usableFromInline var oldest = 0
        @usableFromInline var count = 0

        @usableFromInline
        init(limit: Int) { times = Array(repeating: 0, count: limit) }
    }

    public let limit: Int
    public let window: TimeSpan
    @usableFromInline var logs: [Key: Log] = [:]
    /// When logs whose every admit has left the window were last dropped: a key holds memory
    /// while it is active, not for the rest of the run (a day's fleet touches every address).
    @usableFromInline var lastSweep: Int64 = .min

    public init(limit: Int, window: TimeSpan) {
        precondition(limit > 0 && window > .zero)
        self.limit = limit
        self.window = window
    }

    @inlinable
    public mutating func admit(_ key: Key, at now: Instant) -> Admission {
        let limit = limit
        sweepIfDue(at: now)
        return Self.admit(&logs[key, default: Log(limit: limit)], limit: limit, window: window, at: now)
    }

    /// Keys tracked now (for tests).
    var trackedKeys: Int { logs.count }

    /// Every 64 windows (at least a minute), drops the logs with nothing left in the window: a
    /// key with no admit inside the window is exactly as if it had never been seen.
    @inlinable
    mutating func sweepIfDue(at now: Instant) {
        let period = max(window.microseconds * 64, 60_000_000)
        guard lastSweep == .min || now.microseconds - lastSweep >= period else { return }
        if lastSweep != .min {
            let cutoff = now.microseconds - window.microseconds
            let limit = limit
            logs = logs.filter { _, log in log.count > 0 && log.times[(log.oldest + log.count - 1) % limit] > cutoff }
        }
        lastSweep = now.microseconds
    }

    /// Works on the log in place (through the dictionary's modify accessor), with no copy.
    @inlinable
    static func admit(_ log: inout Log, limit: Int, window: TimeSpan, at now: Instant) -> Admission {
        let cutoff = now.microseconds - window.microseconds
        while log.count > 0, log.times[log.oldest] <= cutoff {
            log.oldest = (log.oldest + 1) % limit
            log.count -= 1
        }
        let admission: Admission
        if log.count < limit {
            log.times[(log.oldest + log.count) % limit] = now.microseconds
            log.count += 1
            admission = .admitted
        } else {
            admission = .limited(retryAfter: TimeSpan(microseconds: log.times[log.oldest] - cutoff))
        }
        return admission
    }
}
