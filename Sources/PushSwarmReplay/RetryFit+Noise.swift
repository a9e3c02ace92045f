import Foundation
public import PushSwarmCore
import PushSwarmMetrics

/// The retry rule through a noisy network: a carrier network spreads each retry's arrival after
/// its delay over tens to hundreds of milliseconds, so the rule is looked for as peaks after its
/// delays, the noise measured apart from it, and windows as wide as the noise take the request
/// nearest their centre (docs/incident-replay.md, "Through a noisy network").
extension RetryFit {
    /// How late after their delays the retries reached the service: the answer's way back to the
    /// client, its turnaround and its retry's way out, which a carrier network spreads over tens
    /// to hundreds of milliseconds. Estimated from the log alone (`throughNoise`), relative to
    /// the rule's delays.
    public struct Noise: Sendable, Equatable {
        public var medianMicroseconds: Int64
        public var lowerQuartileMicroseconds: Int64
        public var upperQuartileMicroseconds: Int64
        /// The requests beyond chance in the peak it was measured on.
        public var retries: Int

        /// The round trip a replay's requests take (`network.rtt`): a log-normal of the noise's
        /// median and quartiles.
        public var roundTrip: Distribution {
            // To the millisecond and σ to the hundredth: a person reads and edits it.
            let median = (Double(medianMicroseconds) / 1_000).rounded() / 1_000
            let low = Double(max(1, lowerQuartileMicroseconds)), high = Double(max(upperQuartileMicroseconds, lowerQuartileMicroseconds + 1))
            // The quartiles of a normal are 0.674 σ either side of its median.
            let sigma = (min(2, max(0, log(high / low) / 1.349)) * 100).rounded() / 100
            return sigma < 0.01 ? .constant(median) : .logNormal(median: median, sigma: sigma)
        }
    }

    /// Lags of the correlogram, 1 ms each: to 65 s (the longest delay searched, and its noise).
    static let correlogramBins = 65_000
    /// The pairs of a 429 and a later request the correlogram counts at most.
    static let correlogramPairs = 50_000_000

    /// For every 429 of the sample, the requests of its address and operation that came 0 to
    /// 65 s after its answer, counted by their lag (1 ms bins), as prefix sums.
    struct Correlogram {
        private var sums: [Int]

        init(_ sample: [[LogProfile.LoggedRequest]]) {
            var lags = [Int](repeating: 0, count: RetryFit.correlogramBins)
            var pairs = 0
            addresses: for requests in sample {
                let starts = RetryFit.starts(requests)
                for request in requests where request.status == 429 {
                    guard let times = starts[request.operation] else { continue }
                    let end = request.endMicroseconds
                    var next = times.partitioningIndex { $0 > end }
                    while next < times.count {
                        let lag = Int((times[next] - end) / 1_000)
                        guard lag < RetryFit.correlogramBins else { break }
                        lags[lag] += 1
                        next += 1
                        pairs += 1
                    }
                    if pairs > RetryFit.correlogramPairs { break addresses }
                }
            }
            sums = [Int](repeating: 0, count: lags.count + 1)
            for (lag, count) in lags.enumerated() { sums[lag + 1] = sums[lag] + count }
        }

        /// Pairs with lags from `from` up to `to` milliseconds.
        func count(_ from: Int, _ to: Int) -> Double {
            Double(sums[max(0, min(sums.count - 1, to))] - sums[max(0, min(sums.count - 1, from))])
        }

        /// A peak `width` ms wide at `lag`: what it holds beyond the mean of its two flanks (as
        /// wide, either side), and that excess's variance.
        func peak(at lag: Int, width: Int) -> (excess: Double, variance: Double) {
            let half = width / 2
            let held = count(lag - half, lag - half + width)
            let flanks = count(lag - half - width, lag - half) + count(lag - half + width, lag - half + 2 * width)
            return (held - flanks / 2, held + flanks / 4)
        }
    }

