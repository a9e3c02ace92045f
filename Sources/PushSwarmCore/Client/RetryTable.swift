/// How a client reacts to each way a request can fail: a platform's retry table as data.
///
/// One spec's table reads, for example: "Network error: retry with exponential backoff
/// (1s, 2s, 4s, max 60s). Max 5 retries, then keep in queue for next app launch" and "503: retry
/// with exponential backoff (1s, 2s, 4s). Max 3 retries". A scenario may override any row.
public struct RetryTable: Sendable, Equatable {
    /// A network error or timeout: the request may never have reached the service.
    public var networkError: RetryRule
    /// A 5xx answer.
    public var serverError: RetryRule
    /// A 429 answer.
    public var rateLimited: RetryRule
    /// Retries allowed per first attempt, over the client's life (a retry budget: 0.2 lets at most
    /// one retry through for each five new requests, plus `budgetReserve`); nil: no budget.
    public var retryBudget: Double?
    public var budgetReserve: Double = 10

    public init(networkError: RetryRule, serverError: RetryRule, rateLimited: RetryRule, retryBudget: Double? = nil) {
        self.networkError = networkError
        self.serverError = serverError
        self.rateLimited = rateLimited
        self.retryBudget = retryBudget
    }

    /// What to do after `outcome`, given that `retryNumber` retries were already made; the delay
    /// with the rule's jitter (drawn from `random`, `previous` being the last delay used) and, if
    /// the rule honours it, no shorter than the answer's `Retry-After` (`unixNow`: the device's
    /// clock, for the HTTP-date form; in wall time that is the real one). A `Retry-After` is a
    /// peer's number: a wait longer than the rule's `maximumRetryAfter` is cut to it, and
    /// `retryAfterClamped` says so (the run counts it), so a server asking for a year cannot
    /// leave the request pending past the run's end.
    public func decision(
        for outcome: ExchangeOutcome, retriesSoFar retryNumber: Int, previous: TimeSpan?, random: inout SeededRandom, unixNow: Int64
    ) -> (decision: RetryDecision, retryAfterClamped: Bool) {
        let decision = decision(for: outcome, retriesSoFar: retryNumber)
        guard case .retry(let base) = decision, let rule = rule(for: outcome) else { return (decision, false) }
        var delay = rule.jittered(base, previous: previous, random: &random)
        var clamped = false
        if rule.honoursRetryAfter, case .response(let response) = outcome, let value = response.header("Retry-After"),
           var wait = RetryAfter.parse(value, unixNow: unixNow) {
            if wait > rule.maximumRetryAfter {
                wait = rule.maximumRetryAfter
                clamped = true
            }
            delay = max(delay, wait)
        }
        return (.retry(after: delay), clamped)
    }

    private func rule(for outcome: ExchangeOutcome) -> RetryRule? {
        switch outcome {
        case .response(let response):
            switch response.status {
            case 429: rateLimited
            case 500..<600: serverError
            default: nil
            }
        case .transportError, .timeout: networkError
        }
    }

    /// The decision without jitter or Retry-After: the rule's capped exponential delay.
    public func decision(for outcome: ExchangeOutcome, retriesSoFar retryNumber: Int) -> RetryDecision {
        let rule: RetryRule
        let label: String
        switch outcome {
        case .response(let response):
            switch response.status {
            case 200..<300: return .success
            case 429:
                rule = rateLimited
                label = "http429"
            case 500..<600:
                rule = serverError
                label = "http\(response.status)"
            default:
                // 4xx other than 429: "Bad request. Remove from queue … retrying won't help".
                return .drop(reason: "http\(response.status)")
            }
        case .transportError, .timeout:
            rule = networkError
            label = "networkError"
        }
        guard retryNumber < rule.maximumRetries else {
            switch rule.whenExhausted {
            case .drop: return .drop(reason: "\(label)RetriesExhausted")
            case .keepForNextLaunch: return .keepForNextLaunch
            }
        }
        return .retry(after: rule.delay(beforeRetry: retryNumber + 1))
    }
}

extension RetryTable {
    /// A table's rows as a scenario names them (`retry.rateLimited`), for its reader and writer.
    public enum Row: String, CaseIterable, Sendable {
        case networkError, serverError, rateLimited
    }

    public subscript(row: Row) -> RetryRule {
        get {
            switch row {
            case .networkError: networkError
            case .serverError: serverError
            case .rateLimited: rateLimited
            }
        }
        set {
            switch row {
            case .networkError: networkError = newValue
            case .serverError: serverError = newValue
            case .rateLimited: rateLimited = newValue
            }
        }
    }
}

/// One row of a retry table: exponential back-off with a cap and a retry limit.
public struct RetryRule: Sendable, Equatable {
    /// A rule's settings as a scenario names them, for its reader and writer: each spelt here
    /// alone.
    public enum Key: String, CaseIterable, Sendable {
        case initialDelay, multiplier, maxDelay, maxRetries, whenExhausted, jitter, honourRetryAfter, maxRetryAfter

