import PushSwarmCore
import PushSwarmMetrics

/// The clients' retry rule a log's 429s show, and which of its requests were retries.
///
/// A client that retries a refused request at fixed delays (jitter none: 1 s, 2 s, 4 s…) sends it
/// again that long after the refusal's answer left the service (and its own turnaround), from
/// the same address, to the same operation. Each candidate rule (first delay, multiplier, cap)
/// is replayed over the refused addresses' requests in time order: every 429 expects its retry
/// in a window just after its delay (`searchWindow`), and a request of that address and
/// operation inside an open window is that retry (the next attempt of the same request). The
/// rule that finds the most retries beyond chance wins (a busy address sends requests at any
/// delay: the same rule looking 100 ms later is what chance finds), and its window is fitted to
/// the spread of the turnarounds its retries showed (a loaded client's come milliseconds late).
/// Through a carrier network the retries reach the service tens to hundreds of milliseconds
/// after their delays, spread by every packet's delay: where the search's windows find no fixed
/// delays, the rule is looked for as peaks (`throughNoise`), the network's noise measured apart
/// from it (`Noise`, written as `network.rtt`), and windows as wide as the noise take the
/// request nearest its median (`nearestAttempts`). Where neither finds fixed delays, the
/// clients draw them (jitter), and the fit assumes full jitter over the common table (1 s
/// doubling to 60 s).
/// `maxRetries` is counted: each attempt's windows against their flanks (`AttemptCounts`), the
/// limit where the next attempt's hold about nothing (`limitSeen`), else the last attempt whose
/// windows held retries.
/// Where a request's retry is, in a busy second, another request may come first within its
/// window and be taken for it, and a retry the client sent late is missed: the labelling is an
/// estimate. Its count is not: under the rule every window holds one retry, so a window that
/// took nothing is a retry labelled a first attempt (`Labelling.unmatched`), which the
/// scenario's fit takes off its operation's first attempts.
public struct RetryFit: Sendable, Equatable {
    public enum Jitter: String, Sendable {
        case none, full
    }

    public struct Rule: Sendable, Equatable {
        public var initialDelayMicroseconds: Int64
        public var multiplier: Double
        public var maxDelayMicroseconds: Int64
        public var maxRetries: Int
        public var jitter: Jitter
        /// Where a retry is looked for, from its delay after the 429's answer: the clients' and
        /// the network's turnaround (a retry never leaves before its delay; the log's times are
        /// to the millisecond).
        public var window: ClosedRange<Int64> = RetryFit.searchWindow
        /// Whether each window takes the request nearest where its retry is expected
        /// (`nearestAttempts`), not the first within it: a window widened by a network's noise
        /// holds chance requests before its retry.
        public var takesNearest = false
        /// Where within `window` a retry is expected, from its delay (the noise's median); the
        /// window's middle where nil.
        public var expected: Int64?

        public init(initialDelayMicroseconds: Int64, multiplier: Double, maxDelayMicroseconds: Int64, maxRetries: Int, jitter: Jitter) {
            self.initialDelayMicroseconds = initialDelayMicroseconds
            self.multiplier = multiplier
            self.maxDelayMicroseconds = maxDelayMicroseconds
            self.maxRetries = maxRetries
            self.jitter = jitter
        }

        /// The delay before retry `attempt` (1 for the first).
        func delay(attempt: Int) -> Int64 {
            var delay = Double(initialDelayMicroseconds)
            for _ in 1..<max(1, attempt) {
                delay *= multiplier
                if delay >= Double(maxDelayMicroseconds) { break }
            }
            return min(maxDelayMicroseconds, Int64(delay))
        }

        /// The same rule looking 100 ms after its delays: what it finds there, chance finds.
        var byChance: Rule {
            var later = self
            later.window = (window.lowerBound + 100_000)...(window.upperBound + 100_000)
            return later
        }

        /// Where the retry of a request refused at `end` is looked for.
        func window(afterRefusalAt end: Int64, attempt: Int) -> ClosedRange<Int64> {
            let delay = delay(attempt: attempt)
            switch jitter {
            case .none: return (end + delay + window.lowerBound)...(end + delay + window.upperBound)
            case .full: return end...(end + delay + window.upperBound)
            }
        }
    }