    /// Through a network that delays each packet, retries at fixed delays do not come within
    /// milliseconds of them: each delay's retries make a peak in the correlogram, tens to
    /// hundreds of milliseconds wide, some way after the delay (the noise's median). Chance makes
    /// the correlogram smooth (the address's rate, which a storm changes by the second), so a
    /// peak is what stands above its flanks. Each candidate rule (the delays searched), each
    /// median from 10 ms before its delays to a second after, and each width from 10 to 320 ms
    /// is scored by its peaks' excess over all its delays, in standard deviations; the best, at
    /// six at least (the most that chance reaches over so many candidates is about five), is
    /// the clients' rule at their delays. Nil where none is.
    static func proposals(_ correlogram: Correlogram) -> [(rule: Rule, medianMicroseconds: Int64, widthMicroseconds: Int64, standardDeviations: Double)] {
        var best: [(rule: Rule, median: Int, width: Int, z: Double)] = []
        for rule in candidates() {
            var top: (rule: Rule, median: Int, width: Int, z: Double)?
            for width in [10, 20, 40, 80, 160, 320] {
                for median in stride(from: -10, through: 1_000, by: max(1, width / 8)) {
                    // Flanks whole, after the 429's answer.
                    guard Int(rule.initialDelayMicroseconds / 1_000) + median >= width / 2 + width else { continue }
                    var excess = 0.0, variance = 0.0
                    var previous: Int64 = -1
                    for attempt in 1...mostRetries {
                        let delay = rule.delay(attempt: attempt)
                        guard delay != previous else { break }
                        previous = delay
                        let lag = Int(delay / 1_000) + median
                        guard lag + 2 * width < correlogramBins else { break }
                        let peak = correlogram.peak(at: lag, width: width)
                        excess += peak.excess
                        variance += peak.variance
                    }
                    let z = excess / max(1, variance).squareRoot()
                    if z > top?.z ?? 3 { top = (rule, median, width, z) }
                }
            }
            if let top { best.append(top) }
        }
        // The best of each first delay: a storm's chance makes the caps of one first delay stand
        // about as high as each other, and the first delay is what tells rules apart.
        var proposals: [(rule: Rule, median: Int, width: Int, z: Double)] = []
        for proposal in best.sorted(by: { $0.z > $1.z })
        where !proposals.contains(where: { $0.rule.initialDelayMicroseconds == proposal.rule.initialDelayMicroseconds }) {
            proposals.append(proposal)
        }
        return proposals.map { ($0.rule, Int64($0.median) * 1_000, Int64($0.width) * 1_000, $0.z) }
    }

    /// The rules searched: first delays from 100 ms to 60 s, multipliers 1, 1.5, 2 and 3, every
    /// cap they reach up to 10 min; every attempt to `mostRetries`.
    static func candidates() -> [Rule] {
        var rules: [Rule] = []
        for initial in initialDelays {
            for multiplier in [1, 1.5, 2, 3] {
                var cap = initial
                for step in 0..<(multiplier == 1 ? 1 : 9) {
                    if step > 0 { cap *= multiplier }
                    guard cap <= 600 else { break }
                    rules.append(Rule(
                        initialDelayMicroseconds: Int64(initial * 1_000_000), multiplier: multiplier,
                        maxDelayMicroseconds: Int64((cap * 1_000_000).rounded()), maxRetries: mostRetries, jitter: .none))
                }
            }
        }
        return rules
    }

