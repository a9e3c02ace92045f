/// A log-linear histogram of non-negative integer values (PushSwarm records microseconds), in the
/// manner of HdrHistogram: values keep 3 significant decimal digits (relative error below 1/1024),
/// memory is fixed whatever is recorded, and two histograms merge exactly by adding counts.
///
/// Layout: bucket 0 covers 0..<2048 one unit apart; each further bucket doubles the range and the
/// spacing, holding 1024 sub-buckets. Values above `highestTrackableValue` are counted at that
/// value (and `max` still reports the true maximum), so nothing recorded is ever lost.
public struct LatencyHistogram: Sendable, Equatable {
    /// 2^11 sub-buckets in the first bucket: the smallest power of two above 2 × 10^3.
    static let subBucketCountMagnitude = 11
    static let subBucketCount = 1 << subBucketCountMagnitude
    static let subBucketHalfCountMagnitude = subBucketCountMagnitude - 1
    static let subBucketHalfCount = 1 << subBucketHalfCountMagnitude
    static let subBucketMask: UInt64 = UInt64(subBucketCount - 1)

    /// One hour in microseconds, rounded up to the bucket structure's limit.
    public static let defaultHighestTrackableValue: UInt64 = 3_600_000_000

    public let highestTrackableValue: UInt64
    public private(set) var counts: [UInt64]
    public private(set) var totalCount: UInt64 = 0
    /// Smallest and largest values recorded, exactly (not rounded to a bucket).
    public private(set) var minimum: UInt64 = .max
    public private(set) var maximum: UInt64 = 0
    /// Sum of values recorded, for the mean; saturates instead of overflowing.
    public private(set) var sum: UInt64 = 0

    public init(highestTrackableValue: UInt64 = LatencyHistogram.defaultHighestTrackableValue) {
        precondition(highestTrackableValue >= UInt64(Self.subBucketCount), "highest trackable value too small")
        self.highestTrackableValue = highestTrackableValue
        var bucketCount = 1
        var smallestUntrackable = UInt64(Self.subBucketCount)
        while smallestUntrackable <= highestTrackableValue {
            if smallestUntrackable > UInt64.max / 2 {
                bucketCount += 1
                break
            }
            smallestUntrackable <<= 1
            bucketCount += 1
        }
        counts = Array(repeating: 0, count: (bucketCount + 1) << Self.subBucketHalfCountMagnitude)
    }

    public var isEmpty: Bool { totalCount == 0 }

    /// How many buckets a histogram of `defaultHighestTrackableValue` has.
    static let defaultCountsLength = LatencyHistogram().counts.count

    /// A histogram from its saved form (`buckets` as count indices and counts); nil when an index
    /// is outside this range, so a damaged file is refused rather than misread.
    public init?(restoring buckets: [(index: Int, count: UInt64)], minimum: UInt64, maximum: UInt64, sum: UInt64) {
        self.init()
        for (index, count) in buckets {
            guard counts.indices.contains(index) else { return nil }
            counts[index] &+= count
            totalCount &+= count
        }
        if totalCount > 0 {
            self.minimum = minimum
            self.maximum = maximum
            self.sum = sum
        }
    }

    /// Non-zero buckets as (count index, count), ascending: the exact saved form.
    public var savedBuckets: [(index: Int, count: UInt64)] {
        counts.indices.compactMap { counts[$0] == 0 ? nil : ($0, counts[$0]) }
    }

    /// Records `value` once (or `count` times).
    public mutating func record(_ value: UInt64, count: UInt64 = 1) {
        guard count > 0 else { return }
        let clamped = min(value, highestTrackableValue)
        counts[Self.countsIndex(for: clamped)] &+= count
        totalCount &+= count
        minimum = min(minimum, value)
        maximum = max(maximum, value)
        let (product, productOverflow) = value.multipliedReportingOverflow(by: count)
        let (total, sumOverflow) = sum.addingReportingOverflow(product)
        sum = (productOverflow || sumOverflow) ? .max : total
    }

