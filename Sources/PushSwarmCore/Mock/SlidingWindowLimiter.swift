/// Admits at most `limit` requests per key in any window of length `window` (a sliding log).
///
/// Chosen for spec limits such as "10 requests/second per IP": unlike a token
/// bucket, which lets 2 × limit through across a window boundary, no 1-second span ever sees more
/// than `limit` admitted, which is what the spec's sentence promises.
///
/// Each key's log is a ring of admit times (8 bytes each) in one shared array. A ring holds what
/// its key has needed: it starts at `firstRingSize` admits (or `limit`, if smaller) and doubles,
/// up to `limit`, when a key has that many in its window, so a limit set high to lift a spec's
/// limit (a million a second) costs what the traffic puts in the window, not a million slots a
/// key: rings of `limit` were 8 MB a key, zeroed as each address first sent, and stalled a
/// wall run's loop for hundreds of milliseconds. Rings are kept by size in free lists, taken by
/// the next key that needs one of that size once their log is dropped: a key costs no
/// allocation of its own, and a busy mock none per request. The code is `@inlinable` so that a
/// mock in another module gets it specialised for its key (unspecialised, every `admit` boxed
/// the key and allocated).
public struct SlidingWindowLimiter<Key: Hashable & Sendable>: Sendable {
    public enum Admission: Sendable, Equatable {
        case admitted
        /// Refused; the earliest a request from this key would be admitted is after `retryAfter`.
        case limited(retryAfter: TimeSpan)
    }

    /// One key's admit times still inside the window: `count` of them, oldest first, in the ring
    /// of size class `size` at `times[start ..< start + capacity]` starting at `oldest`.
    @usableFromInline
    struct Log: Sendable {
        @usableFromInline var start: Int
        @usableFromInline var size: Int
        @usableFromInline var oldest = 0
        @usableFromInline var count = 0

        @usableFromInline
        init(start: Int, size: Int) {
            self.start = start
            self.size = size
        }
    }

    /// Every key's ring in one array, and the free rings by size class (class c holds
    /// `capacity(ofSize: c)` admits).
    @usableFromInline
    struct Rings: Sendable {
        @usableFromInline let limit: Int
        @usableFromInline var times: [Int64] = []
        @usableFromInline var free: [[Int]] = []

        @usableFromInline
        init(limit: Int) { self.limit = limit }

        /// The admits a ring of size class `size` holds: the first ring's, doubled `size` times,
        /// at most `limit`.
        @inlinable
        func capacity(ofSize size: Int) -> Int {
            let first = Swift.min(limit, SlidingWindowLimiter.firstRingSize)
            return size >= 40 ? limit : Swift.min(limit, first << size)
        }

        /// A free ring of size class `size`: a dropped log's, or a new one at the end of `times`.
        @inlinable
        mutating func take(size: Int) -> Int {
            if size < free.count, let start = free[size].popLast() { return start }
            let start = times.count
            // Through an array, which the standard library fills at memset speed even in a debug build.
            times.append(contentsOf: [Int64](repeating: 0, count: capacity(ofSize: size)))
            return start
        }

        @inlinable
        mutating func release(start: Int, size: Int) {
            while free.count <= size { free.append([]) }
            free[size].append(start)
        }
    }

    public let window: TimeSpan
    @usableFromInline var logs: [Key: Log] = [:]
    @usableFromInline var rings: Rings
    /// When logs whose every admit has left the window were last dropped: a key holds memory
    /// while it is active, not for the rest of the run (a day's fleet touches every address).
    @usableFromInline var lastSweep: Int64 = .min
    /// How many logs make a sweep worth its walk over all of them: twice what the last one left,
    /// and at least `minimumLogsToSweep`.
    @usableFromInline var sweepAtLogs = SlidingWindowLimiter.minimumLogsToSweep
    @usableFromInline static var minimumLogsToSweep: Int { 1_024 }
    /// The admits a key's first ring holds (or the limit, if smaller).
    @usableFromInline static var firstRingSize: Int { 16 }

    public var limit: Int { rings.limit }

    public init(limit: Int, window: TimeSpan) {
        precondition(limit > 0 && window > .zero)
        rings = Rings(limit: limit)
        self.window = window
    }

    @inlinable
    public mutating func admit(_ key: Key, at now: Instant) -> Admission {
        sweepIfDue(at: now)
        if let index = logs.index(forKey: key) {
            return Self.admit(&logs.values[index], in: &rings, window: window, at: now)
        }
        var log = Log(start: rings.take(size: 0), size: 0)
        let admission = Self.admit(&log, in: &rings, window: window, at: now)
        logs[key] = log
        return admission
    }

    /// Keys tracked now, and admit slots allocated so far (for tests).
    var trackedKeys: Int { logs.count }
    var allocatedSlots: Int { rings.times.count }

    /// Every 64 windows (at least a minute), once the logs have doubled since the last sweep
    /// (and number at least `minimumLogsToSweep`), drops the logs with nothing left in the
    /// window: a key with no admit inside the window is exactly as if it had never been seen, so
    /// when this runs changes no answer. A sweep hashes every log it drops, so sweeping at every
    /// window would cost more than all the admissions. Logs held stay within
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
                rings.release(start: log.start, size: log.size)
            }
        }
        lastSweep = now.microseconds
        sweepAtLogs = max(Self.minimumLogsToSweep, 2 * logs.count)
    }

    @inlinable
    func latest(of log: Log) -> Int64 {
        rings.times[log.start + (log.oldest + log.count - 1) % rings.capacity(ofSize: log.size)]
    }

    /// Works on the log in place, in its ring; a full ring smaller than `limit` moves to one
    /// twice its size first.
    @inlinable
    static func admit(_ log: inout Log, in rings: inout Rings, window: TimeSpan, at now: Instant) -> Admission {
        let cutoff = now.microseconds - window.microseconds
        var capacity = rings.capacity(ofSize: log.size)
        while log.count > 0, rings.times[log.start + log.oldest] <= cutoff {
            log.oldest = (log.oldest + 1) % capacity
            log.count -= 1
        }
        if log.count == capacity && capacity < rings.limit {
            let start = rings.take(size: log.size + 1)
            for index in 0..<log.count { rings.times[start + index] = rings.times[log.start + (log.oldest + index) % capacity] }
            rings.release(start: log.start, size: log.size)
            log.start = start
            log.size += 1
            log.oldest = 0
            capacity = rings.capacity(ofSize: log.size)
        }
        if log.count < capacity {
            rings.times[log.start + (log.oldest + log.count) % capacity] = now.microseconds
            log.count += 1
            return .admitted
        }
        return .limited(retryAfter: TimeSpan(microseconds: rings.times[log.start + log.oldest] - cutoff))
    }
}
