/// A fault a mock service injects: what goes wrong and when. Every kind reaches the client as it
/// would from a real service (a 5xx, no answer for a while, a reset, a truncated or malformed
/// response, a body trickling in), and the client counts each under its own reason.
public struct FaultRule: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Answer with this 5xx status instead of the service's answer.
        case serverError(status: Int)
        /// Hold every answer until the fault's window ends (the service does the work, late).
        case stall
        /// Close the connection with a reset instead of answering.
        case reset
        /// Send the status line, the headers and half the body, then close.
        case truncated
        /// Send bytes that are not HTTP, then close.
        case malformed
        /// Send the answer's body at this many bytes per second.
        case slowBody(bytesPerSecond: Int)
        /// Drain the connection as a deploy does: the request is not processed. Over HTTP/2 a
        /// GOAWAY names the stream before it as the last processed, and the client sends it again
        /// on a new connection; over HTTP/1.1 the connection closes unanswered.
        case goAway
    }

    /// When the fault strikes.
    public enum When: Sendable, Equatable {
        /// Each request, with this chance.
        case rate(Double)
        /// During `length` out of every `period` of the run, starting `offset` into each period:
        /// a burst of 5xx, or a stall of 1 s every 10 s.
        case periodic(period: TimeSpan, length: TimeSpan, offset: TimeSpan)
    }

    public var kind: Kind
    public var when: When
    /// Path prefixes it hits; empty: every path.
    public var paths: [String]

    public init(kind: Kind, when: When, paths: [String] = []) {
        self.kind = kind
        self.when = when
        self.paths = paths
    }

    /// Whether the fault is in its window at `now` (a periodic fault), and when that window ends.
    public func windowEnd(containing now: Instant) -> Instant? {
        guard case .periodic(let period, let length, let offset) = when, period > .zero else { return nil }
        let into = ((now.microseconds - offset.microseconds) % period.microseconds + period.microseconds) % period.microseconds
        guard into < length.microseconds else { return nil }
        return now + TimeSpan(microseconds: length.microseconds - into)
    }
}

/// How a fault changes one answer, for the transport that delivers it.
public enum InjectedFault: Sendable, Equatable {
    case reset
    case truncated
    case malformed
    case slowBody(bytesPerSecond: Int)
    case goAway

    /// The reason a client gives the failure it sees (the network layer's names). GOAWAY in
    /// simulated time is HTTP/1.1's connection closed unanswered (its HTTP/2 model is to come).
    public var transportReason: String? {
        switch self {
        case .goAway: "closedBeforeResponse"
        case .reset: "connectionReset"
        case .truncated: "closedBeforeResponse"
        case .malformed: "malformedResponse"
        case .slowBody: nil
        }
    }
}
