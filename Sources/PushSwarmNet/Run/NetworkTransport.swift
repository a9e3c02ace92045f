import Dispatch
public import PushSwarmCore
import Synchronization

/// Wall time over real sockets: each request goes out through `HTTPClient` to the platform's
/// target, from the device's NAT address when the target is on loopback; answers arrive on the
/// event loops and wake the run.
public final class NetworkTransport: RunTransport, Sendable {
    private struct State {
        var arrived: [Arrival] = []
        var waiter: CheckedContinuation<Void, Never>?
        var generation: UInt64 = 0
        var interrupted = false
        /// The first detail seen for each transport error reason, for the end-of-run message.
        var errorDetails: [String: String] = [:]
    }

    public let client: HTTPClient
    public let clock: WallClock
    private let targets: [String: TargetURL]
    private let bindSources: Bool
    private let state = Mutex(State())

    /// `targets`: each platform's base URL (request paths are appended to its path).
    public init(client: HTTPClient, targets: [String: TargetURL], clock: WallClock) {
        self.client = client
        self.clock = clock
        self.targets = targets
        bindSources = targets.values.allSatisfy { target in
            (try? Resolver.resolve(target.origin.host).first?.isLoopback) ?? false
        }
    }

    /// Whether devices bind their NAT group's loopback address (only when every target is on
    /// loopback: from this machine a remote service sees one address whatever is bound).
    public var bindsSourceAddresses: Bool { bindSources }

    public func send(_ outgoing: OutgoingRequest, device: Int, platform: String, source: SourceAddress, at now: Instant) -> (ExchangeCompletion, Instant)? {
        guard let target = targets[platform] else {
            let completion = ExchangeCompletion(requestID: outgoing.id, operation: outgoing.operation, sentAt: now, outcome: .transportError(reason: "noTarget"))
            return (completion, clock.now)
        }
        let base = target.path == "/" ? "" : (target.path.hasSuffix("/") ? String(target.path.dropLast()) : target.path)
        let request = HTTPClientRequest(
            method: outgoing.request.method, url: TargetURL(origin: target.origin, path: base + outgoing.request.path),
            headers: outgoing.request.headers, body: outgoing.request.body, source: bindSources ? source.loopbackIP : nil,
            timeoutNanoseconds: UInt64(max(1, outgoing.timeout.microseconds)) * 1_000
        )
        let id = outgoing.id
        let operation = outgoing.operation
        client.execute(request) { [self] result in
            let outcome: ExchangeOutcome
            var detail: (String, String)?
            switch result {
            case .response(let response, _):
                outcome = .response(response)
            case .failure(let error, _):
                outcome = .transportError(reason: error.reason.rawValue)
                detail = (error.reason.rawValue, error.detail)
            case .timeout:
                outcome = .timeout
            }
            let measured = result.timings
            let timings = TransportTimings(
                connect: measured.connect > 0 ? TimeSpan(microseconds: Int64(measured.connect / 1_000)) : nil,
                firstByte: TimeSpan(microseconds: Int64(measured.firstByte / 1_000)),
                service: TimeSpan(microseconds: Int64(measured.service / 1_000))
            )
            let completion = ExchangeCompletion(requestID: id, operation: operation, sentAt: now, outcome: outcome, timings: timings)
            deliver(Arrival(device: device, completion: completion, at: clock.now), detail: detail)
        }
        return nil
    }

    public func takeArrived() -> [Arrival] {
        state.withLock { state in
            let taken = state.arrived
            state.arrived.removeAll(keepingCapacity: true)
            return taken
        }
    }

    public func wait(until instant: Instant?) async -> Instant {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let generation: UInt64? = state.withLock { state in
                if !state.arrived.isEmpty || state.interrupted { return nil }
                state.generation += 1
                state.waiter = continuation
                return state.generation
            }
            guard let generation else { return continuation.resume() }
            if let instant {
                let delay = max(0, (instant - clock.now).microseconds)
                DispatchQueue.global().asyncAfter(deadline: .now() + .microseconds(Int(delay))) { [self] in
                    wake(generation: generation)
                }
            }
        }
        return clock.now
    }

    public var isInterrupted: Bool { state.withLock { $0.interrupted } }

    /// Asks the run to stop (Ctrl-C): requests in flight finish, nothing new starts.
    public func interrupt() {
        state.withLock { $0.interrupted = true }
        wake(generation: nil)
    }

    /// Each transport error reason seen, with the first detail (`certificate verification
    /// failed: self-signed certificate`).
    public var errorDetails: [String: String] { state.withLock { $0.errorDetails } }

    private func deliver(_ arrival: Arrival, detail: (String, String)?) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.arrived.append(arrival)
            if let (reason, text) = detail, state.errorDetails[reason] == nil { state.errorDetails[reason] = text }
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Resumes the run if it is still in the wait numbered `generation` (nil: any wait).
    private func wake(generation: UInt64?) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard generation == nil || generation == state.generation else { return nil }
            let waiter = state.waiter
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }
}