    public var rule: Rule
    /// How late after the rule's delays its retries reached the service, where the log showed
    /// it beyond a loopback turnaround (`Noise`); nil otherwise.
    public var noise: Noise?
    /// Retries the rule found over the addresses it was fitted to, and the same rule's count
    /// with its delays shifted out of their windows (what chance alone finds).
    public var found: Int
    public var control: Int
    /// Whether the log showed the clients giving up: the attempt past `rule.maxRetries` had its
    /// windows and they held about nothing. Where not (no request ran out of retries, or the log
    /// ends before any did), the limit is the most the log's retries show: the clients' is that
    /// or more.
    public var limitSeen = true
    /// The refused addresses and requests it rests on.
    public var addresses: Int
    public var requests: Int

    /// Where retries are looked for while the rule is searched: from 3 ms before the delay (the
    /// log's millisecond times) to 50 ms after it (a client's and the network's turnaround).
    /// The fitted rule then looks from 1 ms before to 10 ms after the commonest turnaround: a
    /// busy address sends other requests at any time, and a wider window takes more of them for
    /// retries; a narrower one misses the retries a client sent late (on loopback, 5 % came 2 to
    /// 5 ms after the commonest).
    public static let searchWindow: ClosedRange<Int64> = -3_000...50_000
    static func fittedWindow(_ turnarounds: [Int]) -> ClosedRange<Int64> {
        let mode = turnarounds.indices.max { turnarounds[$0] < turnarounds[$1] } ?? 0
        return Int64(mode - 1) * 1_000...Int64(mode + 10) * 1_000
    }
    /// The rule assumed when the delays are drawn: 1 s doubling to 60 s, full jitter.
    public static let assumedWhenJittered = Rule(
        initialDelayMicroseconds: 1_000_000, multiplier: 2, maxDelayMicroseconds: 60_000_000, maxRetries: 5, jitter: .full)
    /// Attempts past this are not looked for.
    static let mostRetries = 30

    /// Retries found per attempt.
    public struct Labelling: Sendable, Equatable {
        public var found: [Int] = []
        /// Per operation, where the windows within the log that took no request ended: retries
        /// that came outside them (late, or taken by another's window), labelled first attempts.
        public var unmatched: [UInt16: [Int64]] = [:]
        public var total: Int { found.reduce(0, +) }

        mutating func count(found attempt: Int) {
            while found.count <= attempt { found.append(0) }
            found[attempt] += 1
        }
    }

    /// Labels one address's requests (in time order): for each, its attempt (0 for a request's
    /// first, 1 for its first retry…), under `rule`, counting into `labelling`.
    public static func attempts(
        of requests: [LogProfile.LoggedRequest], rule: Rule, logEnd: Int64, labelling: inout Labelling
    ) -> [UInt8] {
        if rule.takesNearest { return nearestAttempts(of: requests, rule: rule, logEnd: logEnd, labelling: &labelling) }
        var open: [UInt16: Windows] = [:]
        var attempts = [UInt8](repeating: 0, count: requests.count)
        for (index, request) in requests.enumerated() {
            var attempt = 0
            if var windows = open[request.operation] {
                let (matched, missed) = windows.take(at: request.microseconds)
                if let matched {
                    attempt = matched
                    labelling.count(found: attempt)
                }
                if !missed.isEmpty { labelling.unmatched[request.operation, default: []] += missed }
                open[request.operation] = windows
            }
            attempts[index] = UInt8(attempt)
            guard request.status == 429, attempt < rule.maxRetries else { continue }
            let window = rule.window(afterRefusalAt: request.endMicroseconds, attempt: attempt + 1)
            open[request.operation, default: Windows()].insert(window, attempt: attempt + 1)
        }
        for (operation, windows) in open {
            let missed = windows.openEnding(atOrBefore: logEnd)
            if !missed.isEmpty { labelling.unmatched[operation, default: []] += missed }
        }
        return attempts
    }

    /// Each address's request starts per operation, in time order.
    static func starts(_ requests: [LogProfile.LoggedRequest]) -> [UInt16: [Int64]] {
        var starts: [UInt16: [Int64]] = [:]
        for request in requests { starts[request.operation, default: []].append(request.microseconds) }
        return starts
    }

    /// How many requests came each millisecond from 0 to 50 after the delays the rule expects
    /// (every request of the address and operation, not only the one taken as the retry: the
    /// first in a window may be another's).
    static func turnarounds(_ sample: [[LogProfile.LoggedRequest]], rule: Rule, logEnd: Int64) -> [Int] {
        var counts = [Int](repeating: 0, count: 51)
        for requests in sample {
            var labelling = Labelling()
            let attempts = attempts(of: requests, rule: rule, logEnd: logEnd, labelling: &labelling)
            let starts = starts(requests)
            for (index, request) in requests.enumerated() where request.status == 429 && Int(attempts[index]) < rule.maxRetries {
                guard let times = starts[request.operation] else { continue }
                let due = request.endMicroseconds + rule.delay(attempt: Int(attempts[index]) + 1)
                var low = times.partitioningIndex { $0 >= due }
                while low < times.count, times[low] - due <= 50_999 {
                    counts[Int((times[low] - due) / 1_000)] += 1
                    low += 1
                }
            }
        }
        return counts
    }

