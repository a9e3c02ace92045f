import PushSwarmMetrics

/// A device's local queue of requests: written first, sent one at a time in order, removed on
/// success or on a response retrying won't fix, retried with back-off otherwise.
///
/// Mirrors what an SDK guide prescribes ("Event happens → write to local DB … On success
/// (200) → delete from queue … On network error → leave in queue, retry later … On 400 → delete")
/// and is generic: the retry table is the platform's. Sending in order matters: a token refresh
/// must reach the service after the events that registered the old token.
public struct OfflineQueue: Sendable {
    public struct Item: Sendable {
        public var operation: String
        public var request: Request
        /// What the service's ledger will hold for this item once accepted, if it keeps one.
        public var ledgerKey: LedgerKey?
        /// When the app raised it (set by `enqueue`).
        public var raisedAt: Instant?

        public init(operation: String, request: Request, ledgerKey: LedgerKey?) {
            self.operation = operation
            self.request = request
            self.ledgerKey = ledgerKey
        }
    }

    /// What every queue of a client profile shares, held once by reference: a device's queue
    /// costs 8 bytes of it, not a copy of the retry table each.
    public final class Policy: Sendable {
        public let retryTable: RetryTable
        public let timeout: TimeSpan
        /// A full queue drops its oldest waiting item for a new one, as `queueFull` (a real app
        /// bounds its local store too, and analytics SDKs keep the newest events).
        public let capacity: Int

        public init(retryTable: RetryTable, timeout: TimeSpan, capacity: Int) {
            self.retryTable = retryTable
            self.timeout = timeout
            self.capacity = capacity
        }
    }

    public let policy: Policy
    public var retryTable: RetryTable { policy.retryTable }
    public var timeout: TimeSpan { policy.timeout }
    public var capacity: Int { policy.capacity }

    // Every device holds a queue, so its size is memory per device: the optional state below is
    // kept with a sentinel for "none" (ids and tokens start at 1; no instant, span or budget
    // is `Int64.min` or NaN), and counts in 32 bits. 88 bytes, where optionals' padding made
    // 144 (and a platform client's box crossed a malloc size class: 48 bytes a device).
    private var items: [Item] = []
    private var headStorage: Int32 = 0
    private var retriesStorage: Int32 = 0
    private var inFlightStorage: UInt64 = 0
    private var waitingStorage: UInt64 = 0
    private var nextID: UInt64 = 0
    private var previousDelayStorage = Int64.min
    private var retryDueStorage = Int64.min
    private var firstRateLimitedStorage = Int64.min
    private var budgetStorage = Double.nan
    public private(set) var isParkedUntilLaunch = false

    private var head: Int {
        get { Int(headStorage) }
        set { headStorage = Int32(newValue) }
    }
    private var retriesSoFar: Int {
        get { Int(retriesStorage) }
        set { retriesStorage = Int32(newValue) }
    }
    private var inFlightID: UInt64? {
        get { inFlightStorage == 0 ? nil : inFlightStorage }
        set { inFlightStorage = newValue ?? 0 }
    }
    private var waitingForTimer: UInt64? {
        get { waitingStorage == 0 ? nil : waitingStorage }
        set { waitingStorage = newValue ?? 0 }
    }
    private var previousDelay: TimeSpan? {
        get { previousDelayStorage == .min ? nil : TimeSpan(microseconds: previousDelayStorage) }
        set { previousDelayStorage = newValue?.microseconds ?? .min }
    }
    private var retryDueAt: Instant? {
        get { retryDueStorage == .min ? nil : Instant(microseconds: retryDueStorage) }
        set { retryDueStorage = newValue?.microseconds ?? .min }
    }
    /// When the head item was first answered 429 (the start of its rate-limit episode).
    private var firstRateLimitedAt: Instant? {
        get { firstRateLimitedStorage == .min ? nil : Instant(microseconds: firstRateLimitedStorage) }
        set { firstRateLimitedStorage = newValue?.microseconds ?? .min }
    }
    /// Retries the budget still allows (`RetryTable.retryBudget`).
    private var budget: Double? {
        get { budgetStorage.isNaN ? nil : budgetStorage }
        set { budgetStorage = newValue ?? .nan }
    }

