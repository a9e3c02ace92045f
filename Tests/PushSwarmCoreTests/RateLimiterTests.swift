import Testing
@testable import PushSwarmCore
import PushSwarmMetrics

/// The mock services' rate limiters, checked against what each algorithm promises.
@Suite struct RateLimiterTests {
    /// Offers one request every `interval` for `duration` and counts admissions.
    func admitted(_ rule: RateLimitRule, every interval: TimeSpan, for duration: TimeSpan, from start: Instant = .start) -> [Instant] {
        var limiter = RateLimiter(rule: rule)
        var admitted: [Instant] = []
        var now = start
        while now < start + duration {
            if case .admit = limiter.check("k", at: now) { admitted.append(now) }
            now = now + interval
        }
        return admitted
    }

    @Test func aTokenBucketAdmitsItsBurstPlusItsRateOverTime() {
        // Rate r = 10/s, burst b = 20, offered λ = 50/s > r for T = 10 s: b + r·T = 120 (±1).
        let count = admitted(RateLimitRule(algorithm: .tokenBucket(perSecond: 10, burst: 20)), every: .milliseconds(20), for: .seconds(10)).count
        #expect(abs(count - 120) <= 1, "admitted \(count)")
        // Below the rate, everything passes.
        #expect(admitted(RateLimitRule(algorithm: .tokenBucket(perSecond: 10, burst: 1)), every: .milliseconds(150), for: .seconds(10)).count == 67)
    }

    @Test func aFixedWindowAdmitsItsLimitInEachWindow() {
        let times = admitted(RateLimitRule(algorithm: .fixedWindow(limit: 30, window: .seconds(1))), every: .milliseconds(10), for: .seconds(5))
        #expect(times.count == 150)
        for second in 0..<5 {
            #expect(times.filter { $0.microseconds / 1_000_000 == Int64(second) }.count == 30)
        }
    }

    @Test func aSlidingWindowNeverAdmitsMoreThanItsLimitInAnySpan() {
        let times = admitted(RateLimitRule(algorithm: .slidingWindow(limit: 10, window: .seconds(1))), every: .milliseconds(7), for: .seconds(4))
        for (index, time) in times.enumerated() {
            #expect(times[index...].prefix { $0 < time + .seconds(1) }.count <= 10)
        }
        #expect(times.count == 40)
    }

    @Test func aLeakyBucketBehavesAsNginxLimitReq() {
        // rate=10r/s burst=0: "two requests … must be at least 1000/rate ms apart": one in 100 ms.
        let strict = admitted(RateLimitRule(algorithm: .leakyBucket(perSecond: 10, burst: 0, nodelay: false)), every: .milliseconds(50), for: .seconds(2))
        #expect(strict.count == 20)
        #expect(zip(strict, strict.dropFirst()).allSatisfy { $1 - $0 == .milliseconds(100) })
        // burst=5: the excess is admitted and delayed until it would have drained (excess × 1000 / rate ms).
        var limiter = RateLimiter(rule: RateLimitRule(algorithm: .leakyBucket(perSecond: 10, burst: 5, nodelay: false)))
        #expect(limiter.check("k", at: .start) == .admit(delay: .zero))
        #expect(limiter.check("k", at: .start + .milliseconds(50)) == .admit(delay: .milliseconds(50)))
        #expect(limiter.check("k", at: .start + .milliseconds(50)) == .admit(delay: .milliseconds(150)))
        // nodelay: the same excess passes at once.
        var quick = RateLimiter(rule: RateLimitRule(algorithm: .leakyBucket(perSecond: 10, burst: 5, nodelay: true)))
        _ = quick.check("k", at: .start)
        #expect(quick.check("k", at: .start + .milliseconds(50)) == .admit(delay: .zero))
        // Six requests at one instant: the first plus five of excess; the seventh is refused.
        var full = RateLimiter(rule: RateLimitRule(algorithm: .leakyBucket(perSecond: 10, burst: 5, nodelay: true)))
        let verdicts = (0..<7).map { _ in full.check("k", at: .start + .seconds(1)) }
        #expect(verdicts.filter { if case .admit = $0 { true } else { false } }.count == 6)
    }

