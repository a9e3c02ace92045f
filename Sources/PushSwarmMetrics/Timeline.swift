/// What happened in each interval of a run, on the run's own timeline (simulated or wall): the
/// series behind the report's charts, `timeseries.ndjson` and the live progress line.
///
/// Intervals start at the run's start and are `intervalMicroseconds` long; shards of one run share
/// them, so two timelines merge exactly by adding interval to interval.
public struct Timeline: Sendable, Equatable {
    public struct Interval: Sendable, Equatable {
        /// Requests and socket handshakes started in the interval, retries included.
        public var sent: UInt64 = 0
        public var retries: UInt64 = 0
        /// Answers that arrived in the interval, by class.
        public var ok: UInt64 = 0
        public var rateLimited: UInt64 = 0
        /// 4xx other than 429.
        public var clientErrors: UInt64 = 0
        public var serverErrors: UInt64 = 0
        public var transportErrors: UInt64 = 0
        public var timeouts: UInt64 = 0
        /// Devices that started at least one request in the interval. Shards hold disjoint
        /// devices, so merged shards add.
        public var activeDevices: UInt64 = 0
        /// Latency of the answers that arrived in the interval, every operation together.
        public var latency = SparseHistogram()

        public init() {}

        public var answered: UInt64 { ok + rateLimited + clientErrors + serverErrors }
        /// Everything that did not end in a 1xx–3xx answer.
        public var errors: UInt64 { rateLimited + clientErrors + serverErrors + transportErrors + timeouts }

        public mutating func merge(_ other: Interval) {
            sent += other.sent
            retries += other.retries
            ok += other.ok
            rateLimited += other.rateLimited
            clientErrors += other.clientErrors
            serverErrors += other.serverErrors
            transportErrors += other.transportErrors
            timeouts += other.timeouts
            activeDevices += other.activeDevices
            latency.merge(other.latency)
        }
    }

    /// The counts of one fine interval (a second in runs up to a day): what a storm of 429s and
    /// retries, or a wave of new connections, is told from, at the resolution it happens in. 28
    /// bytes, no histogram, so a day of seconds takes 2.4 MB whatever the fleet.
    public struct Tick: Sendable, Equatable {
        public var sent: UInt32 = 0
        public var retries: UInt32 = 0
        public var ok: UInt32 = 0
        public var rateLimited: UInt32 = 0
        /// Other 4xx, 5xx, transport errors and timeouts.
        public var failed: UInt32 = 0
        /// HTTP connections opened.
        public var opened: UInt32 = 0
        /// HTTP connections closed, for any reason.
        public var closed: UInt32 = 0

        public init() {}

        public init(sent: UInt32, retries: UInt32, ok: UInt32, rateLimited: UInt32, failed: UInt32, opened: UInt32 = 0, closed: UInt32 = 0) {
            (self.sent, self.retries, self.ok, self.rateLimited, self.failed, self.opened, self.closed) = (sent, retries, ok, rateLimited, failed, opened, closed)
        }

        public var isEmpty: Bool { sent == 0 && retries == 0 && ok == 0 && rateLimited == 0 && failed == 0 && opened == 0 && closed == 0 }

        public mutating func merge(_ other: Tick) {
            sent = sent.addingClamped(other.sent)
            retries = retries.addingClamped(other.retries)
            ok = ok.addingClamped(other.ok)
            rateLimited = rateLimited.addingClamped(other.rateLimited)
            failed = failed.addingClamped(other.failed)
            opened = opened.addingClamped(other.opened)
            closed = closed.addingClamped(other.closed)
        }
    }

    public var intervalMicroseconds: Int64
    public private(set) var intervals: [Interval] = []
    /// The length of a tick: 1 s for runs up to a day, longer for longer runs (`tickLimit` ticks
    /// at most over the run).
    public private(set) var tickMicroseconds: Int64
    public private(set) var ticks: [Tick] = []
    /// Ticks kept at most: a day of seconds, and time to drain after it. Later instants (a wall
    /// run draining long past its end) are not recorded in ticks; the intervals still count them.
    public static let tickLimit = 2 * 86_400

