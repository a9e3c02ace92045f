import PushSwarmCore

/// The per-address limit a log's 429s show: the rate and burst of an nginx `limit_req` (a leaky
/// bucket to the millisecond, keyed by client address) that best tells, request by request, which
/// of the refused addresses' requests were admitted and which refused; and whether admitted ones
/// were delayed (nginx's default) or not (`nodelay`).
///
/// The estimators: a rate from below (admissions within the addresses' spans of refusals) and one
/// from above (each refusal's distance to the admission before it) bound the search; rate and
/// burst are then searched together, every candidate replayed through the limiter's own
/// arithmetic (`RateLimiter.leakyStep`) over the addresses that were refused, scoring the share of
/// requests whose outcome it gets right. The delay mode needs durations: admitted requests that
/// the fitted limiter would delay by 100 ms or more took that long (delay) or not (nodelay).
public struct LimiterFit: Sendable, Equatable {
    public var perSecond: Double
    public var burst: Int
    /// nil when the log has no durations to tell.
    public var nodelay: Bool?
    /// The share of the refused addresses' requests whose outcome the fitted limiter predicts.
    public var agreement: Double
    /// The addresses and requests it rests on.
    public var addresses: Int
    public var requests: Int
    /// The refusals among them: below `fewestRefusals` the fit says little.
    public var refusals: Int
    public static let fewestRefusals = 10
    /// Below this agreement the 429s are not one per-address leaky bucket's (another key, another
    /// algorithm, the service's own refusals): `fit` says so rather than write the limit.
    public static let convincingAgreement = 0.9

    /// One request of an address, as the limiter saw it.
    public struct Request: Sendable {
        public var microseconds: Int64
        public var admitted: Bool
        public var durationMicroseconds: Int64?

        public init(microseconds: Int64, admitted: Bool, durationMicroseconds: Int64? = nil) {
            self.microseconds = microseconds
            self.admitted = admitted
            self.durationMicroseconds = durationMicroseconds
        }
    }

    /// At most this many refused addresses are replayed (those refused most): the fit of a large
    /// log stays within seconds.
    public static let addressLimit = 64
    /// And once they hold this many requests, no more addresses are added.
    public static let requestLimit = 20_000
    /// How far apart in microseconds two requests may be logged out of their order.
    static let orderTolerance: Int64 = 2_000

    /// Whether the limit is worth writing: enough refusals, told well enough.
    public var isConvincing: Bool { refusals >= Self.fewestRefusals && agreement >= Self.convincingAgreement }

    /// The addresses with a refusal, refused most first, at most `addressLimit` of them and,
    /// once they hold `requestLimit` requests, no more: what the limiter and the retry rule are
    /// fitted to. Returns them and their requests.
    static func mostRefused<Element>(_ addresses: [[Element]], refused: (Element) -> Bool) -> (addresses: [[Element]], requests: Int) {
        mostRefused(addresses, refused: refused, counted: { _ in true })
    }

    /// `mostRefused` where only the elements `counted` takes are the address's requests (the
    /// sample is chosen before they are converted to what the fit reads).
    static func mostRefused<Element>(_ addresses: [[Element]], refused: (Element) -> Bool, counted: (Element) -> Bool) -> (addresses: [[Element]], requests: Int) {
        var sample: [[Element]] = []
        var taken = 0
        let ranked = addresses.map { ($0, $0.count(where: refused)) }.filter { $0.1 > 0 }.sorted { $0.1 > $1.1 }
        for (address, _) in ranked {
            guard sample.count < addressLimit, taken < requestLimit || sample.isEmpty else { break }
            sample.append(address)
            taken += address.count(where: counted)
        }
        return (sample, taken)
    }

