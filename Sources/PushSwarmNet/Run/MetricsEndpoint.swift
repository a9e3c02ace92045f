import Foundation
public import PushSwarmCore
import PushSwarmMetrics
import Synchronization

/// A server that shows a wall run while it goes (`--metrics-listen`, `--dashboard`): it takes
/// each second's progress snapshot and serves its own rendering of it.
public protocol LiveEndpoint: Sendable {
    func start(at address: SocketAddress) throws(NetError)
    /// The port it listens on (the chosen one when asked for port 0).
    var port: UInt16 { get }
    func publish(_ progress: RunProgress)
    func stop()
}

/// `--metrics-listen ADDRESS:PORT`: a wall run's measurements so far in Prometheus's text format
/// at `GET /metrics`, refreshed each second from the run's progress, for a dashboard that
/// watches a long run (Prometheus scrapes it; curl reads it).
public final class MetricsEndpoint: LiveEndpoint {
    /// The latest progress, shared with the server's handler.
    private final class Latest: Sendable {
        let progress = Mutex<RunProgress?>(nil)
    }

    private let latest = Latest()
    private let group: EventLoopGroup
    private let server: HTTPServer
    private let scenario: String

    public init(scenario: String) {
        self.scenario = scenario
        group = EventLoopGroup(threads: 1, name: "pushswarm-metrics")
        let latest = self.latest
        server = HTTPServer(group: group) { request, responder in
            let path = request.path
            guard request.method == "GET" || request.method == "HEAD", path == "/metrics" else {
                return responder.respond(Response(status: 404, headers: [Header("Content-Type", "text/plain")], body: Array("PushSwarm serves GET /metrics here\n".utf8)))
            }
            let text = latest.progress.withLock { $0 }.map { Self.text($0, scenario: scenario) } ?? "# the run has not reported yet\n"
            responder.respond(Response(status: 200, headers: [Header("Content-Type", "text/plain; version=0.0.4")], body: Array(text.utf8)))
        }
    }

    public func start(at address: SocketAddress) throws(NetError) { try server.start(at: address) }

    public var port: UInt16 { server.port }

    public func publish(_ progress: RunProgress) { latest.progress.withLock { $0 = progress } }

    public func stop() {
        server.stop()
        group.shutdown()
    }

    /// The text format: counters as `_total`, latency as a summary (quantiles, `_sum`, `_count`) in seconds.
    public static func text(_ progress: RunProgress, scenario: String) -> String {
        let metrics = progress.metrics
        let run = "scenario=\"\(escape(scenario))\""
        var lines: [String] = []
        func family(_ name: String, _ type: String, _ help: String) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
        }
        family("pushswarm_run_elapsed_seconds", "gauge", "How far the run is on its timeline.")
        lines.append("pushswarm_run_elapsed_seconds{\(run)} \(progress.elapsed.seconds)")
        family("pushswarm_run_duration_seconds", "gauge", "The run's length.")
        lines.append("pushswarm_run_duration_seconds{\(run)} \(progress.duration.seconds)")
        family("pushswarm_devices", "gauge", "Devices in the run.")
        lines.append("pushswarm_devices{\(run)} \(progress.devices)")
        family("pushswarm_devices_active", "gauge", "Devices that sent a request in the latest whole interval.")
        lines.append("pushswarm_devices_active{\(run)} \(progress.activeDevices)")
        if let open = progress.openConnections {
            family("pushswarm_http_connections_open", "gauge", "HTTP connections open now in the client's pools.")
            lines.append("pushswarm_http_connections_open{\(run)} \(open)")
        }
        let operations = metrics.operations.sorted { $0.key < $1.key }
        family("pushswarm_requests_sent_total", "counter", "Requests sent, retries included, by operation.")
        for (name, operation) in operations { lines.append("pushswarm_requests_sent_total{\(run),operation=\"\(escape(name))\"} \(operation.sent)") }
        family("pushswarm_retries_total", "counter", "Retries sent, by operation.")
        for (name, operation) in operations { lines.append("pushswarm_retries_total{\(run),operation=\"\(escape(name))\"} \(operation.retries)") }
        family("pushswarm_responses_total", "counter", "Answers, by operation and status.")
        for (name, operation) in operations {
            for (status, count) in operation.byStatus.sorted(by: { $0.key < $1.key }) {
                lines.append("pushswarm_responses_total{\(run),operation=\"\(escape(name))\",status=\"\(status)\"} \(count)")
            }
        }
        family("pushswarm_transport_errors_total", "counter", "Requests that failed on the wire, by operation.")
        for (name, operation) in operations { lines.append("pushswarm_transport_errors_total{\(run),operation=\"\(escape(name))\"} \(operation.transportErrors)") }
        family("pushswarm_timeouts_total", "counter", "Requests that timed out, by operation.")
        for (name, operation) in operations { lines.append("pushswarm_timeouts_total{\(run),operation=\"\(escape(name))\"} \(operation.timeouts)") }
        family("pushswarm_latency_seconds", "summary", "Latency from the intended start to the answer, by operation.")
        for (name, operation) in operations where !operation.latency.isEmpty {
            for quantile in [0.5, 0.9, 0.99, 0.999] {
                let value = Double(operation.latency.value(atQuantile: quantile) ?? 0) / 1_000_000
                lines.append("pushswarm_latency_seconds{\(run),operation=\"\(escape(name))\",quantile=\"\(quantile)\"} \(value)")
            }
            lines.append("pushswarm_latency_seconds_sum{\(run),operation=\"\(escape(name))\"} \(Double(operation.latency.sum) / 1_000_000)")
            lines.append("pushswarm_latency_seconds_count{\(run),operation=\"\(escape(name))\"} \(operation.latency.totalCount)")
        }
        family("pushswarm_events_total", "counter", "The run's named counts (notifications, sockets, workload, ...).")
        for (name, count) in metrics.counters.sorted(by: { $0.key < $1.key }) {
            lines.append("pushswarm_events_total{\(run),name=\"\(escape(name))\"} \(count)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
    }
}