    public init(intervalMicroseconds: Int64 = 1_000_000, tickMicroseconds: Int64 = 1_000_000) {
        precondition(intervalMicroseconds > 0 && tickMicroseconds > 0, "an interval must be longer than zero")
        self.intervalMicroseconds = intervalMicroseconds
        self.tickMicroseconds = tickMicroseconds
    }

    /// Whole seconds, a day of ticks over the run at most.
    public static func tick(forRunMicroseconds duration: Int64) -> Int64 {
        let second: Int64 = 1_000_000
        return max(1, (max(0, duration) + 86_400 * second - 1) / (86_400 * second)) * second
    }

    /// The tick holding `microseconds`, created when new; nil past `tickLimit`.
    private mutating func tickIndex(at microseconds: Int64) -> Int? {
        let index = max(0, microseconds) / tickMicroseconds
        guard index < Self.tickLimit else { return nil }
        if index >= ticks.count { ticks.append(contentsOf: repeatElement(Tick(), count: Int(index) - ticks.count + 1)) }
        return Int(index)
    }

    /// At most about 300 points whatever the run's length, on a round interval: 1 s for a few
    /// minutes, 5 min for a day.
    public static func interval(forRunMicroseconds duration: Int64) -> Int64 {
        let seconds: [Int64] = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 21_600, 43_200, 86_400]
        for candidate in seconds where duration <= candidate * 1_000_000 * 300 { return candidate * 1_000_000 }
        return 86_400 * 1_000_000 * ((duration / (86_400 * 1_000_000 * 300)) + 1)
    }

    /// The interval holding the instant `microseconds` after the start (created when new).
    public mutating func index(at microseconds: Int64) -> Int {
        let index = Int(max(0, microseconds) / intervalMicroseconds)
        if index >= intervals.count {
            intervals.append(contentsOf: repeatElement(Interval(), count: index - intervals.count + 1))
        }
        return index
    }

    public mutating func recordSent(at microseconds: Int64, isRetry: Bool) {
        let index = index(at: microseconds)
        intervals[index].sent += 1
        if isRetry { intervals[index].retries += 1 }
        if let tick = tickIndex(at: microseconds) {
            ticks[tick].sent = ticks[tick].sent.addingClamped(1)
            if isRetry { ticks[tick].retries = ticks[tick].retries.addingClamped(1) }
        }
    }

    /// An HTTP connection opened at `microseconds` (ticks only: what the story reads).
    public mutating func recordConnectionOpened(at microseconds: Int64) {
        if let tick = tickIndex(at: microseconds) { ticks[tick].opened = ticks[tick].opened.addingClamped(1) }
    }

    /// An HTTP connection closed at `microseconds` (ticks only).
    public mutating func recordConnectionClosed(at microseconds: Int64) {
        if let tick = tickIndex(at: microseconds) { ticks[tick].closed = ticks[tick].closed.addingClamped(1) }
    }

    /// The most HTTP connections open at the end of a tick (opened less closed, summed from the
    /// start): the edge's peak at a tick's resolution, which partitions' and shards' merged ticks
    /// give for the whole run. Nil when no tick opened one.
    public var connectionsOpenPeak: UInt64? {
        var open: Int64 = 0
        var peak: Int64?
        for tick in ticks where tick.opened > 0 || tick.closed > 0 {
            open += Int64(tick.opened) - Int64(tick.closed)
            if tick.opened > 0 { peak = max(peak ?? 0, open) }
        }
        return peak.map { UInt64(max(0, $0)) }
    }

    public mutating func recordDeviceActive(interval index: Int) {
        intervals[index].activeDevices += 1
    }

    public mutating func recordResponse(at microseconds: Int64, status: Int, latencyMicroseconds: UInt64) {
        let index = index(at: microseconds)
        switch status {
        case 429: intervals[index].rateLimited += 1
        case 400..<500: intervals[index].clientErrors += 1
        case 500...: intervals[index].serverErrors += 1
        default: intervals[index].ok += 1
        }
        intervals[index].latency.record(latencyMicroseconds)
        if let tick = tickIndex(at: microseconds) {
            switch status {
            case 429: ticks[tick].rateLimited = ticks[tick].rateLimited.addingClamped(1)
            case 400...: ticks[tick].failed = ticks[tick].failed.addingClamped(1)
            default: ticks[tick].ok = ticks[tick].ok.addingClamped(1)
            }
        }
    }

    public mutating func recordTransportError(at microseconds: Int64) {
        intervals[index(at: microseconds)].transportErrors += 1
        if let tick = tickIndex(at: microseconds) { ticks[tick].failed = ticks[tick].failed.addingClamped(1) }
    }

    public mutating func recordTimeout(at microseconds: Int64) {
        intervals[index(at: microseconds)].timeouts += 1
        if let tick = tickIndex(at: microseconds) { ticks[tick].failed = ticks[tick].failed.addingClamped(1) }
    }

    /// Adds `other`'s intervals and ticks to these; both must share the interval and tick lengths.
    public mutating func merge(_ other: Timeline) {
        // An empty timeline takes the other's lengths even when that one is empty too: a run's
        // metrics start as a default timeline, and an empty shard's must still say its lengths.
        if intervals.isEmpty { intervalMicroseconds = other.intervalMicroseconds }
        if ticks.isEmpty { tickMicroseconds = other.tickMicroseconds }
        if !other.intervals.isEmpty {
            precondition(other.intervalMicroseconds == intervalMicroseconds, "merging timelines of different intervals")
            for (index, interval) in other.intervals.enumerated() {
                if index >= intervals.count { intervals.append(interval) } else { intervals[index].merge(interval) }
            }
        }
        if !other.ticks.isEmpty {
            precondition(other.tickMicroseconds == tickMicroseconds, "merging timelines of different ticks")
            if other.ticks.count > ticks.count { ticks.append(contentsOf: repeatElement(Tick(), count: other.ticks.count - ticks.count)) }
            for (index, tick) in other.ticks.enumerated() where !tick.isEmpty { ticks[index].merge(tick) }
        }
    }

    /// Drops intervals past `count` (a run's end) and pads to it, so every run of one scenario
    /// has the same number of points.
    public mutating func fit(to count: Int) {
        if intervals.count > count {
            // What arrived while draining belongs to the last interval.
            var last = intervals[count - 1]
            for extra in intervals[count...] { last.merge(extra) }
            intervals.removeSubrange((count - 1)...)
            intervals.append(last)
        } else if intervals.count < count {
            intervals.append(contentsOf: repeatElement(Interval(), count: count - intervals.count))
        }
    }

    /// Replaces the intervals wholesale (reading a saved timeline back).
    public mutating func restore(_ saved: [Interval]) {
        intervals = saved
    }

    /// Replaces the ticks (reading a saved timeline back): `saved` holds the ticks that are not
    /// empty, by index, which must be ascending and under `tickLimit`.
    public mutating func restoreTicks(microseconds: Int64, _ saved: [(index: Int, tick: Tick)]) {
        precondition(microseconds > 0, "a tick must be longer than zero")
        tickMicroseconds = microseconds
        ticks = []
        guard let last = saved.last else { return }
        precondition(last.index < Self.tickLimit, "a tick past the limit")
        ticks = Array(repeating: Tick(), count: last.index + 1)
        for (index, tick) in saved { ticks[index] = tick }
    }
}