    @Test func keysSeparateSourcesAndEndpoints() {
        var limiter = RateLimiter(rule: RateLimitRule(algorithm: .fixedWindow(limit: 1, window: .seconds(1)), key: .sourceIPAndEndpoint))
        let request = Request(method: "POST", path: "/events")
        let a = limiter.key(for: request, path: "/events", from: SourceAddress(index: 1))
        let b = limiter.key(for: request, path: "/events", from: SourceAddress(index: 2))
        let c = limiter.key(for: request, path: "/pushes/opened", from: SourceAddress(index: 1))
        #expect(Set([a, b, c]).count == 3)
        #expect(limiter.check(a, at: .start) == .admit(delay: .zero))
        #expect(limiter.check(b, at: .start) == .admit(delay: .zero))
        #expect(limiter.check(a, at: .start) == .refuse(retryAfter: .seconds(1)))
        let tenant = RateLimiter(rule: RateLimitRule(algorithm: .fixedWindow(limit: 1, window: .seconds(1)), key: .header("X-Api-Key")))
        #expect(tenant.key(for: Request(method: "GET", path: "/", headers: [Header("x-api-key", "t1")]), path: "/", from: SourceAddress(index: 0)) == "t1")
        // SmartAppPush carries its tenant and API key in the body.
        let bodyKey = RateLimiter(rule: RateLimitRule(algorithm: .fixedWindow(limit: 1, window: .seconds(1)), key: .bodyField("api_key")))
        let event = Request(method: "POST", path: "/events", body: Array(#"{"tenant_id":"t","api_key":"k-42","event_name":"x"}"#.utf8))
        #expect(bodyKey.key(for: event, path: "/events", from: SourceAddress(index: 0)) == "k-42")
        #expect(bodyKey.key(for: Request(method: "POST", path: "/events", body: Array("not json".utf8)), path: "/events", from: SourceAddress(index: 0)) == "")
    }

    @Test func theMockRefusesWithTheRulesStatusAndRetryAfter() {
        var behaviour = MockBehaviour()
        behaviour.latency = .constant(0.01)
        behaviour.rateLimits = [RateLimitRule(algorithm: .fixedWindow(limit: 2, window: .seconds(10)), status: 503, sendsRetryAfter: true, paths: ["/limited"])]
        var host = MockHost(service: EchoService(), behaviour: behaviour, seed: 1)
        var random = SeededRandom(seed: 1, stream: .mock)
        let limited = Request(method: "GET", path: "/limited/x?q=1")
        let now = Instant.start + .seconds(3)
        #expect(host.exchange(limited, from: SourceAddress(index: 0), at: now, random: &random).response.status == 200)
        #expect(host.exchange(limited, from: SourceAddress(index: 0), at: now, random: &random).response.status == 200)
        let refused = host.exchange(limited, from: SourceAddress(index: 0), at: now, random: &random)
        #expect(refused.response.status == 503)
        #expect(refused.response.header("Retry-After") == "7", "the window ends 7 s later")
        #expect(refused.operation == "rateLimited")
        #expect(host.exchange(Request(method: "GET", path: "/open"), from: SourceAddress(index: 0), at: now, random: &random).response.status == 200, "other paths are not limited")
    }

    @Test func scenarioRulesAreReadWithTheirPathsInErrors() throws {
        let rule = try JSONReader(try JSONParser.parse(Array(#"{"algorithm":"leakyBucket","rate":"600/m","burst":5,"nodelay":true,"key":"header:X-Tenant","status":503,"retryAfter":false}"#.utf8)), path: "$.r").rateLimitRule()
        #expect(rule.algorithm == .leakyBucket(perSecond: 10, burst: 5, nodelay: true))
        #expect(rule.key == .header("X-Tenant") && rule.status == 503 && !rule.sendsRetryAfter)
        #expect(throws: ScenarioError.self) {
            try JSONReader(try JSONParser.parse(Array(#"{"algorithm":"tokenBucket","rate":"10/d"}"#.utf8)), path: "$.r").rateLimitRule()
        }
        do {
            _ = try JSONReader(try JSONParser.parse(Array(#"{"algorithm":"fixedWindow","limit":5}"#.utf8)), path: "$.platforms.x.mock.rateLimits[0]").rateLimitRule()
            Issue.record("a window without its length was accepted")
        } catch let error as ScenarioError {
            #expect(error.description.contains("$.platforms.x.mock.rateLimits[0]"))
            #expect(error.description.contains("window"))
        }
    }
}

/// Answers 200 to everything.
private struct EchoService: MockService {
    func serves(path: String) -> Bool { true }
    mutating func handle(_ request: Request, from source: SourceAddress, at now: Instant) -> MockReply {
        MockReply(response: Response(status: 200), operation: "echo")
    }
    mutating func knowDevice(_ device: KnownDevice) {}
    mutating func launchCampaign(_ campaign: Campaign, at now: Instant, draws: CampaignDraws) -> [PushMessage] { [] }
}
