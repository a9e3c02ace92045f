import Testing
@testable import PushSwarmCore
import PushSwarmMetrics

/// The SmartAppPush spec's retry table, as the platform configures it; the rows are repeated here
/// so the test fails if the data drifts from the spec's words.
@Suite struct RetryTableTests {
    // "Network error: Queue locally, retry with exponential backoff (1s, 2s, 4s, max 60s). Max 5
    // retries, then keep in queue for next app launch"
    // "503: Server overloaded. Retry with exponential backoff (1s, 2s, 4s). Max 3 retries"
    let table = RetryTable(
        networkError: RetryRule(initialDelay: .seconds(1), maximumDelay: .seconds(60), maximumRetries: 5, whenExhausted: .keepForNextLaunch),
        serverError: RetryRule(initialDelay: .seconds(1), maximumDelay: .seconds(4), maximumRetries: 3, whenExhausted: .drop),
        rateLimited: RetryRule(initialDelay: .seconds(1), maximumDelay: .seconds(4), maximumRetries: 3, whenExhausted: .drop)
    )

    func response(_ status: Int) -> ExchangeOutcome { .response(Response(status: status)) }

    @Test func networkErrorsBackOffOneTwoFourSecondsThenKeepTheRequestForTheNextLaunch() {
        let delays = (0..<5).map { table.decision(for: .transportError(reason: "networkError"), retriesSoFar: $0) }
        #expect(delays == [1, 2, 4, 8, 16].map { .retry(after: .seconds($0)) })
        #expect(table.decision(for: .transportError(reason: "networkError"), retriesSoFar: 5) == .keepForNextLaunch)
        #expect(table.decision(for: .timeout, retriesSoFar: 0) == .retry(after: .seconds(1)), "a timeout is a network error")
    }

    @Test func networkBackOffIsCappedAtSixtySeconds() {
        var long = table.networkError
        long.maximumRetries = 20
        #expect(long.delay(beforeRetry: 7) == .seconds(60))
        #expect(long.delay(beforeRetry: 6) == .seconds(32))
    }

    @Test func a503IsRetriedThreeTimesThenDroppedWithAReason() {
        #expect((0..<3).map { table.decision(for: response(503), retriesSoFar: $0) } == [1, 2, 4].map { .retry(after: .seconds($0)) })
        #expect(table.decision(for: response(503), retriesSoFar: 3) == .drop(reason: "http503RetriesExhausted"))
    }

    // "400: Bad request. Remove from queue … retrying won't help"; "401: Invalid credentials.
    // Remove from queue"
    @Test(arguments: [400, 401, 404, 409])
    func clientErrorsAreDroppedAtOnceUnderTheirStatus(status: Int) {
        #expect(table.decision(for: response(status), retriesSoFar: 0) == .drop(reason: "http\(status)"))
    }

    @Test func successIsSuccessAndA429UsesItsOwnRow() {
        #expect(table.decision(for: response(200), retriesSoFar: 2) == .success)
        #expect(table.decision(for: response(429), retriesSoFar: 0) == .retry(after: .seconds(1)))
        #expect(table.decision(for: response(429), retriesSoFar: 3) == .drop(reason: "http429RetriesExhausted"))
    }
}

@Suite struct OfflineQueueTests {
    let table = RetryTable(
        networkError: RetryRule(initialDelay: .seconds(1), maximumDelay: .seconds(60), maximumRetries: 2, whenExhausted: .keepForNextLaunch),
        serverError: RetryRule(initialDelay: .seconds(1), maximumDelay: .seconds(4), maximumRetries: 1, whenExhausted: .drop),
        rateLimited: RetryRule(initialDelay: .seconds(1), maximumDelay: .seconds(4), maximumRetries: 1, whenExhausted: .drop)
    )

    func item(_ name: String) -> OfflineQueue.Item {
        OfflineQueue.Item(operation: "op", request: Request(method: "POST", path: "/\(name)"), ledgerKey: LedgerKey(name))
    }

    func sent(_ actions: [DeviceAction]) -> [OutgoingRequest] {
        actions.compactMap { if case .send(let request) = $0 { request } else { nil } }
    }

