import PushSwarmCore
@testable import PushSwarmReplay
import Testing

/// The limit `fit` reads out of a log's 200s and 429s: traffic made here is put through the mock's
/// own limiter (nginx's `limit_req` arithmetic) with settings the test picks, and the fit must
/// find them again from the outcomes alone.
@Suite struct LimiterFitTests {
    /// `addresses` clients sending Poisson traffic at `load` requests a second each for `seconds`,
    /// through a leaky bucket of `rate` and `burst`: each address's requests with their outcome,
    /// and with the delay nginx would hold an admitted one for as its duration (plus 2 ms).
    private func traffic(rate: Double, burst: Int, nodelay: Bool, load: Double, addresses: Int, seconds: Double, seed: UInt64)
        -> [[LimiterFit.Request]]
    {
        var limiter = RateLimiter(rule: RateLimitRule(algorithm: .leakyBucket(perSecond: rate, burst: burst, nodelay: nodelay)))
        var random = SeededRandom(seed: seed, stream: .network)
        var result: [[LimiterFit.Request]] = []
        for address in 0..<addresses {
            var requests: [LimiterFit.Request] = []
            var time = 1_795_716_000.0 + random.nextUnit()
            let end = time + seconds
            // A burst of taps in the middle: three times the load for a fifth of the time.
            while time < end {
                let storm = time > end - seconds * 0.6 && time < end - seconds * 0.4
                time += random.nextExponential(mean: 1 / (storm ? load * 3 : load))
                let microseconds = Int64(time * 1_000_000)
                switch limiter.check("\(address)", at: Instant(microseconds: microseconds)) {
                case .admit(let delay): requests.append(LimiterFit.Request(microseconds: microseconds, admitted: true, durationMicroseconds: delay.microseconds + 2_000))
                case .refuse: requests.append(LimiterFit.Request(microseconds: microseconds, admitted: false, durationMicroseconds: 1_000))
                }
            }
            result.append(requests)
        }
        return result
    }

    @Test(arguments: [(7.0, 3, true), (10.0, 20, true), (2.5, 5, false), (50.0, 0, true)])
    func aLeakyBucketsRateAndBurstAreFoundFromTheOutcomes(rate: Double, burst: Int, nodelay: Bool) throws {
        let log = traffic(rate: rate, burst: burst, nodelay: nodelay, load: rate * 0.9, addresses: 12, seconds: 60, seed: UInt64(rate * 10) + UInt64(burst))
        let fit = try #require(LimiterFit.fit(log))
        #expect(abs(fit.perSecond - rate) / rate <= 0.05, "rate \(fit.perSecond) for \(rate)")
        #expect(abs(fit.burst - burst) <= max(1, burst / 10), "burst \(fit.burst) for \(burst)")
        #expect(fit.agreement >= 0.97, "agreement \(fit.agreement)")
        // Without a burst nothing is ever delayed: the two modes are one.
        #expect(fit.nodelay == (burst == 0 ? nil : nodelay), "nodelay \(String(describing: fit.nodelay)) for \(nodelay)")
        // Addresses are taken, most refused first, until their requests reach the limit.
        #expect(fit.addresses == 12 || fit.requests >= LimiterFit.requestLimit)
    }

    /// A log's times: the logged end (to the millisecond) less the logged duration (to the
    /// millisecond), which can put a refusal a millisecond before the admission ahead of it. The
    /// limit is still found (red when the bound from above took such a refusal at its word).
    @Test func timesAMillisecondOffAsLogsWriteThemStillFit() throws {
        var random = SeededRandom(seed: 11, stream: .network)
        let exact = traffic(rate: 8, burst: 12, nodelay: true, load: 25, addresses: 10, seconds: 30, seed: 81)
        let logged = exact.map { address in
            address.map { request -> LimiterFit.Request in
                let duration = Int64(random.nextIndex(below: 5_000)) + 500
                let end = (request.microseconds + duration + 500) / 1_000 * 1_000
                return LimiterFit.Request(microseconds: end - (duration + 500) / 1_000 * 1_000, admitted: request.admitted)
            }.sorted { $0.microseconds < $1.microseconds }
        }
        let fit = try #require(LimiterFit.fit(logged))
        #expect(fit.perSecond == 8 && fit.burst == 12, "\(fit)")
        #expect(fit.agreement >= 0.97, "\(fit)")
    }

    /// 429s that no leaky bucket made (a tenth of the requests, at random, some a microsecond
    /// after an admission, times years apart): a fit that says it agrees poorly, never a trap.
    @Test func refusalsNoBucketMadeFitPoorly() throws {
        var random = SeededRandom(seed: 3, stream: .network)
        var time: Int64 = 1_795_716_000_000_000
        let log = (0..<8).map { _ in
            (0..<500).map { index -> LimiterFit.Request in
                time += index % 50 == 0 ? 3 * 365 * 86_400_000_000 : Int64(random.nextIndex(below: 2_000_000)) + 1
                return LimiterFit.Request(microseconds: time, admitted: random.nextUnit() > 0.1)
            }
        }
        let fit = try #require(LimiterFit.fit(log))
        #expect(fit.agreement < LimiterFit.convincingAgreement, "\(fit)")
        #expect(LimiterFit.wholeNumbers(from: 3.2, to: 3.9).isEmpty && LimiterFit.wholeNumbers(from: 2.5, to: 4.5) == [3, 4])
        #expect(LimiterFit.wholeNumbers(from: .nan, to: 5).isEmpty && LimiterFit.wholeNumbers(from: 1, to: .infinity).isEmpty)
        #expect(LimiterFit.wholeNumbers(from: 0, to: 1e300).count == LimiterFit.wholeNumberLimit)
    }

    @Test func noRefusalsMeanNoLimitToFit() {
        let calm = traffic(rate: 100, burst: 10, nodelay: true, load: 1, addresses: 3, seconds: 10, seed: 5)
        #expect(LimiterFit.fit(calm) == nil)
        #expect(LimiterFit.fit([]) == nil)
    }

    @Test func withoutDurationsTheModeIsUnknown() throws {
        let log = traffic(rate: 5, burst: 2, nodelay: false, load: 5, addresses: 4, seconds: 30, seed: 9).map { address in
            address.map { LimiterFit.Request(microseconds: $0.microseconds, admitted: $0.admitted) }
        }
        #expect(try #require(LimiterFit.fit(log)).nodelay == nil)
    }
}
