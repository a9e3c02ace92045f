import Foundation
public import PushSwarmCore
public import PushSwarmMetrics
import PushSwarmSystem
import Synchronization

/// A closed-loop HTTP load in the manner of wrk: `connections` connections spread evenly over the
/// event loops, each sending its next request as soon as the previous answer arrives, for
/// `duration`. Every request is a different device's own (from `requests`, in turn), not one
/// body repeated. Used by Benchmarks/http-throughput.sh to compare PushSwarm's network path
/// with wrk against the same server.
public final class HTTPBench: Sendable {
    public struct Result: Sendable {
        public var requests: UInt64
        public var seconds: Double
        public var byStatus: [Int: UInt64]
        public var errors: [String: UInt64]
        public var timeouts: UInt64
        /// Service time per request, microseconds.
        public var latency: LatencyHistogram

        public var requestsPerSecond: Double { seconds > 0 ? Double(requests) / seconds : 0 }
    }

    /// What one loop recorded (touched on that loop only).
    private final class Tally: @unchecked Sendable {
        var requests: UInt64 = 0
        var byStatus: [Int: UInt64] = [:]
        var errors: [String: UInt64] = [:]
        var timeouts: UInt64 = 0
        var latency = LatencyHistogram()
    }

    private let client: HTTPClient
    private let base: TargetURL
    private let requests: [Request]
    private let connections: Int
    private let loops: Int
    private let next = Atomic<Int>(0)
    private let running = Atomic<Bool>(true)
    private let tallies: [Tally]
    private let finished = DispatchSemaphore(value: 0)

    public init(group: EventLoopGroup, base: TargetURL, requests: [Request], connections: Int) {
        precondition(!requests.isEmpty && connections > 0)
        loops = group.loops.count
        // One connection per pool, pools pinned round-robin to loops: an even spread.
        client = HTTPClient(group: group, configuration: HTTPClient.Configuration(maxConnectionsPerPool: 1))
        self.base = base
        self.requests = requests
        self.connections = connections
        tallies = group.loops.map { _ in Tally() }
    }

    /// Runs for `seconds` and waits for the requests in flight.
    public func run(seconds: Double) -> Result {
        let started = Monotonic.now()
        for connection in 0..<connections { sendNext(connection: connection) }
        Thread.sleep(forTimeInterval: seconds)
        running.store(false, ordering: .releasing)
        for _ in 0..<connections { finished.wait() }
        let elapsed = Double(Monotonic.now() - started) / 1e9
        var result = Result(requests: 0, seconds: elapsed, byStatus: [:], errors: [:], timeouts: 0, latency: LatencyHistogram())
        for tally in tallies {
            result.requests += tally.requests
            result.byStatus.merge(tally.byStatus, uniquingKeysWith: +)
            result.errors.merge(tally.errors, uniquingKeysWith: +)
            result.timeouts += tally.timeouts
            result.latency.merge(tally.latency)
        }
        client.shutdown()
        return result
    }

    private func sendNext(connection: Int) {
        guard running.load(ordering: .acquiring) else {
            finished.signal()
            return
        }
        let index = next.add(1, ordering: .relaxed).newValue % requests.count
        let template = requests[index]
        let loop = connection % loops
        // One pool per connection: pools are keyed by source address, so each connection has its
        // own loopback source (127.0.0.1, 127.0.0.2, …) on its pinned loop.
        let request = HTTPClientRequest(
            method: template.method, url: TargetURL(origin: base.origin, path: base.path == "/" ? template.path : base.path + template.path),
            headers: template.headers, body: template.body, source: .v4(0x7F00_0001 &+ UInt32(connection)),
            timeoutNanoseconds: 10_000_000_000, loop: loop
        )
        let tally = tallies[loop]
        client.execute(request) { [self] result in
            tally.requests += 1
            switch result {
            case .response(let response, let timings):
                tally.byStatus[response.status, default: 0] += 1
                tally.latency.record(timings.service / 1_000)
            case .failure(let error, _):
                tally.errors[error.reason.rawValue, default: 0] += 1
            case .timeout:
                tally.timeouts += 1
            }
            sendNext(connection: connection)
        }
    }
}

/// The requests a scenario's devices send first, each from its own device: what a benchmark
/// replays so that bodies differ as a fleet's do.
public enum RequestSampler {
    public static func sample(_ scenario: Scenario, count: Int) async -> [Request] {
        let mocks = MockFleet(scenario: scenario)
        let capture = CaptureTransport(inner: SimulatedTransport(scenario: scenario, mocks: mocks, devices: 0..<scenario.devices), limit: count)
        let thread = PartitionThread(name: "pushswarm-sampler")
        let setup = Run.PartitionSetup(executor: thread, transport: capture, mocks: mocks, devices: 0..<scenario.devices)
        _ = await Run(scenario: scenario, partitions: [setup], ownedThreads: [thread]).run()
        return capture.captured
    }

    private final class CaptureTransport: ForwardingTransport {
        let limit: Int
        var captured: [Request] = []

        init(inner: SimulatedTransport, limit: Int) {
            self.limit = limit
            super.init(inner: inner)
        }

        override func send(_ outgoing: OutgoingRequest, device: Int, platform: String, source: SourceAddress, at now: Instant) -> (ExchangeCompletion, Instant)? {
            if captured.count < limit { captured.append(outgoing.request) }
            return inner.send(outgoing, device: device, platform: platform, source: source, at: now)
        }

        override var isInterrupted: Bool { captured.count >= limit }
    }
}