extension UInt32 {
    /// A count that stops at its largest value rather than trapping: a tick of one second never
    /// holds four billion requests, but a hostile archive may say it does.
    func addingClamped(_ other: UInt32) -> UInt32 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}

/// A latency histogram for one interval, holding only the buckets that were hit. A day in
/// 5-minute intervals keeps 288 of these; full histograms would take 190 kB each.
///
/// Its buckets are `LatencyHistogram`'s taken eight at a time (`grain`): a quantile is within
/// 0.8 % (8 µs below 2 ms) where the run's own histogram is within 0.1 %, plenty for a chart of
/// an interval, and a day's intervals take an eighth of the memory (the timeline was the largest
/// thing after the ledger that grew with a run's length). A group is named by the index of its
/// first bucket, so the saved form is still `LatencyHistogram` indices; finer saved buckets (an
/// older archive) are grouped as they are read.
public struct SparseHistogram: Sendable, Equatable {
    /// How many of `LatencyHistogram`'s buckets make one of these (a power of two that divides
    /// its 1,024 buckets of each half-octave, so a group never spans two).
    static let grain = 8

    /// The buckets hit, ascending by the index of their first `LatencyHistogram` bucket, with
    /// their counts: 12 bytes a bucket.
    private var indices: [UInt32] = []
    private var counts: [UInt64] = []
    public private(set) var totalCount: UInt64 = 0
    public private(set) var maximum: UInt64 = 0