    func completion(_ request: OutgoingRequest, _ outcome: ExchangeOutcome) -> ExchangeCompletion {
        ExchangeCompletion(requestID: request.id, operation: request.operation, sentAt: .start, outcome: outcome)
    }

    @Test func sendsOneAtATimeInOrderAndConfirmsOnSuccess() {
        var queue = OfflineQueue(retryTable: table, timeout: .seconds(10), capacity: 10)
        let first = sent(queue.enqueue(item("a"), now: .start))
        #expect(first.map(\.request.path) == ["/a"])
        #expect(sent(queue.enqueue(item("b"), now: .start)).isEmpty, "b waits behind a")
        #expect(queue.count == 2)
        let next = queue.complete(completion(first[0], .response(Response(status: 200))), now: .start)
        #expect(next.contains { if case .confirmed(let key) = $0 { key == LedgerKey("a") } else { false } })
        #expect(sent(next).map(\.request.path) == ["/b"])
        #expect(queue.count == 1)
    }

    @Test func retriesAfterTheBackOffTimerAndDropsWhenTheRowIsExhausted() {
        var queue = OfflineQueue(retryTable: table, timeout: .seconds(10), capacity: 10)
        let first = sent(queue.enqueue(item("a"), now: .start))[0]
        let after503 = queue.complete(completion(first, .response(Response(status: 503))), now: .start)
        guard case .schedule(let token, let at)? = after503.first(where: { if case .schedule = $0 { true } else { false } }) else {
            Issue.record("expected a back-off timer")
            return
        }
        #expect(at == Instant.start + .seconds(1))
        #expect(sent(queue.timerFired(token + 1, now: at)).isEmpty, "an unknown timer does nothing")
        let retry = sent(queue.timerFired(token, now: at))
        #expect(retry.count == 1)
        #expect(retry[0].retryNumber == 1)
        let dropped = queue.complete(completion(retry[0], .response(Response(status: 503))), now: at)
        #expect(dropped.contains { if case .drop(reason: "http503RetriesExhausted") = $0 { true } else { false } })
        #expect(queue.count == 0)
    }

    @Test func aParkedQueueWaitsForTheNextColdStart() {
        var queue = OfflineQueue(retryTable: table, timeout: .seconds(10), capacity: 10)
        var request = sent(queue.enqueue(item("a"), now: .start))[0]
        var now = Instant.start
        for _ in 0..<2 {
            let actions = queue.complete(completion(request, .transportError(reason: "networkError")), now: now)
            guard case .schedule(let token, let at)? = actions.last else {
                Issue.record("expected a retry timer")
                return
            }
            now = at
            request = sent(queue.timerFired(token, now: now))[0]
        }
        let parked = queue.complete(completion(request, .timeout), now: now)
        #expect(parked.contains { if case .count(.queueParkedUntilNextLaunch) = $0 { true } else { false } })
        #expect(queue.isParkedUntilLaunch)
        #expect(sent(queue.enqueue(item("b"), now: now)).isEmpty, "nothing is sent while parked")
        #expect(queue.count == 2, "nothing was dropped")
        let resumed = sent(queue.appLaunched(now: now + .hours(1)))
        #expect(resumed.map(\.request.path) == ["/a"])
        #expect(resumed[0].retryNumber == 0, "a launch starts the retry count afresh")
    }

    @Test func staleCompletionsAreIgnoredAndAFullQueueDropsWithAReason() {
        var queue = OfflineQueue(retryTable: table, timeout: .seconds(10), capacity: 1)
        let first = sent(queue.enqueue(item("a"), now: .start))[0]
        #expect(queue.enqueue(item("b"), now: .start).contains { if case .drop(reason: "queueFull") = $0 { true } else { false } })
        var stale = completion(first, .response(Response(status: 200)))
        stale.requestID += 100
        #expect(queue.complete(stale, now: .start).isEmpty)
        #expect(queue.count == 1)
    }
}

extension OfflineQueue {
    /// The spec's table has no jitter and ignores Retry-After: no randomness or clock is read.
    fileprivate mutating func complete(_ completion: ExchangeCompletion, now: Instant) -> [DeviceAction] {
        var random = SeededRandom(seed: 0, stream: .device)
        return complete(completion, now: now, random: &random, unixNow: 0)
    }
}