        /// The back-off itself, without the handling of `Retry-After` (which a log cannot show).
        public static let backOff: [Key] = [.initialDelay, .multiplier, .maxDelay, .maxRetries, .whenExhausted, .jitter]
    }

    public enum WhenExhausted: String, Sendable, CaseIterable {
        /// Give the request up (counted under a drop reason).
        case drop
        /// Keep it queued, and try again after the app's next cold start.
        case keepForNextLaunch
    }

    public var initialDelay: TimeSpan
    public var multiplier: Double
    public var maximumDelay: TimeSpan
    public var maximumRetries: Int
    public var whenExhausted: WhenExhausted
    /// How the delay is spread (AWS's "Exponential Backoff And Jitter" names).
    public var jitter: Jitter
    /// Wait at least what the answer's `Retry-After` says (real SDKs often ignore it: the default).
    public var honoursRetryAfter: Bool
    /// The longest `Retry-After` honoured; a longer one is cut to this (and counted).
    public var maximumRetryAfter: TimeSpan = RetryRule.defaultMaximumRetryAfter
    /// Five minutes: longer than any wait a push platform's rate limit asks for in practice (the
    /// specs' limits are per second), short enough that a hostile or broken `Retry-After`
    /// (`1000000000000`, a date years ahead) cannot park a run's requests past its end.
    public static let defaultMaximumRetryAfter: TimeSpan = .seconds(300)

    public enum Jitter: String, Sendable, CaseIterable {
        /// The capped exponential delay itself: every client that failed together retries together.
        case none
        /// A uniform draw in [0, delay].
        case full
        /// delay / 2 plus a uniform draw in [0, delay / 2].
        case equal
        /// A uniform draw in [initial, previous × 3], capped.
        case decorrelated
    }

    public init(
        initialDelay: TimeSpan, multiplier: Double = 2, maximumDelay: TimeSpan, maximumRetries: Int, whenExhausted: WhenExhausted,
        jitter: Jitter = .none, honoursRetryAfter: Bool = false
    ) {
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
        self.maximumRetries = maximumRetries
        self.whenExhausted = whenExhausted
        self.jitter = jitter
        self.honoursRetryAfter = honoursRetryAfter
    }

    /// `base` (the capped exponential delay) spread by the rule's jitter.
    public func jittered(_ base: TimeSpan, previous: TimeSpan?, random: inout SeededRandom) -> TimeSpan {
        switch jitter {
        case .none:
            return base
        case .full:
            return .seconds(random.nextUnit() * base.seconds)
        case .equal:
            return .seconds(base.seconds / 2 + random.nextUnit() * base.seconds / 2)
        case .decorrelated:
            let low = initialDelay.seconds
            let high = max(low, (previous ?? initialDelay).seconds * 3)
            return .seconds(min(maximumDelay.seconds, low + random.nextUnit() * (high - low)))
        }
    }

    /// The wait before retry number `retry` (1 for the first): initial × multiplier^(retry−1), capped.
    public func delay(beforeRetry retry: Int) -> TimeSpan {
        var seconds = initialDelay.seconds
        for _ in 1..<max(retry, 1) {
            seconds *= multiplier
            if seconds >= maximumDelay.seconds { break }
        }
        return .seconds(min(seconds, maximumDelay.seconds))
    }
}

public enum RetryDecision: Sendable, Equatable {
    case success
    case retry(after: TimeSpan)
    case drop(reason: String)
    case keepForNextLaunch
}

/// RFC 9110's `Retry-After`: delay-seconds or an HTTP-date.
public enum RetryAfter {
    /// The wait it asks for; nil when the value is neither form. A date in the past is no wait.
    public static func parse(_ value: String, unixNow: Int64) -> TimeSpan? {
        let text = value.trimmingSpaces
        if !text.isEmpty, text.allSatisfy(\.isASCIIDigit), let seconds = Int64(text) { return .seconds(Double(seconds)) }
        guard let date = httpDate(text) else { return nil }
        return .seconds(Double(max(0, date - unixNow)))
    }

    /// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form senders must use, as Unix seconds.
    /// Its numbers are a peer's: each must have exactly the digits RFC 9110 gives it ("day =
    /// 2DIGIT", "year = 4DIGIT", "hour = 2DIGIT", …), no sign, so the arithmetic below cannot
    /// overflow (a year of nineteen digits once trapped a run).
    static func httpDate(_ text: String) -> Int64? {
        func number(_ part: Substring, digits: Int) -> Int64? {
            part.utf8.count == digits && part.allSatisfy(\.isASCIIDigit) ? Int64(part) : nil
        }
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", let day = number(parts[1], digits: 2), let year = number(parts[3], digits: 4) else { return nil }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard let monthIndex = months.firstIndex(of: String(parts[2])) else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3, let hour = number(clock[0], digits: 2), let minute = number(clock[1], digits: 2),
              let second = number(clock[2], digits: 2), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        // Days from the civil date (Howard Hinnant's algorithm).
        let month = Int64(monthIndex + 1)
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + hour * 3_600 + minute * 60 + second
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