    /// The rule and noise a log recorded through a noisy network shows: of the rules the
    /// correlogram puts forward (`proposals`), each scored by what its attempts' windows hold
    /// beyond their flanks (`AttemptCounts`: each window counts the chance of one 429's
    /// retry, where a peak of the correlogram counts every 429's), its window's centre and width
    /// moved to where that excess stands furthest above chance, in standard deviations. The best,
    /// at six at least, is the clients' rule (chance over so many candidates reaches about
    /// five); its window's centre the noise's median, and the noise's quartiles those of what
    /// the windows hold beyond chance, over twice the window. Nil where none stands so high.
    static func throughNoise(_ sample: [[LogProfile.LoggedRequest]], logEnd: Int64) -> (rule: Rule, noise: Noise)? {
        func scored(_ rule: Rule, centre: Int64, width: Int64) -> (rule: Rule, z: Double) {
            var rule = rule
            rule.window = (centre - width / 2)...(centre + width / 2)
            rule.takesNearest = true
            return (rule, AttemptCounts(sample, rule: rule, logEnd: logEnd).standardDeviations)
        }
        // Each proposal at its own window, then the four best moved, step by step, to where
        // they stand highest.
        let proposed = proposals(Correlogram(sample)).map { proposal in
            (proposal, scored(proposal.rule, centre: proposal.medianMicroseconds, width: proposal.widthMicroseconds).z)
        }
        // The six first delays standing highest (a first delay's caps and multipliers whose
        // delays are the same count once), each moved to where it stands highest.
        var refined: [(rule: Rule, z: Double)] = []
        var tried: Set<Int64> = []
        for (proposal, _) in proposed.sorted(by: { $0.1 > $1.1 }) where tried.count < 6 && tried.insert(proposal.rule.initialDelayMicroseconds).inserted {
            var centre = proposal.medianMicroseconds, width = proposal.widthMicroseconds
            var here = scored(proposal.rule, centre: centre, width: width)
            var step = max(2_000, width / 4)
            while step >= 2_000 {
                var moved = false
                for (nextCentre, nextWidth) in [(centre - step, width), (centre + step, width), (centre, width * 3 / 4), (centre, width * 4 / 3)]
                where nextWidth >= 8_000 && nextWidth <= 1_000_000 && nextCentre >= -10_000 + nextWidth / 2
                    // Its flank before it after the 429's answer, as the correlogram's.
                    && proposal.rule.initialDelayMicroseconds + nextCentre >= nextWidth / 2 + nextWidth {
                    let next = scored(proposal.rule, centre: nextCentre, width: nextWidth)
                    if next.z > here.z {
                        (here, centre, width, moved) = (next, nextCentre, nextWidth, true)
                    }
                }
                if !moved { step /= 2 }
            }
            refined.append(here)
        }
        // In a storm the delays add up: a request refused again and again is retried at the sums
        // of the clients' delays, and a NAT's devices refused together retry together, so a
        // rule whose one delay lies near such a sum (3 s for 0.5 + 1 + 2, plus the noise of
        // three crossings) stands high too, its windows holding many requests beyond chance
        // each: the retries of every device refused with the one that opened it (seven for a
        // recording through 40 ± 20 ms). A client's window holds one retry, its own, and those
        // of its NAT's devices refused within the window's width (a wide window, more: two for
        // 150 ± 80 ms): of the rules clearly beyond chance (eight standard deviations) whose
        // first two attempts' windows hold a quarter of a retry to two and a half each beyond
        // chance, the highest; none where none is (the
        // log is then taken for jittered clients' rather than told a rule it does not show).
        let plausible = refined.filter { candidate in
            guard candidate.z >= 8 else { return false }
            let counts = AttemptCounts(sample, rule: candidate.rule, logEnd: logEnd)
            return counts.clearlyBeyondChance(1) && (1...2).allSatisfy { attempt in
                let each = counts.excess(attempt) / Double(max(1, counts.windows(attempt)))
                return each >= 0.25 && each <= 2.5
            }
        }
        let best = plausible.max { $0.z < $1.z }
        guard let found = best?.rule else { return nil }
        var rule = found
        var most = AttemptCounts(sample, rule: found, logEnd: logEnd).excess
        // The cap: few windows come at the attempts past it, so what they hold hardly tells one
        // cap from the next; of the caps of the rule's delays (to 10 min), the one whose windows
        // hold the most retries beyond chance (of equals the smallest: a cap past the delays
        // the retries waited is in no log).
        var cap = rule.initialDelayMicroseconds
        while rule.multiplier > 1, cap <= 600_000_000 {
            var capped = rule
            capped.maxDelayMicroseconds = cap
            let excess = AttemptCounts(sample, rule: capped, logEnd: logEnd).excess
            if excess > most || (excess == most && cap < rule.maxDelayMicroseconds) { (rule, most) = (capped, excess) }
            cap = Int64((Double(cap) * rule.multiplier).rounded())
        }
        guard let noise = noise(sample, rule: rule, logEnd: logEnd) else { return nil }
        return (rule, noise)
    }