/// Retry policies beyond the spec's table: jitter, Retry-After, a retry budget.
@Suite struct RetryPolicyTests {
    let rule = RetryRule(initialDelay: .seconds(1), maximumDelay: .seconds(30), maximumRetries: 8, whenExhausted: .drop)

    func delays(_ jitter: RetryRule.Jitter, retry: Int, previous: TimeSpan? = nil) -> [TimeSpan] {
        var random = SeededRandom(seed: 4, stream: .device)
        var jittered = rule
        jittered.jitter = jitter
        return (0..<200).map { _ in jittered.jittered(rule.delay(beforeRetry: retry), previous: previous, random: &random) }
    }

    @Test func eachJitterStaysInItsRange() {
        // Retry 4: the capped exponential delay is 8 s.
        #expect(delays(.none, retry: 4).allSatisfy { $0 == .seconds(8) })
        let full = delays(.full, retry: 4)
        #expect(full.allSatisfy { $0 >= .zero && $0 <= .seconds(8) } && full.contains { $0 < .seconds(2) } && full.contains { $0 > .seconds(6) })
        let equal = delays(.equal, retry: 4)
        #expect(equal.allSatisfy { $0 >= .seconds(4) && $0 <= .seconds(8) } && Set(equal).count > 100)
        // Decorrelated: between the initial delay and three times the previous one, capped.
        #expect(delays(.decorrelated, retry: 4, previous: .seconds(5)).allSatisfy { $0 >= .seconds(1) && $0 <= .seconds(15) })
        #expect(delays(.decorrelated, retry: 7, previous: .seconds(20)).allSatisfy { $0 <= .seconds(30) })
    }

    @Test func retryAfterIsReadInBothForms() {
        // RFC 9110: "Retry-After = HTTP-date / delay-seconds".
        #expect(RetryAfter.parse("120", unixNow: 0) == .seconds(120))
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", unixNow: 784_111_700) == .seconds(77))
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:49:37 GMT", unixNow: 784_112_000) == .zero, "a date in the past: no wait")
        #expect(RetryAfter.parse("soon", unixNow: 0) == nil)
        #expect(RetryAfter.parse("-5", unixNow: 0) == nil)
    }

    /// A `Retry-After` is a peer's text: numbers that do not fit, signs and wrong digit counts are
    /// not a date (a year of nineteen digits once overflowed and trapped the run).
    @Test func aHostileRetryAfterIsNoDateAndNoCrash() {
        for value in [
            "Sun, 06 Nov 9223372036854775807 08:49:37 GMT", "Sun, 06 Nov -9223372036854775807 08:49:37 GMT",
            "Sun, 99999999999999999999 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 -8:49:37 GMT", "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:+7 GMT",
        ] {
            #expect(RetryAfter.parse(value, unixNow: 0) == nil, "\(value)")
        }
        #expect(RetryAfter.parse("99999999999999999999", unixNow: 0) == nil, "delay-seconds that do not fit")
        #expect(RetryAfter.parse("Fri, 31 Dec 9999 23:59:59 GMT", unixNow: 0) == .seconds(253_402_300_799))
    }

    @Test func retryAfterIsHonouredOnlyWhenThePolicySaysSo() {
        let answer = ExchangeOutcome.response(Response(status: 429, headers: [Header("Retry-After", "20")]))
        var random = SeededRandom(seed: 1, stream: .device)
        var table = RetryTable(networkError: rule, serverError: rule, rateLimited: rule)
        #expect(table.decision(for: answer, retriesSoFar: 0, previous: nil, random: &random, unixNow: 0).decision == .retry(after: .seconds(1)), "ignored, as many SDKs do")
        table.rateLimited.honoursRetryAfter = true
        #expect(table.decision(for: answer, retriesSoFar: 0, previous: nil, random: &random, unixNow: 0).decision == .retry(after: .seconds(20)))
        // A Retry-After shorter than the back-off does not shorten it.
        #expect(table.decision(for: answer, retriesSoFar: 6, previous: nil, random: &random, unixNow: 0).decision == .retry(after: .seconds(30)))
    }

