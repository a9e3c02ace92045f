import PushSwarmCore

/// What an access log shows of the load it recorded: requests per operation and status, per
/// second and minute, per client address, and the paths no platform serves. The first step of a
/// fit (`pushswarm fit`), and what `--check` holds a simulated run against.
public struct LogProfile: Sendable {
    public struct Operation: Sendable, Equatable {
        public var requests = 0
        public var byStatus: [Int: Int] = [:]
        public var rateLimited: Int { byStatus[429] ?? 0 }
    }

    public private(set) var operations: [String: Operation] = [:]
    /// Requests per second of the log (Unix seconds of their starts), all operations.
    public private(set) var perSecond: [Int64: Int] = [:]
    /// 429s per second of the log.
    public private(set) var rateLimitedPerSecond: [Int64: Int] = [:]
    /// Each address's requests of known operations in the order read (the log's order, which is
    /// nearly time order): what the limiter, the retry rule and the campaigns are fitted to.
    public private(set) var byAddress: [String: [LoggedRequest]] = [:]
    /// The operations' names, indexed by `LoggedRequest.operation`.
    public private(set) var operationNames: [String] = []
    private var operationIndex: [String: UInt16] = [:]
    /// Requests for paths no platform serves, by path: at most `distinctUnknownPaths` paths kept,
    /// the rest counted in `otherUnknownPaths` (a scanner's log holds millions).
    public private(set) var unknownPaths: [String: Int] = [:]
    public private(set) var otherUnknownPaths = 0
    public static let distinctUnknownPaths = 1_000
    /// Requests the log says came over HTTP/2, and over HTTP/1.x (`$server_protocol`, or the
    /// request line's protocol); neither counts a request the log does not say of.
    public private(set) var http2Requests = 0
    public private(set) var http1Requests = 0
    /// The first and last request starts, Unix microseconds.
    public private(set) var first: Int64?
    public private(set) var last: Int64?

    public init() {}

    /// One request as the fits need it: 16 bytes, so a log of tens of millions fits in memory.
    public struct LoggedRequest: Sendable, Equatable {
        /// Its start, Unix microseconds.
        public var microseconds: Int64
        /// How long it took in microseconds, `UInt32.max` where the log does not say (a duration
        /// past 71 minutes is held as 71 minutes: no limiter or retry fit looks that far).
        private var duration: UInt32
        /// Its operation, an index into `operationNames`.
        public var operation: UInt16
        public var status: Int16

        public init(microseconds: Int64, durationMicroseconds: Int64?, operation: UInt16, status: Int16) {
            self.microseconds = microseconds
            duration = durationMicroseconds.map { UInt32(clamping: max(0, min($0, Int64(UInt32.max - 1)))) } ?? .max
            self.operation = operation
            self.status = status
        }

        /// How long it took, where the log says.
        public var durationMicroseconds: Int64? { duration == .max ? nil : Int64(duration) }
        /// When its answer left the service: where a client's retry delay starts.
        public var endMicroseconds: Int64 { microseconds + (durationMicroseconds ?? 0) }
    }

    public mutating func add(_ record: AccessLogRecord, operation: String?) {
        first = min(first ?? record.startMicroseconds, record.startMicroseconds)
        last = max(last ?? record.startMicroseconds, record.startMicroseconds)
        if let http2 = record.http2 {
            if http2 { http2Requests += 1 } else { http1Requests += 1 }
        }
        guard let operation else {
            countUnknown(record.path, 1)
            return
        }
        operations[operation, default: Operation()].requests += 1
        operations[operation, default: Operation()].byStatus[record.status, default: 0] += 1
        let second = Self.second(record.startMicroseconds)
        perSecond[second, default: 0] += 1
        if record.status == 429 { rateLimitedPerSecond[second, default: 0] += 1 }
        let index = self.index(of: operation)
        byAddress[record.address, default: []].append(
            LoggedRequest(microseconds: record.startMicroseconds, durationMicroseconds: record.durationMicroseconds, operation: index, status: Int16(record.status)))
        kept += 1
    }

    /// Adds another node's log, its times moved back by `shift` microseconds (its clock's
    /// offset from this one's, `ClockOffset`): as if its lines had been read here, on this clock.
    public mutating func merge(_ other: LogProfile, shiftedBy shift: Int64) {
        if let otherFirst = other.first { first = min(first ?? otherFirst - shift, otherFirst - shift) }
        if let otherLast = other.last { last = max(last ?? otherLast - shift, otherLast - shift) }
        http2Requests += other.http2Requests
        http1Requests += other.http1Requests
        for (path, count) in other.unknownPaths { countUnknown(path, count) }
        otherUnknownPaths += other.otherUnknownPaths
        for (name, operation) in other.operations {
            operations[name, default: Operation()].requests += operation.requests
            for (status, count) in operation.byStatus { operations[name, default: Operation()].byStatus[status, default: 0] += count }
        }
        let indices = other.operationNames.map { index(of: $0) }
        for (address, requests) in other.byAddress {
            var moved = requests
            for position in moved.indices {
                moved[position].microseconds -= shift
                moved[position].operation = indices[Int(moved[position].operation)]
                let second = Self.second(moved[position].microseconds)
                perSecond[second, default: 0] += 1
                if moved[position].status == 429 { rateLimitedPerSecond[second, default: 0] += 1 }
            }
            byAddress[address, default: []].append(contentsOf: moved)
        }
        kept += other.kept
    }

