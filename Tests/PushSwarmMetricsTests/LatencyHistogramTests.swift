import Testing
@testable import PushSwarmMetrics

@Suite struct LatencyHistogramTests {
    /// A deterministic spread of values over six decades, like latencies in microseconds.
    static func sampleValues(count: Int, seed: UInt64) -> [UInt64] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let unit = Double(state >> 11) / Double(1 << 53)
            return UInt64(pow10(unit * 6))
        }
    }

    static func pow10(_ exponent: Double) -> Double {
        var result = 1.0
        var remaining = exponent
        while remaining >= 1 { result *= 10; remaining -= 1 }
        // 10^r = e^(r ln 10), by series; accurate enough for spreading test values.
        let x = remaining * 2.302585092994046
        var term = 1.0
        var sum = 1.0
        for n in 1..<30 { term *= x / Double(n); sum += term }
        return result * sum
    }

    @Test func percentilesAreWithinOnePartInAThousandOfTheExactValues() {
        let values = Self.sampleValues(count: 50_000, seed: 42)
        var histogram = LatencyHistogram()
        for value in values { histogram.record(value) }
        let sorted = values.sorted()
        for quantile in [0.5, 0.9, 0.99, 0.999, 1.0] {
            let rank = max(1, Int((quantile * Double(sorted.count)).rounded(.up)))
            let exact = sorted[rank - 1]
            let reported = histogram.value(atQuantile: quantile) ?? 0
            let error = abs(Double(reported) - Double(exact)) / Double(max(exact, 1))
            #expect(error <= 0.001, "q\(quantile): exact \(exact), reported \(reported)")
            #expect(reported >= exact, "reports the bucket's highest equivalent value, never below the true one")
        }
    }

    @Test func smallValuesAreExact() {
        var histogram = LatencyHistogram()
        for value in UInt64(0)..<2_048 { histogram.record(value) }
        #expect(histogram.value(atQuantile: 0.5) == 1_023)
        #expect(histogram.value(atQuantile: 1) == 2_047)
        #expect(histogram.minimum == 0)
    }

    @Test func mergingEqualsRecordingBothStreamsInOneHistogram() {
        let first = Self.sampleValues(count: 20_000, seed: 1)
        let second = Self.sampleValues(count: 30_000, seed: 2).map { $0 * 3 }
        var merged = LatencyHistogram()
        var left = LatencyHistogram()
        var right = LatencyHistogram()
        for value in first { left.record(value); merged.record(value) }
        for value in second { right.record(value); merged.record(value) }
        left.merge(right)
        #expect(left == merged)
        #expect(left.totalCount == 50_000)
    }

    @Test func memoryDoesNotGrowWithTheNumberOfValues() {
        var histogram = LatencyHistogram()
        let bucketsBefore = histogram.counts.count
        for value in Self.sampleValues(count: 100_000, seed: 9) { histogram.record(value) }
        #expect(histogram.counts.count == bucketsBefore)
    }

    @Test func valuesAboveTheRangeAreCountedAndTheirMaximumKept() {
        var histogram = LatencyHistogram(highestTrackableValue: 10_000)
        histogram.record(5_000_000)
        #expect(histogram.totalCount == 1)
        #expect(histogram.maximum == 5_000_000)
        #expect((histogram.value(atQuantile: 1) ?? 0) <= 5_000_000)
    }

    @Test func anEmptyHistogramHasNoPercentiles() {
        #expect(LatencyHistogram().value(atQuantile: 0.5) == nil)
        #expect(LatencyHistogram().mean == nil)
    }

    @Test func nonZeroBucketsAddUpToTheTotal() {
        var histogram = LatencyHistogram()
        for value in Self.sampleValues(count: 5_000, seed: 3) { histogram.record(value) }
        #expect(histogram.savedBuckets.reduce(0) { $0 + $1.count } == 5_000)
    }
}
