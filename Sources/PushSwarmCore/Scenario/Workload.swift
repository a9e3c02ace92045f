/// How a device group makes load: its users' own days (the default), or a load shape the
/// scenario dictates, as a load tester's would.
public enum Workload: Sendable, Equatable {
    /// Devices follow their own day: sessions by local hour, events within sessions.
    case lifecycle
    /// Open model: events arrive at a rate the profile sets, whatever the service's answers; each
    /// arrival is one user event on the group's next device (round robin).
    case open(OpenWorkload)
    /// Closed model: `concurrency` devices each send an event, wait for every answer, think, and
    /// send again.
    case closed(ClosedWorkload)
}

public struct OpenWorkload: Sendable, Equatable {
    /// One stretch of the rate profile: from `fromRate` to `toRate` per second, linearly, over `length`.
    public struct Segment: Sendable, Equatable {
        public var length: TimeSpan
        public var fromRate: Double
        public var toRate: Double

        public init(length: TimeSpan, fromRate: Double, toRate: Double) {
            self.length = length
            self.fromRate = fromRate
            self.toRate = toRate
        }
    }

    /// The highest arrival rate a workload may ask for, per second: the engine's clock counts
    /// microseconds, so arrivals closer together could not be told apart (at 10^12/s they all
    /// fell on one instant and the run never ended); it is also about fifteen times what one
    /// 2-core machine sends through devices. Beyond it, split the load (`--shard`, `--workers`).
    public static let maximumRate: Double = 1_000_000

    /// The profile's stretches in order (a constant rate is one; a ramp, one that changes;
    /// steps, several); after the last, the last rate holds until the run ends.
    public var segments: [Segment]
    /// Arrivals evenly spaced (`false`) or a Poisson process (`true`).
    public var isPoisson: Bool
    /// When the first segment starts, from the start of the run.
    public var start: TimeSpan

    public init(segments: [Segment], isPoisson: Bool, start: TimeSpan = .zero) {
        self.segments = segments
        self.isPoisson = isPoisson
        self.start = start
    }

    /// The rate at `elapsed` from the run's start (zero before `start`).
    public func rate(at elapsed: TimeSpan) -> Double {
        guard elapsed >= start else { return 0 }
        var offset = elapsed - start
        for segment in segments {
            if offset < segment.length {
                let fraction = segment.length > .zero ? offset.seconds / segment.length.seconds : 1
                return segment.fromRate + (segment.toRate - segment.fromRate) * fraction
            }
            offset = offset - segment.length
        }
        return segments.last?.toRate ?? 0
    }

    /// The arrival after one at `elapsed`: where the expected count of arrivals since then
    /// (the rate's integral) reaches 1 for even spacing, or an exponential draw for a Poisson
    /// process (time rescaling). Ramps are integrated exactly. Nil when the rate stays zero.
    public func nextArrival(after elapsed: TimeSpan, random: inout SeededRandom) -> TimeSpan? {
        var area = isPoisson ? random.nextExponential(mean: 1) : 1
        var time = max(elapsed, start).seconds
        var segmentStart = start.seconds
        for segment in segments {
            let segmentEnd = segmentStart + segment.length.seconds
            defer { segmentStart = segmentEnd }
            guard time < segmentEnd else { continue }
            let length = max(segment.length.seconds, 1e-9)
            let slope = (segment.toRate - segment.fromRate) / length
            let rateNow = segment.fromRate + slope * (time - segmentStart)
            let span = segmentEnd - time
            let areaToEnd = rateNow * span + slope / 2 * span * span
            if areaToEnd >= area {
                // Solve slope/2 · d² + rateNow · d = area for the smallest d ≥ 0.
                let d = abs(slope) < 1e-12 ? area / rateNow : (-rateNow + (rateNow * rateNow + 2 * slope * area).squareRoot()) / slope
                return .seconds(time + max(0, d))
            }
            area -= areaToEnd
            time = segmentEnd
        }
        // After the last segment its end rate holds.
        guard let last = segments.last?.toRate, last > 0 else { return nil }
        return .seconds(max(time, segmentStart) + area / last)
    }
}

public struct ClosedWorkload: Sendable, Equatable {
    public var concurrency: Int
    /// Time between an answer and the next event, seconds.
    public var thinkTime: Distribution
    public var start: TimeSpan

    public init(concurrency: Int, thinkTime: Distribution, start: TimeSpan = .zero) {
        self.concurrency = concurrency
        self.thinkTime = thinkTime
        self.start = start
    }
}
