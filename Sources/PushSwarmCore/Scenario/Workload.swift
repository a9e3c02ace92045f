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

    /// The highest arrival rate a workload may ask for, per second, in one process. Arrival
    /// instants are exact (see `ArrivalClock`) and only rounded to the engine's microsecond when
    /// scheduled, so rates above 1,000,000/s put several arrivals in one microsecond and still
    /// deliver their count; the ceiling is what one process can honour: ten times what 16 cores
    /// send through devices, and a run that asks for more would only report its own saturation.
    /// Beyond it, split the load (`--shard`, `--workers`).
    public static let maximumRate: Double = 10_000_000

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
}

/// An open workload's rate integrated: where, in seconds from the run's start, the expected count
/// of arrivals since the workload's start (the area under its rate) reaches a given value.
///
/// Arrival k of an evenly spaced workload is due where the area reaches k + 1, and a Poisson
/// stream's next arrival where the area reaches the last one's plus an exponential draw (time
/// rescaling). The instant is computed from the area each time, never from the previous arrival's
/// rounded instant, so nothing accumulates: rounding to the engine's microsecond happens once,
/// when the arrival is scheduled, and a run delivers rate × duration arrivals whatever the rate.
/// Ramps are integrated exactly.
public struct ArrivalClock: Sendable {
    private struct Piece {
        /// Seconds from the run's start, and the area before the piece.
        var start: Double
        var areaBefore: Double
        var length: Double
        var rate: Double
        var slope: Double
        var area: Double
    }

    private let pieces: [Piece]
    /// The rate after the last piece, which holds until the run ends.
    private let finalRate: Double
    private let finalStart: Double
    private let finalAreaBefore: Double
    /// The piece the last question fell in: questions come in increasing order, so the search
    /// starts there.
    private var cursor = 0

    public init(_ workload: OpenWorkload) {
        var pieces: [Piece] = []
        var time = workload.start.seconds
        var area = 0.0
        for segment in workload.segments {
            let length = segment.length.seconds
            let slope = length > 0 ? (segment.toRate - segment.fromRate) / length : 0
            let pieceArea = length > 0 ? (segment.fromRate + segment.toRate) / 2 * length : 0
            pieces.append(Piece(start: time, areaBefore: area, length: length, rate: segment.fromRate, slope: slope, area: pieceArea))
            time += length
            area += pieceArea
        }
        self.pieces = pieces
        finalRate = workload.segments.last?.toRate ?? 0
        finalStart = time
        finalAreaBefore = area
    }

    /// Seconds from the run's start at which the area reaches `target` (> 0); nil when it never
    /// does (the rate stays zero from some point on).
    public mutating func time(atArea target: Double) -> Double? {
        if cursor > 0, target < (cursor < pieces.count ? pieces[cursor].areaBefore : finalAreaBefore) { cursor = 0 }
        while cursor < pieces.count {
            let piece = pieces[cursor]
            let needed = target - piece.areaBefore
            if piece.area > 0, needed <= piece.area {
                // Solve slope/2 · d² + rate · d = needed for the smallest d ≥ 0, in the form that
                // loses no digits when the slope is small (and is needed / rate when it is zero).
                let root = (piece.rate * piece.rate + 2 * piece.slope * needed).squareRoot()
                let d = 2 * needed / (piece.rate + root)
                return piece.start + min(piece.length, max(0, d))
            }
            cursor += 1
        }
        guard finalRate > 0 else { return nil }
        return finalStart + (target - finalAreaBefore) / finalRate
    }

    /// The area from the start of the run to `seconds`: the expected number of arrivals by then.
    public func area(at seconds: Double) -> Double {
        for piece in pieces where seconds < piece.start + piece.length {
            let d = max(0, seconds - piece.start)
            return piece.areaBefore + piece.rate * d + piece.slope / 2 * d * d
        }
        return finalAreaBefore + finalRate * max(0, seconds - finalStart)
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