    /// The noise around `rule`'s delays: per millisecond of its window after each delay, the
    /// requests of the refused address and operation, less chance (the level of the window's
    /// flanks, as `AttemptCounts` counts them), over the windows the rule opens; the quartiles
    /// of that excess. The window is where the retries stand furthest above chance, most of
    /// the noise's spread: the quartiles of what lies within it are near the noise's. Nil
    /// where it holds no excess.
    static func noise(_ sample: [[LogProfile.LoggedRequest]], rule: Rule, logEnd: Int64) -> Noise? {
        let width = rule.window.upperBound - rule.window.lowerBound + 1
        let bins = Int((width + 999) / 1_000)
        var held = [Double](repeating: 0, count: bins)
        var flanks = 0.0
        for requests in sample {
            var labelling = Labelling()
            let attempts = attempts(of: requests, rule: rule, logEnd: logEnd, labelling: &labelling)
            let starts = Self.starts(requests)
            for (index, request) in requests.enumerated() where request.status == 429 && Int(attempts[index]) < rule.maxRetries {
                let window = rule.window(afterRefusalAt: request.endMicroseconds, attempt: Int(attempts[index]) + 1)
                guard window.upperBound + width <= logEnd, let times = starts[request.operation] else { continue }
                var next = times.partitioningIndex { $0 >= window.lowerBound - width }
                while next < times.count, times[next] <= window.upperBound + width {
                    if window.contains(times[next]) {
                        held[min(bins - 1, Int((times[next] - window.lowerBound) / 1_000))] += 1
                    } else {
                        flanks += 1
                    }
                    next += 1
                }
            }
        }
        let level = flanks / 2 / Double(bins)
        let excess = held.map { $0 - level }
        let total = excess.reduce(0, +)
        guard total > 0 else { return nil }
        func quantile(_ share: Double) -> Int64 {
            var running = 0.0
            for (bin, count) in excess.enumerated() {
                running += count
                if running >= share * total { return rule.window.lowerBound + Int64(bin) * 1_000 + 500 }
            }
            return rule.window.upperBound
        }
        return Noise(
            medianMicroseconds: quantile(0.5), lowerQuartileMicroseconds: quantile(0.25), upperQuartileMicroseconds: quantile(0.75),
            retries: Int(total.rounded()))
    }

    /// The window fitted around a network's noise: 3.5 times each quartile's distance from the
    /// median either side (about 98 % of a normal's spread; a log-normal's longer tail after it),
    /// 1 ms before to 10 ms after the median's millisecond at least (the median is a
    /// millisecond's middle: the log's times are to the millisecond).
    static func fittedWindow(_ noise: Noise) -> ClosedRange<Int64> {
        let median = noise.medianMicroseconds
        let low = min(median - 1_500, median - 7 * (median - noise.lowerQuartileMicroseconds) / 2)
        let high = max(median + 9_500, median + 7 * (noise.upperQuartileMicroseconds - median) / 2)
        return max(-10_000, low)...high
    }