    /// Adds every count of `other`. Merging is exact: the result equals one histogram that recorded
    /// both streams of values.
    public mutating func merge(_ other: LatencyHistogram) {
        precondition(other.counts.count == counts.count, "merging histograms of different ranges")
        guard !other.isEmpty else { return }
        for index in other.counts.indices where other.counts[index] != 0 {
            counts[index] &+= other.counts[index]
        }
        totalCount &+= other.totalCount
        minimum = min(minimum, other.minimum)
        maximum = max(maximum, other.maximum)
        let (total, overflow) = sum.addingReportingOverflow(other.sum)
        sum = overflow ? .max : total
    }

    /// The rank, 1 to `total`, of the value at `quantile` among `total` values; `total` can be
    /// any count (a restored archive's counts add up wrapping).
    static func rank(atQuantile quantile: Double, of total: UInt64) -> UInt64 {
        let product = (Swift.min(Swift.max(quantile, 0), 1) * Double(total)).rounded(.up)
        // The largest Double under 2⁶⁴; NaN fails the test too.
        guard product < 18_446_744_073_709_549_568 else { return total }
        return Swift.min(Swift.max(UInt64(product), 1), total)
    }

    /// The value at `quantile` (0...1): the smallest recorded value v such that at least
    /// `quantile` of all values are ≤ v, reported as the highest value equivalent to v's bucket and
    /// never above the true maximum. Nil when nothing was recorded.
    public func value(atQuantile quantile: Double) -> UInt64? {
        guard totalCount > 0 else { return nil }
        let rank = Self.rank(atQuantile: quantile, of: totalCount)
        var cumulative: UInt64 = 0
        for index in counts.indices where counts[index] != 0 {
            cumulative &+= counts[index]
            if cumulative >= rank {
                let highest = Self.highestEquivalentValue(forIndex: index)
                return Swift.max(Swift.min(highest, maximum), minimum)
            }
        }
        return maximum
    }

    /// How many recorded values are at most each of `bounds` (ascending), as a Prometheus
    /// histogram's cumulative buckets: a value counts below a bound when its whole bucket is
    /// (within the histogram's 0.1 %).
    public func cumulativeCounts(atOrBelow bounds: [UInt64]) -> [UInt64] {
        var result = [UInt64](repeating: 0, count: bounds.count)
        var bound = 0
        var cumulative: UInt64 = 0
        for index in counts.indices where counts[index] != 0 {
            let value = Self.highestEquivalentValue(forIndex: index)
            while bound < bounds.count, bounds[bound] < value {
                result[bound] = cumulative
                bound += 1
            }
            cumulative &+= counts[index]
        }
        while bound < bounds.count {
            result[bound] = cumulative
            bound += 1
        }
        return result
    }

    public var mean: Double? {
        totalCount == 0 ? nil : Double(sum) / Double(totalCount)
    }

    static func countsIndex(for value: UInt64) -> Int {
        let pow2Ceiling = 64 - (value | subBucketMask).leadingZeroBitCount
        let bucketIndex = pow2Ceiling - subBucketCountMagnitude
        let subBucketIndex = Int(value >> UInt64(bucketIndex))
        return ((bucketIndex + 1) << subBucketHalfCountMagnitude) + (subBucketIndex - subBucketHalfCount)
    }

    static func lowestEquivalentValue(forIndex index: Int) -> UInt64 {
        var bucketIndex = (index >> subBucketHalfCountMagnitude) - 1
        var subBucketIndex = (index & (subBucketHalfCount - 1)) + subBucketHalfCount
        if bucketIndex < 0 {
            subBucketIndex -= subBucketHalfCount
            bucketIndex = 0
        }
        return UInt64(subBucketIndex) << UInt64(bucketIndex)
    }

    static func highestEquivalentValue(forIndex index: Int) -> UInt64 {
        let bucketIndex = max((index >> subBucketHalfCountMagnitude) - 1, 0)
        return lowestEquivalentValue(forIndex: index) + (UInt64(1) << UInt64(bucketIndex)) - 1
    }
}