    /// The rule that finds the most retries over the addresses refused most (at most
    /// `LimiterFit.addressLimit` of them, `LimiterFit.requestLimit` requests); nil when no
    /// request was refused.
    public static func fit(_ profile: LogProfile) -> RetryFit? {
        let (sample, taken) = LimiterFit.mostRefused(Array(profile.byAddress.values)) { $0.status == 429 }
        guard !sample.isEmpty, let logEnd = profile.last else { return nil }
        func score(_ rule: Rule) -> Labelling {
            var labelling = Labelling()
            for requests in sample { _ = attempts(of: requests, rule: rule, logEnd: logEnd, labelling: &labelling) }
            return labelling
        }
        // A candidate scores the retries it finds beyond what chance finds: the same windows
        // later (at a busy address any short rule finds requests by chance).
        func excess(_ rule: Rule) -> Int { score(rule).total - score(rule.byChance).total }
        /// The candidate whose windows (`window` after each delay) find the most retries beyond chance.
        func search(_ window: ClosedRange<Int64>) -> (rule: Rule, excess: Int)? {
            var best: (rule: Rule, excess: Int)?
            for candidate in candidates() {
                var rule = candidate
                rule.window = window
                let found = excess(rule)
                // Strictly more: of equals, the first (the shorter delays, the simpler rule).
                if found > best?.excess ?? 0 { best = (rule, found) }
            }
            return best
        }
        var rule = search(searchWindow)?.rule ?? assumedWhenJittered
        // The turnaround: the millisecond after their delays that requests came in most.
        rule.window = fittedWindow(turnarounds(sample, rule: rule, logEnd: logEnd))
        let labelling = score(rule)
        let control = score(rule.byChance).total
        let addresses = sample.count
        // Retries at fixed delays within milliseconds of them: clearly beyond chance, and a
        // quarter at least of what the windows find.
        let onLoopback = clearlyBeyondChance(found: labelling.total, chance: control, fewest: LimiterFit.fewestRefusals)
            && Double(labelling.total - control) >= 0.25 * Double(labelling.total)
        var noise: Noise?
        var told: Rule?
        if onLoopback {
            // A loaded client's timers fire late (a generator behind by milliseconds): its
            // retries spread over several milliseconds after the commonest turnaround, so the
            // window is fitted to that spread, measured as a network's noise is (`noise`, over
            // the search's window), and the attempts are counted against the window's flanks as
            // through a network (in CI beside the other suites, windows of 1 ms before to 10 ms
            // after the commonest turnaround fitted 4 retries where the clients made 5, and
            // here, at generator lag 2 to 3 ms on average, 1).
            var wide = rule
            wide.window = searchWindow
            if let spread = Self.noise(sample, rule: wide, logEnd: logEnd) {
                rule.window = fittedWindow(spread)
                rule.expected = spread.medianMicroseconds
            }
        } else if let found = throughNoise(sample, logEnd: logEnd) {
            // The attempts are told in the window that stands furthest above chance; every
            // request is labelled in one wide enough for nearly all the noise, taking the one
            // nearest the noise's median.
            told = found.rule
            rule = found.rule
            rule.window = fittedWindow(found.noise)
            rule.expected = found.noise.medianMicroseconds
            noise = found.noise
        } else {
            rule = assumedWhenJittered
            rule.window = 0...RetryFit.searchWindow.upperBound
            return RetryFit(rule: rule, found: score(rule).total, control: control, addresses: addresses, requests: taken)
        }
        // The clients' limit: a client that gives up after n retries leaves attempt n + 1's
        // windows to chance. At a busy address a window (hundreds of milliseconds wide through
        // a noisy network) often holds some request, so the retries are told by counting what
        // each attempt's windows hold beyond their flanks (`AttemptCounts`), about a retry each
        // where the clients made that attempt (and those of the NAT's devices refused with
        // them). Where the log holds requests refused for the last time, the attempt after the
        // limit has as many windows as any: the limit is the first attempt whose next one's
        // windows (a twentieth of the first's at least) hold half a retry each fewer, and
        // nothing clearly beyond chance (two standard deviations) or a third of what its own
        // held at most: an attempt the clients made holds about what the one before it did,
        // and one past their limit only the retries of devices refused with the last (0.1 to
        // 0.3 a window where the attempts before held 1 to 2 on loopback, 0.16 to 0.82 where
        // they held 2.9 to 3.2 through 150 ± 80 ms), and a third is about the geometric middle
        // (a quarter fitted 7 retries where the clients made 5, 0.82 against 3.2). Where none is (no
        // request ran out, or too few to tell), a retry at attempt n shows attempts 1 to n - 1
        // were made: the last attempt from which on the windows held retries, pooled. Attempts
        // with fewer windows than a twentieth of the first's are told by mislabelled ones.
        let counts = AttemptCounts(sample, rule: told ?? rule, logEnd: logEnd)
        func each(_ attempt: Int) -> Double { counts.excess(attempt) / Double(max(1, counts.windows(attempt))) }
        let stopped = counts.attempts.first { attempt in
            counts.windows(attempt + 1) >= max(5, counts.windows(1) / 20) && each(attempt) - each(attempt + 1) >= 0.5
                && (!counts.beyondChance(attempt + 1, standardDeviations: 2) || each(attempt + 1) <= each(attempt) / 3)
        }
        let made = counts.attempts.filter { attempt in
            counts.windows(attempt) * 20 >= counts.windows(1) && counts.windows(from: attempt) >= 5 && counts.heldRetries(from: attempt)
        }
        rule.maxRetries = stopped ?? made.last ?? 1
        // A cap past the last retry's delay is in no log (no retry waited for it), and the search,
        // scoring every candidate to `mostRetries`, took any cap beyond it that chance favoured
        // (on a busy machine, 8 s for the spec's 1, 2, 4 s): the rule says the longest delay
        // its retries waited. Each retry's delay is the same.
        rule.maxDelayMicroseconds = rule.delay(attempt: rule.maxRetries)
        var fit: RetryFit
        if let noise {
            // What the windows hold against their flanks.
            let held = AttemptCounts(sample, rule: rule, logEnd: logEnd)
            fit = RetryFit(rule: rule, noise: noise, found: held.heldTotal, control: held.flanksTotal / 2, addresses: addresses, requests: taken)
        } else {
            fit = RetryFit(rule: rule, found: score(rule).total, control: score(rule.byChance).total, addresses: addresses, requests: taken)
        }
        fit.limitSeen = stopped != nil
        return fit
    }