    /// Labels one address's requests (in time order) as `attempts` does, but each window takes,
    /// of its operation's requests within it that no window took before, the one nearest its
    /// centre, once it has closed (it has seen them all). A request's own window opens once every
    /// window that might take it has closed (a window's width after it), so its attempt is known.
    static func nearestAttempts(
        of requests: [LogProfile.LoggedRequest], rule: Rule, logEnd: Int64, labelling: inout Labelling
    ) -> [UInt8] {
        var attempts = [UInt8](repeating: 0, count: requests.count)
        var taken = [Bool](repeating: false, count: requests.count)
        // Each operation's requests, as indices in time order.
        var byOperation: [UInt16: [Int]] = [:]
        for (index, request) in requests.enumerated() { byOperation[request.operation, default: []].append(index) }
        let width = rule.window.upperBound - rule.window.lowerBound
        // Events in time order: a window closing (its range, attempt, operation), then a
        // request's attempt becoming known.
        var events = EventQueue()
        for (index, request) in requests.enumerated() where request.status == 429 {
            events.push(time: request.microseconds + width, closes: false, index: index)
        }
        var windows: [(range: ClosedRange<Int64>, attempt: Int, operation: UInt16)] = []
        while let event = events.pop() {
            if event.closes {
                let window = windows[event.index]
                guard let indices = byOperation[window.operation] else { continue }
                let centre = window.range.lowerBound + (rule.expected.map { $0 - rule.window.lowerBound } ?? width / 2)
                var next = indices.partitioningIndex { requests[$0].microseconds >= window.range.lowerBound }
                var best: Int?
                while next < indices.count, requests[indices[next]].microseconds <= window.range.upperBound {
                    let candidate = indices[next]
                    if !taken[candidate], best.map({ abs(requests[candidate].microseconds - centre) < abs(requests[$0].microseconds - centre) }) ?? true {
                        best = candidate
                    }
                    next += 1
                }
                if let best {
                    taken[best] = true
                    attempts[best] = UInt8(window.attempt)
                    labelling.count(found: window.attempt)
                } else if window.range.upperBound <= logEnd {
                    labelling.unmatched[window.operation, default: []].append(window.range.upperBound)
                }
            } else {
                let request = requests[event.index]
                let attempt = Int(attempts[event.index])
                guard attempt < rule.maxRetries else { continue }
                let range = rule.window(afterRefusalAt: request.endMicroseconds, attempt: attempt + 1)
                windows.append((range, attempt + 1, request.operation))
                events.push(time: range.upperBound, closes: true, index: windows.count - 1)
            }
        }
        return attempts
    }
}

/// Per attempt (1 for the first retry), the windows a rule opened that close within the log,
/// the requests of their address and operation they held, and those the two windows of the same
/// width either side held (`flanks`: twice what chance puts in one). Counted, not filled: a
/// window broadened by a network's noise at a busy address nearly always holds some request,
/// and only the count tells the retry in it from chance.
struct AttemptCounts {
    private(set) var windows: [Int] = []
    private(set) var held: [Int] = []
    private(set) var flanks: [Int] = []

    init(_ sample: [[LogProfile.LoggedRequest]], rule: RetryFit.Rule, logEnd: Int64) {
        for requests in sample {
            var labelling = RetryFit.Labelling()
            let attempts = RetryFit.attempts(of: requests, rule: rule, logEnd: logEnd, labelling: &labelling)
            var starts: [UInt16: [Int64]] = [:]
            for request in requests { starts[request.operation, default: []].append(request.microseconds) }
            for (index, request) in requests.enumerated() where request.status == 429 && Int(attempts[index]) < rule.maxRetries {
                let attempt = Int(attempts[index]) + 1
                let window = rule.window(afterRefusalAt: request.endMicroseconds, attempt: attempt)
                let width = window.upperBound - window.lowerBound + 1
                guard window.upperBound + width <= logEnd, let times = starts[request.operation] else { continue }
                while windows.count <= attempt {
                    windows.append(0)
                    held.append(0)
                    flanks.append(0)
                }
                windows[attempt] += 1
                let inWindow = Self.count(times, in: window)
                let beside = Self.count(times, in: (window.lowerBound - width)...(window.lowerBound - 1))
                    + Self.count(times, in: (window.upperBound + 1)...(window.upperBound + width))
                held[attempt] += inWindow
                flanks[attempt] += beside

            }
        }
    }

