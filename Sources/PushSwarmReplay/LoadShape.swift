import PushSwarmCore

/// What `fit --check` holds a simulated run against its log by: the same figures, computed the
/// same way from either's requests and 429s per second (second 0 the log's first, the run's
/// start).
public struct LoadShape: Sendable, Equatable {
    public var requests: Int
    public var rateLimited: Int
    /// Requests that were not retries: what attempts per request divide by.
    public var firstAttempts: Int
    public var byOperation: [String: Int]
    public var perSecond: [Int]
    public var rateLimitedPerSecond: [Int]
    /// Campaigns' deliveries reported and taps: the fit's, told from the log, or the simulation's
    /// displays and taps.
    public var deliveries = 0
    public var taps = 0

    public init(byOperation: [String: Int], firstAttempts: Int, perSecond: [Int], rateLimitedPerSecond: [Int]) {
        self.byOperation = byOperation
        self.firstAttempts = firstAttempts
        self.perSecond = perSecond
        self.rateLimitedPerSecond = rateLimitedPerSecond
        requests = perSecond.reduce(0, +)
        rateLimited = rateLimitedPerSecond.reduce(0, +)
    }

    /// The log's shape: its profile's seconds from its first, and the fit's first attempts.
    public init(_ profile: LogProfile, firstAttempts: Int) {
        let start = profile.first.map(LogProfile.second) ?? 0
        let seconds = profile.last.map { Int(LogProfile.second($0) - start) + 1 } ?? 0
        var sent = [Int](repeating: 0, count: seconds)
        var refused = [Int](repeating: 0, count: seconds)
        for (second, count) in profile.perSecond { sent[Int(second - start)] += count }
        for (second, count) in profile.rateLimitedPerSecond { refused[Int(second - start)] += count }
        self.init(byOperation: profile.operations.mapValues(\.requests), firstAttempts: firstAttempts, perSecond: sent, rateLimitedPerSecond: refused)
    }

    public var rateLimitedShare: Double { requests > 0 ? Double(rateLimited) / Double(requests) : 0 }
    public var attemptsPerRequest: Double { firstAttempts > 0 ? Double(requests) / Double(firstAttempts) : 1 }

    /// The busiest second: its index and requests.
    public var peakSecond: (second: Int, requests: Int) {
        var best = (second: 0, requests: 0)
        for (second, count) in perSecond.enumerated() where count > best.requests { best = (second, count) }
        return best
    }

    /// The busiest 60 seconds (any 60 in a row; all of a shorter log): their first second and
    /// requests.
    public var peakMinute: (second: Int, requests: Int) {
        var best = (second: 0, requests: perSecond.prefix(60).reduce(0, +))
        var window = best.requests
        var second = 60
        while second < perSecond.count {
            window += perSecond[second] - perSecond[second - 60]
            if window > best.requests { best = (second - 59, window) }
            second += 1
        }
        return best
    }

    /// The storm of 429s: its first second with a 429, and its drain time, from that second to
    /// the end of the last second with one. Nil without 429s.
    public var storm: (start: Int, drainSeconds: Int)? {
        guard let first = rateLimitedPerSecond.firstIndex(where: { $0 > 0 }),
              let last = rateLimitedPerSecond.lastIndex(where: { $0 > 0 }) else { return nil }
        return (first, last - first + 1)
    }
}

/// Whether a simulated run reproduces its log, figure by figure, within the tolerances issue 37
/// set for a fit: requests within 5 %, the 429 share within 3 points, the busiest minute within
/// 10 %, the storm's drain time within 20 %. `fit --check` stops on it: it says which figures
/// missed and exits 99, as `run` does for a failed threshold.
public struct FitVerdict: Sendable, Equatable {
    public struct Figure: Sendable, Equatable {
        public var name: String
        /// The simulated run's difference from the log: a share of the log's figure, or points
        /// (the 429 share).
        public var difference: Double
        public var tolerance: Double
        public var inPoints: Bool
        public var within: Bool { abs(difference) <= tolerance }
    }

    public var figures: [Figure]
    public var holds: Bool { figures.allSatisfy(\.within) }
    public var missed: [Figure] { figures.filter { !$0.within } }

    public init(log: LoadShape, simulated: LoadShape) {
        func relative(_ a: Int, _ b: Int) -> Double { a > 0 ? Double(b - a) / Double(a) : (b > 0 ? 1 : 0) }
        figures = [
            Figure(name: "requests", difference: relative(log.requests, simulated.requests), tolerance: 0.05, inPoints: false),
            Figure(name: "429 share", difference: simulated.rateLimitedShare - log.rateLimitedShare, tolerance: 0.03, inPoints: true),
            Figure(name: "busiest minute", difference: relative(log.peakMinute.requests, simulated.peakMinute.requests), tolerance: 0.10, inPoints: false),
        ]
        if let storm = log.storm {
            figures.append(Figure(name: "drain time", difference: relative(storm.drainSeconds, simulated.storm?.drainSeconds ?? 0), tolerance: 0.20, inPoints: false))
        }
    }
}
