/// How a run's requests reach a service, and how its time passes: in simulated time, a mock
/// answers in-process and the clock jumps; in wall time, requests go over sockets and answers
/// arrive while the run waits.
public protocol RunTransport: AnyObject {
    /// Sends `outgoing` for device number `device` of `platform`. A transport that knows the
    /// outcome at once (simulated) returns it with the instant it arrives; otherwise it returns nil
    /// and the completion arrives later through `takeArrived`.
    func send(_ outgoing: OutgoingRequest, device: Int, platform: String, source: SourceAddress, at now: Instant) -> (ExchangeCompletion, Instant)?

    /// Completions that arrived since the last call.
    func takeArrived() -> [Arrival]

    /// Waits until `instant` (nil: no timer is due) or until a completion arrives, whichever is
    /// first; returns the run's time then.
    func wait(until instant: Instant?) async -> Instant

    /// True once the run was asked to stop early (Ctrl-C): no new requests, report what happened.
    var isInterrupted: Bool { get }
}

/// A completion a transport delivered, for device number `device`, at `at`.
public struct Arrival: Sendable {
    public var device: Int
    public var completion: ExchangeCompletion
    public var at: Instant

    public init(device: Int, completion: ExchangeCompletion, at: Instant) {
        self.device = device
        self.completion = completion
        self.at = at
    }
}

/// Simulated time: the mock answers in-process after its sampled latency, injected network
/// errors come from the scenario, and waiting is free.
public final class SimulatedTransport: RunTransport {
    private let mocks: MockFleet
    private let clock = SimulatedClock()
    private let network: NetworkSettings
    private var random: SeededRandom

    public init(scenario: Scenario, mocks: MockFleet) {
        self.mocks = mocks
        network = scenario.network
        random = SeededRandom(seed: scenario.seed, stream: .network)
    }

    public func send(_ outgoing: OutgoingRequest, device: Int, platform: String, source: SourceAddress, at now: Instant) -> (ExchangeCompletion, Instant)? {
        let outcome: ExchangeOutcome
        let completedAt: Instant
        if random.chance(network.errorRate) {
            // No route or a dropped connection: the client learns quickly, the service sees nothing.
            outcome = .transportError(reason: "networkError")
            completedAt = now + .milliseconds(200)
        } else if let host = mocks.index(of: platform) {
            let answer = mocks.exchange(platform: host, outgoing.request, from: source, at: now)
            if answer.latency > outgoing.timeout {
                outcome = .timeout
                completedAt = now + outgoing.timeout
            } else {
                outcome = .response(answer.response)
                completedAt = now + answer.latency
            }
        } else {
            outcome = .transportError(reason: "noService")
            completedAt = now
        }
        let completion = ExchangeCompletion(requestID: outgoing.id, operation: outgoing.operation, sentAt: now, outcome: outcome)
        return (completion, completedAt)
    }

    public func takeArrived() -> [Arrival] { [] }

    public func wait(until instant: Instant?) async -> Instant {
        if let instant { await clock.wait(until: instant) }
        return clock.now
    }

    public var isInterrupted: Bool { false }
}