    /// The fit over each address's requests in time order (2xx as admitted, the limiter's status
    /// as refused; others left out by the caller). Nil when no address was refused.
    public static func fit(_ addresses: [[Request]]) -> LimiterFit? {
        let (refused, requests) = mostRefused(addresses) { !$0.admitted }
        guard !refused.isEmpty else { return nil }

        // The rate: while an address is refused its bucket stays full, so between its first and
        // its last refusal it is admitted the rate a second (less where the bucket ran empty in
        // between): the admissions over the spans, summed over addresses, are a rate from below.
        // And a bound from above: a request refused at t, after the address's last admission at
        // t0, found the bucket short of a request's worth of room, which a bucket of any burst
        // has again 1/rate after an admission: rate < 1 / (t - t0).
        var admittedInSpans = 0
        var spanSeconds = 0.0
        var mostInASecond = 1
        var ceiling = Double.infinity
        // A log's times are to the millisecond at best, and one taken as the logged end less
        // the duration can put a refusal a millisecond before the admission that came just
        // ahead of it: an admission up to `orderTolerance` after a refusal counts as before it
        // (no bound from that refusal).
        for address in refused {
            var lastAdmitted: Int64?
            for (index, request) in address.enumerated() {
                if request.admitted {
                    lastAdmitted = request.microseconds
                    continue
                }
                guard let last = lastAdmitted, request.microseconds - last >= 1_000 else { continue }
                var next = index + 1
                var admittedJustAfter = false
                while next < address.count, address[next].microseconds - request.microseconds <= Self.orderTolerance {
                    if address[next].admitted {
                        admittedJustAfter = true
                        break
                    }
                    next += 1
                }
                if !admittedJustAfter { ceiling = min(ceiling, 1_000_000 / Double(request.microseconds - last)) }
            }
            var start = 0
            var admittedInWindow = 0
            for end in address.indices {
                if address[end].admitted { admittedInWindow += 1 }
                while address[end].microseconds - address[start].microseconds >= 1_000_000 {
                    if address[start].admitted { admittedInWindow -= 1 }
                    start += 1
                }
                mostInASecond = max(mostInASecond, admittedInWindow)
            }
            guard let first = address.firstIndex(where: { !$0.admitted }), let last = address.lastIndex(where: { !$0.admitted }), last > first else { continue }
            admittedInSpans += address[first...last].count { $0.admitted }
            spanSeconds += Double(address[last].microseconds - address[first].microseconds) / 1_000_000
        }
        let seed = spanSeconds >= 1 ? max(Double(admittedInSpans) / spanSeconds, 0.01) : Double(mostInASecond)

        func score(_ rate: Double, _ burst: Int) -> Int {
            var right = 0
            replay(refused, rate: rate, burst: burst) { request, admitted, _ in
                if admitted == request.admitted { right += 1 }
            }
            return right
        }
        // The best burst for a rate: scores over bursts rise to a plateau and fall; a coarse pass
        // over powers of two, then every burst between the best one's neighbours.
        let burstCeiling = min(mostInASecond * 4, 10_000)
        func bestBurst(_ rate: Double) -> (burst: Int, score: Int) {
            var candidates = [0]
            var value = 1
            while value <= burstCeiling {
                candidates.append(value)
                value *= 2
            }
            var best = (burst: 0, score: -1)
            for candidate in candidates {
                let found = score(rate, candidate)
                if found > best.score { best = (candidate, found) }
            }
            let low = max(0, best.burst / 2), high = min(burstCeiling, max(1, best.burst * 2))
            for candidate in low...high where candidate != best.burst {
                let found = score(rate, candidate)
                if found > best.score || (found == best.score && candidate < best.burst) { best = (candidate, found) }
            }
            return best
        }
        // The score is sharp in the rate (where the bucket is full for long, a rate 1 % off
        // mispredicts one request in eight), and the seed is low where buckets ran empty between
        // refusals. So: a first pass from 0.8 times the seed to the bound from above (1 % past it,
        // for the milliseconds nginx counts in), 1 % apart and every whole
        // number a second; then 0.1 % apart around the five best, with every whole number a
        // minute there (nginx takes r/s and r/m). A whole number wins a tie: what a person set.
        let low = min(seed * 0.8, ceiling * 0.5)
        let high = ceiling.isFinite ? max(ceiling * 1.01, low * 1.05) : max(seed * 1.6, Double(mostInASecond) * 1.1)
        var first: [(rate: Double, configured: Bool)] = []
        var rate = low
        while rate <= high {
            first.append((rate, false))
            rate *= 1.01
        }
        for perSecond in Self.wholeNumbers(from: low, to: high) { first.append((Double(perSecond), true)) }
        var scored = first.map { candidate in (candidate: candidate, found: bestBurst(candidate.rate)) }
        scored.sort { $0.found.score > $1.found.score }
        var second: [(rate: Double, configured: Bool)] = []
        for top in scored.prefix(5) {
            let center = top.candidate.rate
            rate = center / 1.015
            while rate <= center * 1.015 {
                second.append((rate, false))
                rate *= 1.001
            }
            for count in Self.wholeNumbers(from: center / 1.015 * 60, to: center * 1.015 * 60) { second.append((Double(count) / 60, true)) }
        }
        var chosen = (rate: seed, burst: 0, score: -1, configured: false)
        for (candidate, found) in Array(scored.prefix(5)) + second.map({ ($0, bestBurst($0.rate)) })
        where found.score > chosen.score || (found.score == chosen.score && candidate.configured && !chosen.configured) {
            chosen = (candidate.rate, found.burst, found.score, candidate.configured)
        }
        return LimiterFit(
            perSecond: chosen.rate, burst: chosen.burst, nodelay: delayMode(refused, rate: chosen.rate, burst: chosen.burst),
            agreement: Double(chosen.score) / Double(max(1, requests)), addresses: refused.count, requests: requests,
            refusals: refused.reduce(0) { $0 + $1.count { !$0.admitted } })
    }