    /// A server asking for a wait of 31,000 years (or a date decades ahead) would leave the
    /// request pending past the run's end: the wait is cut to the rule's `maximumRetryAfter`, and
    /// the queue counts each cut.
    @Test func aRetryAfterLongerThanTheCeilingIsCutAndCounted() throws {
        var random = SeededRandom(seed: 1, stream: .device)
        var table = RetryTable(networkError: rule, serverError: rule, rateLimited: rule)
        table.rateLimited.honoursRetryAfter = true
        table.rateLimited.maximumRetryAfter = .seconds(120)
        for value in ["1000000000000", "Fri, 31 Dec 9999 23:59:59 GMT"] {
            let answer = ExchangeOutcome.response(Response(status: 429, headers: [Header("Retry-After", value)]))
            let (decision, clamped) = table.decision(for: answer, retriesSoFar: 0, previous: nil, random: &random, unixNow: 1_800_000_000)
            #expect(decision == .retry(after: .seconds(120)), "\(value)")
            #expect(clamped, "\(value)")
        }
        let modest = ExchangeOutcome.response(Response(status: 429, headers: [Header("Retry-After", "120")]))
        let (decision, clamped) = table.decision(for: modest, retriesSoFar: 0, previous: nil, random: &random, unixNow: 0)
        #expect(decision == .retry(after: .seconds(120)) && !clamped, "a wait at the ceiling is honoured as it is")
        #expect(RetryRule.defaultMaximumRetryAfter == .seconds(300))
        let decoded = try JSONReader(try JSONParser.parse(Array(#"{"honourRetryAfter":true,"maxRetryAfter":"90s"}"#.utf8))).retryRule(base: rule)
        #expect(decoded.maximumRetryAfter == .seconds(90), "a scenario sets the ceiling as retry.<row>.maxRetryAfter")

        var queue = OfflineQueue(retryTable: table, timeout: .seconds(10), capacity: 10)
        let sent = queue.enqueue(OfflineQueue.Item(operation: "op", request: Request(method: "POST", path: "/"), ledgerKey: nil), now: .start)
        guard case .send(let request)? = sent.first else { Issue.record("nothing sent: \(sent)"); return }
        let hostile = Response(status: 429, headers: [Header("Retry-After", "1000000000000")])
        let now = Instant.start + .seconds(1)
        let actions = queue.complete(
            ExchangeCompletion(requestID: request.id, operation: "op", sentAt: .start, outcome: .response(hostile)), now: now, random: &random, unixNow: 0
        )
        #expect(actions.contains { if case .count(.retryAfterClamped) = $0 { true } else { false } }, "\(actions)")
        #expect(actions.contains { if case .schedule(_, let due) = $0 { due == now + .seconds(120) } else { false } }, "\(actions)")
    }

    @Test func aRetryBudgetStopsRetriesWhenSpent() {
        // Budget 0 per new request, reserve 10: the eleventh retry is refused.
        var table = RetryTable(networkError: rule, serverError: rule, rateLimited: rule, retryBudget: 0)
        table.rateLimited.maximumRetries = 100
        var queue = OfflineQueue(retryTable: table, timeout: .seconds(10), capacity: 10)
        var random = SeededRandom(seed: 1, stream: .device)
        var actions = queue.enqueue(OfflineQueue.Item(operation: "op", request: Request(method: "POST", path: "/"), ledgerKey: nil), now: .start)
        var retries = 0
        var now = Instant.start
        for _ in 0..<20 {
            guard case .send(let outgoing)? = actions.first(where: { if case .send = $0 { true } else { false } }) else { break }
            let completion = ExchangeCompletion(requestID: outgoing.id, operation: "op", sentAt: now, outcome: .response(Response(status: 429)))
            actions = queue.complete(completion, now: now, random: &random, unixNow: 0)
            if actions.contains(where: { if case .drop(let reason) = $0 { reason == "retryBudgetExhausted" } else { false } }) { break }
            guard case .schedule(let token, let at)? = actions.first(where: { if case .schedule = $0 { true } else { false } }) else { break }
            retries += 1
            now = at
            actions = queue.timerFired(token, now: now)
        }
        #expect(retries == 10)
    }
}