    public init(policy: Policy) {
        self.policy = policy
        budget = policy.retryTable.retryBudget.map { _ in policy.retryTable.budgetReserve }
    }

    public init(retryTable: RetryTable, timeout: TimeSpan, capacity: Int) {
        self.init(policy: Policy(retryTable: retryTable, timeout: timeout, capacity: capacity))
    }

    /// Items not yet delivered or dropped, including the one in flight.
    public var count: Int { items.count - head }

    /// Queues `item` and sends it if nothing else is under way; what to do goes into `actions`.
    /// (Every method here appends to the caller's buffer: a device reuses one from event to event,
    /// so a request allocates no array of actions. The array-returning forms are for tests and
    /// clients written that way.)
    public mutating func enqueue(_ item: consuming Item, now: Instant, into actions: inout [DeviceAction]) {
        if count >= capacity {
            // The oldest item not in flight makes room; with none (a one-item queue whose item is
            // out), the new one is dropped.
            guard dropOldestWaiting(reason: "queueFull", into: &actions) else { return actions.append(.drop(reason: "queueFull")) }
        }
        // A full buffer with finished items at its front drops them rather than doubling: a
        // device kept busy never empties its queue, and its buffer would otherwise grow to twice
        // what it holds (a 16-slot buffer for 8 waiting requests, 100 bytes a slot).
        if head > 0 && items.count == items.capacity {
            items.removeFirst(head)
            head = 0
        }
        // Taken, not copied: the caller's item moves into the queue (a copy first, to set its
        // time, retained every reference in it).
        items.append(item)
        if head < items.count - 1 {
            // It waits behind others: its body keeps only its bytes, not the room its writer
            // reserved (768 for a 620-byte event), so that a waiting request stays within 1 KB.
            let body = items[items.count - 1].request.body
            if body.capacity > body.count + 32 {
                var trimmed: [UInt8] = []
                trimmed.reserveCapacity(body.count)
                trimmed.append(contentsOf: body)
                items[items.count - 1].request.body = trimmed
            }
        }
        items[items.count - 1].raisedAt = now
        if let ratio = retryTable.retryBudget, let current = budget { budget = min(current + ratio, retryTable.budgetReserve + ratio * 100) }
        sendHeadIfIdle(now: now, into: &actions)
    }

    /// Handles the end of the request in flight; stale completions are ignored. `random` draws
    /// the retry table's jitter; `unixNow` reads an HTTP-date `Retry-After`.
    public mutating func complete(_ completion: ExchangeCompletion, now: Instant, random: inout SeededRandom, unixNow: Int64, into actions: inout [DeviceAction]) {
        guard completion.requestID == inFlightID, head < items.count else { return }
        inFlightID = nil
        if case .response(let response) = completion.outcome, response.status == 429, firstRateLimitedAt == nil { firstRateLimitedAt = now }
        var (decision, clamped) = retryTable.decision(
            for: completion.outcome, retriesSoFar: retriesSoFar, previous: previousDelay, random: &random, unixNow: unixNow
        )
        if clamped { actions.append(.count(.retryAfterClamped)) }
        if case .retry = decision, let current = budget {
            // The budget says no more retries for now: given up like an exhausted rule.
            if current < 1 { decision = .drop(reason: "retryBudgetExhausted") } else { budget = current - 1 }
        }
        switch decision {
        case .success:
            if let key = items[head].ledgerKey { actions.append(.confirmed(key)) }
            if let since = firstRateLimitedAt { actions.append(.duration(.rateLimitRecovery, now - since)) }
            removeHead()
        case .drop(let reason):
            actions.append(.drop(reason: reason))
            removeHead()
        case .retry(let delay):
            previousDelay = delay
            retriesSoFar += 1
            nextID += 1
            waitingForTimer = nextID
            actions.append(.backoff(delay: delay, retryNumber: retriesSoFar))
            actions.append(.schedule(token: nextID, at: now + delay))
            return
        case .keepForNextLaunch:
            isParkedUntilLaunch = true
            actions.append(.count(.queueParkedUntilNextLaunch))
            return
        }
        sendHeadIfIdle(now: now, into: &actions)
    }