    /// The whole numbers from `low` to `high`, at least 1, at most `wholeNumberLimit` of them (the
    /// lowest): none when there is none between them.
    static func wholeNumbers(from low: Double, to high: Double) -> [Int] {
        guard low.isFinite, high.isFinite, high >= 1, low <= high else { return [] }
        let first = max(1, Int(min(low, 1e12).rounded(.up)))
        let last = Int(min(high, 1e12).rounded(.down))
        guard first <= last else { return [] }
        return Array(first...min(last, first + wholeNumberLimit - 1))
    }

    static let wholeNumberLimit = 2_000

    /// Puts each address's requests through a leaky bucket of `rate` and `burst`, as the mock's
    /// limiter would (a key's first request admitted with nothing in the bucket), handing `each`
    /// the request, whether the bucket admits it, and the excess it leaves when it does.
    private static func replay(_ addresses: some Collection<[Request]>, rate: Double, burst: Int, _ each: (Request, Bool, Int64) -> Void) {
        let perSecond = Int64((rate * 1_000).rounded())
        let limit = Int64(burst) * 1_000
        for address in addresses {
            var state: (excess: Int64, last: Int64)?
            for request in address {
                let now = request.microseconds / 1_000
                guard let stored = state else {
                    state = (0, now)
                    each(request, true, 0)
                    continue
                }
                let step = RateLimiter.leakyStep(excess: stored.excess, lastMilliseconds: stored.last, nowMilliseconds: now, perSecond: perSecond, limit: limit)
                if step.admitted { state = (step.excess, step.lastMilliseconds) }
                each(request, step.admitted, step.excess)
            }
        }
    }

    /// Whether admitted requests the limiter would have held back 100 ms or more took that long:
    /// nginx's default delays them (false: not `nodelay`); nil without durations.
    private static func delayMode(_ addresses: some Collection<[Request]>, rate: Double, burst: Int) -> Bool? {
        let perSecond = max(Int64((rate * 1_000).rounded()), 1)
        var delayed = 0, tookIt = 0
        replay(addresses, rate: rate, burst: burst) { request, admitted, excess in
            let wait = excess * 1_000 / perSecond
            guard admitted, request.admitted, wait >= 100, let duration = request.durationMicroseconds else { return }
            delayed += 1
            if duration / 1_000 >= wait / 2 { tookIt += 1 }
        }
        guard delayed >= 10 else { return nil }
        return tookIt * 2 < delayed
    }
}
