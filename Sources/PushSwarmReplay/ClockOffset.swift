import PushSwarmMetrics

/// How far one edge node's clock is from another's, measured from the two logs alone.
///
/// An edge fleet writes one log per node, with clocks a few milliseconds apart. Where a client
/// address's requests reach both nodes (a balancer that spreads connections), a retry answered on
/// one node and sent again to the other shows the offset: the offsets from each 429 to the
/// address's later requests peak at the clients' delays (plus the network's turnaround) within a
/// node, and at those delays shifted by the clocks' difference across nodes. The offset is the
/// shift that lays the cross-node peaks on the within-node ones (a cross-correlation of the two
/// histograms, each less its local mean, so that the flat background of other devices behind the
/// same address weighs nothing). Where no address reaches both nodes (a balancer that pins each
/// address to a node), nothing in the logs shows the offset, and nothing the fits read depends on
/// it: each address's retries are timed on one clock.
public struct ClockOffset: Sendable, Equatable {
    /// How far ahead of the reference's clock the other log's is: subtract it from the other
    /// log's times to put them on the reference's.
    public var microseconds: Int64
    /// The 429s whose address's requests went on in the other log within seconds: what the
    /// offset was measured from.
    public var crossings: Int
    /// The estimate's standard error (a jackknife over four groups of the 429s), microseconds;
    /// nil where a group left out leaves too little to measure.
    public var standardError: Int64?

    /// The largest offset looked for, either way: NTP keeps nodes within milliseconds; a log a
    /// second off is a different problem (a wrong time zone) and is not a clock drift.
    public static let searchedMicroseconds: Int64 = 250_000
    /// How long after a 429 the address's requests are counted: the first retries' delays.
    static let followedMicroseconds: Int64 = 5_000_000
    /// The fewest 429s crossing nodes to measure an offset from.
    public static let fewestCrossings = 100
    /// At most this many 429s a histogram is built from (every k-th of a bigger log's).
    static let sampledRefusals = 20_000

    public init(microseconds: Int64, crossings: Int, standardError: Int64?) {
        self.microseconds = microseconds
        self.crossings = crossings
        self.standardError = standardError
    }

    /// The offset of `other`'s clock against `reference`'s; nil where too few 429s have their
    /// address's requests go on in the other log to show it (addresses pinned to a node, or
    /// one node's rotated logs, one after the other).
    public static func measure(_ other: LogProfile, against reference: LogProfile) -> ClockOffset? {
        let shared = other.byAddress.sorted { $0.key < $1.key }.compactMap { address, theirs in
            reference.byAddress[address].map { (mine: $0, theirs: theirs) }
        }
        guard !shared.isEmpty else { return nil }
        let searched = Int(searchedMicroseconds / 1_000)
        let followed = Int(followedMicroseconds / 1_000)
        // Bins of 1 ms from −searched to +followed+searched.
        let bins = searched + followed + searched + 1
        // Four groups of the 429s (each 4th), for the estimate's spread: a jackknife, each
        // group left out in turn.
        var groups = [Histograms](repeating: Histograms(bins: bins), count: Self.groups)
        let refusals = shared.reduce(0) { total, pair in
            total + pair.mine.count(where: { $0.status == 429 }) + pair.theirs.count(where: { $0.status == 429 })
        }
        let stride = max(1, refusals / sampledRefusals)
        var seen = 0
        var crossings = 0
        func count(after refused: LogProfile.LoggedRequest, in requests: [LogProfile.LoggedRequest], into histogram: inout [Double], sameNode: Bool) {
            let end = refused.endMicroseconds
            let from = end - (sameNode ? 0 : searchedMicroseconds)
            var index = requests.partitioningIndex { $0.microseconds > from }
            while index < requests.count {
                let start = requests[index].microseconds
                let offset = start - end
                if offset > followedMicroseconds + (sameNode ? 0 : searchedMicroseconds) { break }
                if !sameNode || offset > 0 {
                    let bin = Int((offset + searchedMicroseconds) / 1_000)
                    if bin >= 0, bin < bins { histogram[bin] += 1 }
                }
                index += 1
            }
        }
        for (mine, theirs) in shared {
            for (refusing, other, forward) in [(mine, theirs, true), (theirs, mine, false)] {
                for refused in refusing where refused.status == 429 {
                    seen += 1
                    guard seen % stride == 0 else { continue }
                    // Only the 429s whose address went on in the other log count.
                    let end = refused.endMicroseconds
                    let next = other.partitioningIndex { $0.microseconds > end - searchedMicroseconds }
                    guard next < other.count, other[next].microseconds <= end + followedMicroseconds + searchedMicroseconds else { continue }
                    let group = crossings % Self.groups
                    count(after: refused, in: refusing, into: &groups[group].within, sameNode: true)
                    if forward {
                        count(after: refused, in: other, into: &groups[group].forward, sameNode: false)
                    } else {
                        count(after: refused, in: other, into: &groups[group].backward, sameNode: false)
                    }
                    crossings += 1
                }
            }
        }
        guard crossings >= fewestCrossings else { return nil }
        let all = groups.reduce(Histograms(bins: bins)) { $0.adding($1) }
        guard let offset = all.offset(searched: searched, followed: followed) else { return nil }
        let leftOut = groups.compactMap { all.adding($0, times: -1).offset(searched: searched, followed: followed) }.map(Double.init)
        let mean = leftOut.reduce(0, +) / Double(max(1, leftOut.count))
        let spread = leftOut.count == Self.groups
            ? (Double(Self.groups - 1) / Double(Self.groups) * leftOut.reduce(0) { $0 + ($1 - mean) * ($1 - mean) }).squareRoot()
            : nil
        return ClockOffset(microseconds: offset, crossings: crossings, standardError: spread.map { Int64($0.rounded()) })
    }