    public mutating func timerFired(_ token: UInt64, now: Instant, into actions: inout [DeviceAction]) {
        guard token == waitingForTimer else { return }
        waitingForTimer = nil
        // A retry is due when its back-off ends, not when its item was raised.
        retryDueAt = now
        sendHeadIfIdle(now: now, into: &actions)
    }

    /// A cold start: a parked queue tries again, with a fresh retry count.
    public mutating func appLaunched(now: Instant, into actions: inout [DeviceAction]) {
        guard isParkedUntilLaunch else { return }
        isParkedUntilLaunch = false
        retriesSoFar = 0
        sendHeadIfIdle(now: now, into: &actions)
    }

    public mutating func enqueue(_ item: Item, now: Instant) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        enqueue(item, now: now, into: &actions)
        return actions
    }

    public mutating func complete(_ completion: ExchangeCompletion, now: Instant, random: inout SeededRandom, unixNow: Int64) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        complete(completion, now: now, random: &random, unixNow: unixNow, into: &actions)
        return actions
    }

    public mutating func timerFired(_ token: UInt64, now: Instant) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        timerFired(token, now: now, into: &actions)
        return actions
    }

    public mutating func appLaunched(now: Instant) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        appLaunched(now: now, into: &actions)
        return actions
    }

    /// Drops the oldest item that is not in flight (the head itself when it waits for a retry or
    /// the next launch), counted as dropped for `reason`; false when every item is in flight.
    @discardableResult
    public mutating func dropOldestWaiting(reason: String, into actions: inout [DeviceAction]) -> Bool {
        if inFlightID == nil, head < items.count {
            // A head waiting for its back-off or the next launch: the next item takes its place
            // when the timer fires or the app launches.
            actions.append(.drop(reason: reason))
            removeHead()
            return true
        }
        guard head + 1 < items.count else { return false }
        actions.append(.drop(reason: reason))
        items.remove(at: head + 1)
        return true
    }

    private mutating func sendHeadIfIdle(now: Instant, into actions: inout [DeviceAction]) {
        guard inFlightID == nil, waitingForTimer == nil, !isParkedUntilLaunch, head < items.count else { return }
        nextID += 1
        inFlightID = nextID
        // Due when raised (a first attempt that waited behind others) or when its back-off ended.
        // The item's fields are read in place: a copy of the whole item first retained them twice.
        let due = retriesSoFar == 0 ? items[head].raisedAt : retryDueAt
        actions.append(.send(OutgoingRequest(
            id: nextID, operation: items[head].operation, request: items[head].request, timeout: timeout, retryNumber: retriesSoFar,
            intendedStart: due.map { min($0, now) }
        )))
    }

    private mutating func removeHead() {
        retriesSoFar = 0
        previousDelay = nil
        firstRateLimitedAt = nil
        // The item is done: its request goes now, not when the buffer is next compacted. A device
        // kept busy never empties its queue, and its finished items' bodies (800 bytes each) were
        // held until 64 had passed: 5-7 KB a waiting request under overload, growing for as long
        // as the overload lasted.
        items[head].request = Request(method: "", path: "")
        head += 1
        if head == items.count {
            // Empty again (most of the time, between events): the buffer goes, so an idle device
            // holds no queue storage.
            items.removeAll()
            head = 0
        } else if head >= 8, head * 2 > items.count {
            // Compacted once the finished items are half the buffer: each move is paid for by the
            // removals before it.
            items.removeFirst(head)
            head = 0
        }
    }
}
