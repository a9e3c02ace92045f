/// How a client reacts to each way a request can fail: a platform's retry table as data.
///
/// SmartAppPush's spec table reads, for example: "Network error: retry with exponential backoff
/// (1s, 2s, 4s, max 60s). Max 5 retries, then keep in queue for next app launch" and "503: retry
/// with exponential backoff (1s, 2s, 4s). Max 3 retries". A scenario may override any row.
public struct RetryTable: Sendable, Equatable {
    /// A network error or timeout: the request may never have reached the service.
    public var networkError: RetryRule
    /// A 5xx answer.
    public var serverError: RetryRule
    /// A 429 answer.
    public var rateLimited: RetryRule

    public init(networkError: RetryRule, serverError: RetryRule, rateLimited: RetryRule) {
        self.networkError = networkError
        self.serverError = serverError
        self.rateLimited = rateLimited
    }

    /// What to do after `outcome`, given that `retryNumber` retries were already made.
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

/// One row of a retry table: exponential back-off with a cap and a retry limit.
public struct RetryRule: Sendable, Equatable {
    public enum WhenExhausted: String, Sendable {
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

    public init(initialDelay: TimeSpan, multiplier: Double = 2, maximumDelay: TimeSpan, maximumRetries: Int, whenExhausted: WhenExhausted) {
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
        self.maximumRetries = maximumRetries
        self.whenExhausted = whenExhausted
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