    public init() {}

    public var isEmpty: Bool { totalCount == 0 }

    public mutating func record(_ value: UInt64) {
        let clamped = min(value, LatencyHistogram.defaultHighestTrackableValue)
        add(count: 1, at: LatencyHistogram.countsIndex(for: clamped))
        maximum = max(maximum, value)
    }

    public mutating func merge(_ other: SparseHistogram) {
        for (index, count) in zip(other.indices, other.counts) { add(count: count, at: Int(index)) }
        maximum = max(maximum, other.maximum)
    }

    private mutating func add(count: UInt64, at index: Int) {
        let key = UInt32(clamping: index & ~(Self.grain - 1))
        // Binary search for the bucket; latencies cluster, so the last bucket is checked first.
        let low: Int
        if let last = indices.last, last <= key {
            low = last == key ? indices.count - 1 : indices.count
        } else {
            low = indices.partitioningIndex { $0 >= key }
        }
        if low < indices.count, indices[low] == key {
            counts[low] &+= count
        } else {
            indices.insert(key, at: low)
            counts.insert(count, at: low)
        }
        totalCount &+= count
    }

    /// As `LatencyHistogram.value(atQuantile:)`: the group's highest equivalent value, never
    /// above the maximum.
    public func value(atQuantile quantile: Double) -> UInt64? {
        guard totalCount > 0 else { return nil }
        let rank = LatencyHistogram.rank(atQuantile: quantile, of: totalCount)
        var cumulative: UInt64 = 0
        for (index, count) in zip(indices, counts) {
            cumulative &+= count
            if cumulative >= rank { return min(LatencyHistogram.highestEquivalentValue(forIndex: Int(index) + Self.grain - 1), maximum) }
        }
        return maximum
    }

    /// Buckets as (bucket index, count), ascending: the exact saved form.
    public var buckets: [(index: Int, count: UInt64)] {
        zip(indices, counts).map { (Int($0), $1) }
    }

    /// A histogram from its saved form; nil where an index is outside `LatencyHistogram`'s
    /// buckets, as `LatencyHistogram(restoring:)` (an archive's indices are anyone's numbers).
    public init?(buckets: [(index: Int, count: UInt64)], maximum: UInt64) {
        for (index, count) in buckets {
            guard index >= 0, index < LatencyHistogram.defaultCountsLength else { return nil }
            if count > 0 { add(count: count, at: index) }
        }
        self.maximum = maximum
    }
}

extension Timeline {
    /// `timeseries.ndjson`: one JSON object per interval, a line each, in time order. Rates are per
    /// second of the run's timeline; latency percentiles in milliseconds (null when nothing was
    /// answered in the interval).
    public var ndjson: String {
        let seconds = Double(intervalMicroseconds) / 1_000_000
        var text = ""
        for (index, interval) in intervals.enumerated() {
            func milliseconds(_ quantile: Double) -> JSONValue {
                interval.latency.milliseconds(atQuantile: quantile).map(JSONValue.number) ?? .null
            }
            let line: JSONValue = [
                "t": .number(Double(index) * seconds), "seconds": .number(seconds),
                "sent": .number(Double(interval.sent)), "retries": .number(Double(interval.retries)),
                "ok": .number(Double(interval.ok)), "rateLimited": .number(Double(interval.rateLimited)),
                "clientErrors": .number(Double(interval.clientErrors)), "serverErrors": .number(Double(interval.serverErrors)),
                "transportErrors": .number(Double(interval.transportErrors)), "timeouts": .number(Double(interval.timeouts)),
                "activeDevices": .number(Double(interval.activeDevices)),
                "requestsPerSecond": .number((Double(interval.sent) / seconds * 1_000).rounded() / 1_000),
                "latencyMs": ["p50": milliseconds(0.5), "p90": milliseconds(0.9), "p99": milliseconds(0.99), "max": interval.latency.isEmpty ? .null : .number(Double(interval.latency.maximum) / 1_000)],
            ]
            text += JSONWriter.text(of: line, indent: 0) + "\n"
        }
        return text
    }
}