    private static func count(_ times: [Int64], in range: ClosedRange<Int64>) -> Int {
        let first = times.partitioningIndex { $0 >= range.lowerBound }
        return times[first...].partitioningIndex { $0 > range.upperBound } - first
    }

    var attempts: Range<Int> { 1..<max(1, windows.count) }
    var heldTotal: Int { held.reduce(0, +) }
    var flanksTotal: Int { flanks.reduce(0, +) }
    /// What every attempt's windows held beyond chance.
    var excess: Double { Double(heldTotal) - Double(flanksTotal) / 2 }
    func windows(_ attempt: Int) -> Int { attempt < windows.count ? windows[attempt] : 0 }
    /// What attempt `attempt`'s windows held beyond chance (half their flanks).
    func excess(_ attempt: Int) -> Double {
        attempt < held.count ? Double(held[attempt]) - Double(flanks[attempt]) / 2 : 0
    }
    /// Whether attempt `attempt`'s windows held clearly more than chance: five requests beyond
    /// it at least, and four standard deviations.
    func clearlyBeyondChance(_ attempt: Int) -> Bool {
        beyondChance(attempt, standardDeviations: 4) && excess(attempt) >= 5
    }

    /// Whether attempt `attempt`'s windows held more than chance by `standardDeviations`.
    func beyondChance(_ attempt: Int, standardDeviations: Double) -> Bool {
        guard attempt < held.count else { return false }
        return excess(attempt) >= standardDeviations * (Double(held[attempt]) + Double(flanks[attempt]) / 4).squareRoot()
    }

    /// Whether attempt `attempt`'s windows held retries: a quarter of a retry a window beyond
    /// chance at least (the clients made the attempt: its windows are told apart from
    /// chance's, in which a retry stands about two thirds of the time), and two standard
    /// deviations (past the clients' limit, chance alone).
    func heldRetries(from attempt: Int) -> Bool {
        guard attempt < held.count else { return false }
        let held = Double(held[attempt...].reduce(0, +)), flanks = Double(flanks[attempt...].reduce(0, +))
        let excess = held - flanks / 2
        return excess >= 0.25 * Double(windows(from: attempt)) && excess >= 1.65 * (held + flanks / 4).squareRoot()
    }

    /// The windows of attempt `attempt` and those after it.
    func windows(from attempt: Int) -> Int { attempt < windows.count ? windows[attempt...].reduce(0, +) : 0 }

    /// The excess over every attempt, in standard deviations (of a count less half another).
    var standardDeviations: Double {
        excess / max(1, Double(heldTotal) + Double(flanksTotal) / 4).squareRoot()
    }
}

/// A binary heap of `nearestAttempts`' events, earliest first, a window's closing before a
/// request's attempt becoming known at the same instant, then in the order pushed.
struct EventQueue {
    struct Event {
        var time: Int64
        var closes: Bool
        var index: Int
        var order: Int
    }

    private var heap: [Event] = []
    private var pushed = 0

    private static func before(_ a: Event, _ b: Event) -> Bool {
        if a.time != b.time { return a.time < b.time }
        if a.closes != b.closes { return a.closes }
        return a.order < b.order
    }

    mutating func push(time: Int64, closes: Bool, index: Int) {
        heap.append(Event(time: time, closes: closes, index: index, order: pushed))
        pushed += 1
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> Event? {
        guard let first = heap.first else { return nil }
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < heap.count, Self.before(heap[left], heap[smallest]) { smallest = left }
                if right < heap.count, Self.before(heap[right], heap[smallest]) { smallest = right }
                guard smallest != parent else { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return first
    }
}

