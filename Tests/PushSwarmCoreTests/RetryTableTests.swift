import Testing
@testable import PushSwarmCore

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
        OfflineQueue.Item(operation: "op", request: Request(method: "POST", path: "/\(name)"), ledgerKey: SHA256.hash(name))
    }

    func sent(_ actions: [ClientAction]) -> [OutgoingRequest] {
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
        #expect(next.contains { if case .confirmed(let key) = $0 { key == SHA256.hash("a") } else { false } })
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
        #expect(parked.contains { if case .count("queue.parkedUntilNextLaunch") = $0 { true } else { false } })
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