    /// Requests for a path no platform serves: by path, the first `distinctUnknownPaths` of
    /// them, the rest together.
    private mutating func countUnknown(_ path: String, _ count: Int) {
        if unknownPaths[path] != nil || unknownPaths.count < Self.distinctUnknownPaths {
            unknownPaths[path, default: 0] += count
        } else {
            otherUnknownPaths += count
        }
    }

    /// An operation's index, given it one where it has none.
    private mutating func index(of operation: String) -> UInt16 {
        if let known = operationIndex[operation] { return known }
        // Operations are the five platforms' few dozen: an index of 16 bits holds them all.
        let index = UInt16(operationNames.count)
        operationNames.append(operation)
        operationIndex[operation] = index
        return index
    }

    /// Requests held for the fits (those of known operations).
    public private(set) var kept = 0

    /// About what the profile holds, in bytes: each request kept (16 bytes, with the slack of
    /// growing arrays), each address (its key, its array's header and the allocator's share) and
    /// each second counted. What `fit` weighs against the memory it may use.
    public var estimatedBytes: Int {
        kept * Self.bytesPerRequest + byAddress.count * Self.bytesPerAddress + (perSecond.count + rateLimitedPerSecond.count) * 48
    }

    public static let bytesPerRequest = 24
    public static let bytesPerAddress = 160

    /// Puts each address's requests in time order (a log is in the order requests ended); the
    /// fits read them so.
    public mutating func sortByTime() {
        for address in byAddress.keys {
            byAddress[address]?.sort { $0.microseconds < $1.microseconds }
        }
    }

    /// Each address's 2xx (admitted) and 429 (refused) requests, in time order once
    /// `sortByTime` has run: what the limiter is fitted to.
    var limiterOutcomes: [[LimiterFit.Request]] { Self.outcomes(Array(byAddress.values)) }

    static func outcomes(_ addresses: [[LoggedRequest]]) -> [[LimiterFit.Request]] {
        addresses.map { requests in
            requests.compactMap { request in
                guard Self.isOutcome(request) else { return nil }
                return LimiterFit.Request(microseconds: request.microseconds, admitted: request.status != 429, durationMicroseconds: request.durationMicroseconds)
            }
        }
    }

    private static func isOutcome(_ request: LoggedRequest) -> Bool { (200..<300).contains(request.status) || request.status == 429 }

    /// The per-address limit the 429s show (`LimiterFit`); nil when nothing was refused. Only
    /// the addresses the fit samples (`LimiterFit.mostRefused`, chosen on the kept requests) are
    /// converted: converting every address's once took 32 bytes a request of the whole log.
    public func fitLimiter() -> LimiterFit? {
        let (sample, _) = LimiterFit.mostRefused(Array(byAddress.values), refused: { $0.status == 429 }, counted: Self.isOutcome)
        return LimiterFit.fit(Self.outcomes(sample))
    }

    /// The Unix second a microsecond instant lies in (floor, before 1970 too).
    static func second(_ microseconds: Int64) -> Int64 {
        microseconds >= 0 ? microseconds / 1_000_000 : -((-microseconds + 999_999) / 1_000_000)
    }

    /// Requests per client address, in no order (no table of 10⁶ addresses built for them).
    public var perAddressCounts: [Int] { byAddress.values.map(\.count) }

    /// Requests of known operations.
    public var requests: Int { operations.values.reduce(0) { $0 + $1.requests } }
    public var rateLimited: Int { operations.values.reduce(0) { $0 + $1.rateLimited } }
    public var unknownRequests: Int { unknownPaths.values.reduce(otherUnknownPaths, +) }

    /// The busiest second: its start (Unix seconds) and requests.
    public var peakSecond: (second: Int64, requests: Int)? {
        perSecond.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }.map { ($0.key, $0.value) }
    }

    /// The busiest calendar minute: its start (Unix seconds) and requests.
    public var peakMinute: (minute: Int64, requests: Int)? {
        var minutes: [Int64: Int] = [:]
        for (second, count) in perSecond { minutes[second - ((second % 60) + 60) % 60, default: 0] += count }
        return minutes.max { $0.value < $1.value || ($0.value == $1.value && $0.key > $1.key) }.map { ($0.key, $0.value) }
    }

    /// The storm: from the first second with a 429 to the last, and how long after it the last
    /// request came (nil when nothing was answered 429).
    public var storm: (start: Int64, end: Int64)? {
        guard let start = rateLimitedPerSecond.keys.min(), let end = rateLimitedPerSecond.keys.max() else { return nil }
        return (start, end)
    }

    /// Where an excerpt was cut within its storm: the 429s a second of its first or last two
    /// seconds (the one at its edge partial), where they refused a quarter of the storm's busiest
    /// second at least (a storm's onset and drain refuse a few). What it cannot show.
    public var excerpt: (opening: Int?, closing: Int?, busiest: Int) {
        let refused = rateLimitedPerSecond
        let busiest = refused.values.max() ?? 0
        guard busiest > 0 else { return (nil, nil, 0) }
        func edge(_ second: Int64, _ next: Int64) -> Int? {
            let rate = max(refused[second] ?? 0, refused[next] ?? 0)
            return rate * 4 >= busiest ? rate : nil
        }
        return (first.map(Self.second).flatMap { edge($0, $0 + 1) }, last.map(Self.second).flatMap { edge($0, $0 - 1) }, busiest)
    }
}