    static let groups = 4

    /// The offsets from 429s to their address's later requests, a bin a millisecond: within a
    /// node, and across them either way.
    struct Histograms {
        var within: [Double]
        var forward: [Double]
        var backward: [Double]

        init(bins: Int) {
            within = [Double](repeating: 0, count: bins)
            forward = within
            backward = within
        }

        func adding(_ other: Histograms, times factor: Double = 1) -> Histograms {
            var sum = self
            for bin in within.indices {
                sum.within[bin] += factor * other.within[bin]
                sum.forward[bin] += factor * other.forward[bin]
                sum.backward[bin] += factor * other.backward[bin]
            }
            return sum
        }

        /// The shift (microseconds) that lays the cross-node peaks on the within-node ones.
        func offset(searched: Int, followed: Int) -> Int64? {
            let bins = within.count
            let peaks = (within: ClockOffset.detrended(within), forward: ClockOffset.detrended(forward), backward: ClockOffset.detrended(backward))
            // Not the first milliseconds after a 429: there the address's other devices' requests
            // of the same moment lie, on either side of it across nodes and on one side within one.
            let nearest = 50
            // A request on the other node at true offset τ after a reference 429 is logged at
            // τ + δ; one on the reference after the other's 429, at τ − δ.
            func score(_ shift: Int) -> Double {
                var total = 0.0
                for bin in (searched + nearest)..<(searched + followed) where peaks.within[bin] > 0 {
                    let ahead = bin + shift
                    let behind = bin - shift
                    if ahead >= 0, ahead < bins { total += peaks.within[bin] * peaks.forward[ahead] }
                    if behind >= 0, behind < bins { total += peaks.within[bin] * peaks.backward[behind] }
                }
                return total
            }
            let scores = (-searched...searched).map { (shift: $0, score: score($0)) }
            guard let best = scores.max(by: { $0.score < $1.score || ($0.score == $1.score && abs($0.shift) > abs($1.shift)) }), best.score > 0 else { return nil }
            // To the millisecond: what nginx's `$msec` and most logs hold; a fraction between
            // bins would move every line off the log's grid, before or after its neighbours.
            return Int64(best.shift) * 1_000
        }
    }

    /// Milliseconds either side of a bin whose mean is its background: wider than a mobile
    /// network's spread of a retry's arrival (tens of milliseconds), narrower than the delays.
    static let detrendingRadius = 100

    /// Each bin less the mean of those around it, and nothing below it: the peaks alone.
    static func detrended(_ histogram: [Double]) -> [Double] {
        let radius = Self.detrendingRadius
        var prefix = [0.0]
        prefix.reserveCapacity(histogram.count + 1)
        for value in histogram { prefix.append(prefix[prefix.count - 1] + value) }
        return histogram.indices.map { bin in
            let low = max(0, bin - radius)
            let high = min(histogram.count, bin + radius + 1)
            let mean = (prefix[high] - prefix[low]) / Double(high - low)
            return max(0, histogram[bin] - mean)
        }
    }
}
