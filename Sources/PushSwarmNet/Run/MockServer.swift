import Foundation
public import PushSwarmCore
public import PushSwarmMetrics
import Synchronization

/// Every built-in mock service on real sockets: the same `MockFleet` as in simulated time,
/// behind `HTTPServer`, answering after each mock's sampled latency. Also serves
/// `GET /metrics` (Prometheus text format), `GET /ledger` (JSON; `?keys=1` lists accepted keys)
/// and a WebSocket echo at `/_pushswarm/echo` for connectivity checks.
public final class MockServer: Sendable {
    public let mocks: MockFleet
    public let server: HTTPServer
    private let clock: WallClock
    private let counts = Mutex<[String: [Int: UInt64]]>([:])

    public init(mocks: MockFleet, group: EventLoopGroup, clock: WallClock) {
        self.mocks = mocks
        self.clock = clock
        let box = HandlerBox()
        server = HTTPServer(group: group) { request, responder in box.handle?(request, responder) }
        box.handle = { [weak self] request, responder in self?.handle(request, responder) }
    }

    public func start(at address: SocketAddress) throws(NetError) {
        try server.start(at: address)
    }

    public var port: UInt16 { server.port }

    public func stop() { server.stop() }

    private func handle(_ request: ServerRequest, _ responder: HTTPResponder) {
        let path = request.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? "/"
        switch (request.method, path) {
        case ("GET", "/metrics"):
            return responder.respond(Response(status: 200, headers: [Header("Content-Type", "text/plain; version=0.0.4")], body: Array(metricsText().utf8)))
        case ("GET", "/ledger"):
            let body = JSONWriter.bytes(of: ledgerJSON(withKeys: request.target.contains("keys=1")), indent: 2)
            return responder.respond(Response(status: 200, headers: [Header("Content-Type", "application/json")], body: body))
        case (_, "/_pushswarm/echo") where request.isWebSocketUpgrade:
            return responder.acceptWebSocket(EchoSocket())
        default:
            break
        }
        guard let (platform, platformPath) = mocks.route(request.target) else {
            let body = JSONWriter.bytes(of: ["error": .string("no platform serves \(path); prefix the path with /<platform>, one of \(mocks.platforms.joined(separator: ", "))")])
            return responder.respond(Response(status: 404, headers: [Header("Content-Type", "application/json")], body: body))
        }
        var forwarded = request.request
        forwarded.path = platformPath
        let answer = mocks.exchange(platform: platform, forwarded, from: SourceAddress(peer: request.peer), at: clock.now)
        counts.withLock { $0[answer.operation, default: [:]][answer.response.status, default: 0] += 1 }
        responder.respond(answer.response, afterNanoseconds: UInt64(max(0, answer.latency.microseconds)) * 1_000)
    }

    /// Requests answered by operation and status, ledger counts, and the server's connections.
    public func metricsText() -> String {
        var lines = [
            "# HELP pushswarm_mock_requests_total Requests the mock answered, by operation and status.",
            "# TYPE pushswarm_mock_requests_total counter",
        ]
        for (operation, statuses) in counts.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            for (status, count) in statuses.sorted(by: { $0.key < $1.key }) {
                lines.append("pushswarm_mock_requests_total{operation=\"\(operation)\",status=\"\(status)\"} \(count)")
            }
        }
        let ledgers = mocks.ledgers
        lines.append("# HELP pushswarm_mock_ledger_accepted_total Distinct items the mock accepted, by operation.")
        lines.append("# TYPE pushswarm_mock_ledger_accepted_total counter")
        for (_, ledger) in ledgers.sorted(by: { $0.key < $1.key }) {
            for (operation, count) in ledger.acceptedByOperation.sorted(by: { $0.key < $1.key }) {
                lines.append("pushswarm_mock_ledger_accepted_total{operation=\"\(operation)\"} \(count)")
            }
        }
        lines.append("# HELP pushswarm_mock_ledger_duplicates_total Items accepted again (same fingerprint), by operation.")
        lines.append("# TYPE pushswarm_mock_ledger_duplicates_total counter")
        for (_, ledger) in ledgers.sorted(by: { $0.key < $1.key }) {
            for (operation, count) in ledger.duplicatesByOperation.sorted(by: { $0.key < $1.key }) {
                lines.append("pushswarm_mock_ledger_duplicates_total{operation=\"\(operation)\"} \(count)")
            }
        }
        for (name, value) in server.statistics.snapshot {
            let type = name.hasSuffix("_total") ? "counter" : "gauge"
            lines.append("# TYPE pushswarm_mock_\(name) \(type)")
            lines.append("pushswarm_mock_\(name) \(value)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    public func ledgerJSON(withKeys: Bool) -> JSONValue {
        var platforms = JSONObject()
        for (name, ledger) in mocks.ledgers.sorted(by: { $0.key < $1.key }) {
            var entry: JSONObject = [
                "accepted": .number(Double(ledger.accepted)), "duplicates": .number(Double(ledger.duplicates)),
            ]
            var byOperation = JSONObject()
            for (operation, count) in ledger.acceptedByOperation.sorted(by: { $0.key < $1.key }) { byOperation[operation] = .number(Double(count)) }
            entry["acceptedByOperation"] = .object(byOperation)
            if withKeys {
                entry["keys"] = .array(ledger.keys.map(\.hexString).sorted().map { JSONValue.string($0) })
            }
            platforms[name] = .object(entry)
        }
        return ["platforms": .object(platforms)]
    }
}

/// Lets the server's handler reach the MockServer that owns the server.
private final class HandlerBox: @unchecked Sendable {
    var handle: HTTPHandler?
}

/// Answers every text and binary message with itself.
private final class EchoSocket: WebSocketDelegate {
    func webSocketOpened(_ socket: WebSocket) {}
    func webSocket(_ socket: WebSocket, receivedText text: String) { socket.send(text: text) }
    func webSocket(_ socket: WebSocket, receivedBinary data: [UInt8]) { socket.send(binary: data) }
    func webSocketClosed(_ socket: WebSocket, code: UInt16?, reason: String, error: NetError?) {}
}