    /// The first delays searched, seconds.
    static let initialDelays: [Double] = [0.1, 0.2, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 15, 30, 60]

    /// Whether `found` retries are clearly more than the `chance` the same windows 100 ms later
    /// found: `fewest` beyond it at least, to tell, and four standard deviations of chance's count.
    static func clearlyBeyondChance(found: Int, chance: Int, fewest: Int) -> Bool {
        let excess = Double(found - chance)
        return excess >= Double(fewest) && excess >= 4 * Double(chance).squareRoot()
    }
}

/// The windows one address and operation has open for retries, earliest start first.
struct Windows {
    private var starts: [Int64] = []
    private var ends: [Int64] = []
    private var attempts: [Int] = []
    private var head = 0

    /// The attempt of the earliest-starting open window holding `instant`, closing it, and the
    /// ends of the windows that ended before `instant`, closed unmatched.
    mutating func take(at instant: Int64) -> (attempt: Int?, missed: [Int64]) {
        var missed: [Int64] = []
        while head < starts.count, ends[head] < instant {
            missed.append(ends[head])
            head += 1
        }
        defer { compact() }
        guard head < starts.count, starts[head] <= instant else { return (nil, missed) }
        let attempt = attempts[head]
        head += 1
        return (attempt, missed)
    }

    /// The ends of the windows still open that end at or before `instant`.
    func openEnding(atOrBefore instant: Int64) -> [Int64] {
        ends[head...].filter { $0 <= instant }
    }

    mutating func insert(_ window: ClosedRange<Int64>, attempt: Int) {
        // After every open window that starts no later.
        let index = starts[head...].partitioningIndex { $0 > window.lowerBound }
        starts.insert(window.lowerBound, at: index)
        ends.insert(window.upperBound, at: index)
        attempts.insert(attempt, at: index)
    }

    private mutating func compact() {
        guard head > 64, head * 2 > starts.count else { return }
        starts.removeFirst(head)
        ends.removeFirst(head)
        attempts.removeFirst(head)
        head = 0
    }
}
