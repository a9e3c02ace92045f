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

    /// What every series carries: the scenario, the run's id and the shard (`1/1` for a run
    /// alone, `all` for the parent of `--workers`), so that Prometheus adds shards of a run up
    /// and tells runs apart.
    public struct RunLabels: Sendable {
        public var scenario: String
        public var runID: String
        public var shard: String

        public init(scenario: String, runID: String, shard: String) {
            self.scenario = scenario
            self.runID = runID
            self.shard = shard
        }

        var labels: PrometheusText.Labels { PrometheusText.Labels([("scenario", scenario), ("run_id", runID), ("shard", shard)]) }
    }

    public init(labels: RunLabels) {
        group = EventLoopGroup(threads: 1, name: "pushswarm-metrics")
        let latest = self.latest
        server = HTTPServer(group: group) { request, responder in
            let path = request.path
            guard request.method == "GET" || request.method == "HEAD", path == "/metrics" else {
                return responder.respond(Response(status: 404, headers: [Header("Content-Type", "text/plain")], body: Array("PushSwarm serves GET /metrics here\n".utf8)))
            }
            let text = latest.progress.withLock { $0 }.map { Self.text($0, labels: labels) } ?? "# the run has not reported yet\n"
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

    /// Bucket bounds in seconds from 1 ms to 60 s, 2^(1/8) apart (to three significant digits):
    /// `histogram_quantile` interpolates within a bucket, so a quantile over summed buckets is
    /// within about 9 % of the exact one anywhere in that range.
    public static let latencyBounds: [Double] = {
        var bounds: [Double] = []
        var value = 0.001
        while value < 60 * 1.0001 {
            let digits = pow(10, 2 - floor(log10(value)))
            bounds.append((value * digits).rounded() / digits)
            value *= pow(2, 0.125)
        }
        if bounds.last != 60 { bounds.append(60) }
        return bounds
    }()

    /// The text format: counters as `_total`, latency and service time as histograms in seconds.
    public static func text(_ progress: RunProgress, labels: RunLabels) -> String {
        let metrics = progress.metrics
        let run = labels.labels
        var out = PrometheusText()
        out.family("pushswarm_run_elapsed_seconds", .gauge, help: "How far the run is on its timeline.")
        out.sample("pushswarm_run_elapsed_seconds", run, progress.elapsed.seconds)
        out.family("pushswarm_run_duration_seconds", .gauge, help: "The run's length.")
        out.sample("pushswarm_run_duration_seconds", run, progress.duration.seconds)
        out.family("pushswarm_devices", .gauge, help: "Devices in the run.")
        out.sample("pushswarm_devices", run, progress.devices)
        out.family("pushswarm_devices_active", .gauge, help: "Devices that sent a request in the latest whole interval.")
        out.sample("pushswarm_devices_active", run, progress.activeDevices)
        if let open = progress.openConnections {
            out.family("pushswarm_http_connections_open", .gauge, help: "HTTP connections open now in the client's pools.")
            out.sample("pushswarm_http_connections_open", run, open)
        }
        if let shards = progress.shards {
            out.family("pushswarm_shard_reporting", .gauge, help: "A --workers shard's stream: 1 while its process runs, 0 once it ended (its counts here are its last).")
            for (number, standing) in shards.enumerated() {
                out.sample("pushswarm_shard_reporting", run.with("worker", "\(number + 1)/\(shards.count)"), standing.isReporting ? 1 : 0)
            }
        }
        let counters = metrics.counters
        out.family("pushswarm_sockets_open", .gauge, help: "Devices' platform sockets (WebSocket) open now.")
        out.sample("pushswarm_sockets_open", run, metrics.socketsOpen)
        let operations = metrics.operations.sorted { $0.key < $1.key }.map { (run.with("operation", $0.key), $0.value) }
        out.family("pushswarm_requests_sent_total", .counter, help: "Requests sent, retries included, by operation.")
        for (labels, operation) in operations { out.sample("pushswarm_requests_sent_total", labels, operation.sent) }
        out.family("pushswarm_retries_total", .counter, help: "Retries sent, by operation.")
        for (labels, operation) in operations { out.sample("pushswarm_retries_total", labels, operation.retries) }
        out.family("pushswarm_responses_total", .counter, help: "Answers, by operation, status and status class (2xx, 4xx...).")
        for (labels, operation) in operations {
            for (status, count) in operation.byStatus.sorted(by: { $0.key < $1.key }) {
                out.sample("pushswarm_responses_total", labels.with("status", "\(status)").with("status_class", "\(status / 100)xx"), count)
            }
        }
        out.family("pushswarm_rate_limited_total", .counter, help: "Answers 429 (Too Many Requests), by operation.")
        for (labels, operation) in operations { out.sample("pushswarm_rate_limited_total", labels, operation.byStatus[429] ?? 0) }
        out.family("pushswarm_dropped_total", .counter, help: "Requests given up on (retries exhausted, ...), by reason.")
        for (reason, count) in metrics.droppedByReason.sorted(by: { $0.key < $1.key }) {
            out.sample("pushswarm_dropped_total", run.with("reason", reason), count)
        }
        out.family("pushswarm_workload_arrivals_total", .counter, help: "Arrivals of the open workloads that started.")
        out.sample("pushswarm_workload_arrivals_total", run, metrics[.workloadArrivals] ?? 0)
        out.family("pushswarm_workload_shed_total", .counter, help: "Arrivals that never started: shed behind a busy device or at the waiting ceiling, or missed (the generator over a second late).")
        let shed = metrics[.workloadShed] ?? 0
        let ceiling = metrics[.workloadShedAtWaitingCeiling] ?? 0
        out.sample("pushswarm_workload_shed_total", run.with("reason", "deviceBusy"), shed - min(shed, ceiling))
        out.sample("pushswarm_workload_shed_total", run.with("reason", "waitingCeiling"), ceiling)
        out.sample("pushswarm_workload_shed_total", run.with("reason", "missedStart"), metrics[.workloadMissedStarts] ?? 0)
        if let http2 = HTTP2Figures(metrics) {
            out.family("pushswarm_http_requests_by_protocol_total", .counter, help: "Requests answered or failed on the wire, by the HTTP that carried them.")
            out.sample("pushswarm_http_requests_by_protocol_total", run.with("protocol", "HTTP/2"), http2.http2Requests)
            out.sample("pushswarm_http_requests_by_protocol_total", run.with("protocol", "HTTP/1.1"), http2.http1Requests)
            out.family("pushswarm_http2_connections_total", .counter, help: "Connections that spoke HTTP/2 (their requests are streams).")
            out.sample("pushswarm_http2_connections_total", run, http2.connections)
            out.family("pushswarm_http2_goaways_total", .counter, help: "GOAWAYs servers sent, by the RFC 9113 error code.")
            for (code, count) in http2.goAways { out.sample("pushswarm_http2_goaways_total", run.with("code", code), count) }
            out.family("pushswarm_http2_stream_resets_total", .counter, help: "Streams reset (RST_STREAM), by code.")
            for (code, count) in http2.resets { out.sample("pushswarm_http2_stream_resets_total", run.with("code", code), count) }
            out.family("pushswarm_http2_retried_unprocessed_total", .counter, help: "Requests a server left unprocessed (GOAWAY, REFUSED_STREAM), sent again on another connection.")
            out.sample("pushswarm_http2_retried_unprocessed_total", run, http2.retriedUnprocessed)
        }
        out.family("pushswarm_transport_errors_total", .counter, help: "Requests that failed on the wire, by operation.")
        for (labels, operation) in operations { out.sample("pushswarm_transport_errors_total", labels, operation.transportErrors) }
        out.family("pushswarm_timeouts_total", .counter, help: "Requests that timed out, by operation.")
        for (labels, operation) in operations { out.sample("pushswarm_timeouts_total", labels, operation.timeouts) }
        let bounds = latencyBounds.map { UInt64(($0 * 1_000_000).rounded()) }
        func series(_ name: String, _ labels: PrometheusText.Labels, _ values: LatencyHistogram) {
            for (bound, count) in zip(latencyBounds, values.cumulativeCounts(atOrBelow: bounds)) {
                out.sample("\(name)_bucket", labels.with("le", "\(bound)"), count)
            }
            out.sample("\(name)_bucket", labels.with("le", "+Inf"), values.totalCount)
            out.sample("\(name)_sum", labels, Double(values.sum) / 1_000_000)
            out.sample("\(name)_count", labels, values.totalCount)
        }
        func histogram(_ name: String, _ help: String, _ histogram: (OperationMetrics) -> LatencyHistogram) {
            out.family(name, .histogram, help: help)
            for (labels, metrics) in operations { series(name, labels, histogram(metrics)) }
        }
        histogram("pushswarm_latency_seconds", "Latency from the intended start to the answer, by operation.") { $0.latency }
        histogram("pushswarm_service_time_seconds", "Time from sending a request to its answer, by operation.") { $0.serviceTime }
        histogram("pushswarm_connect_seconds", "A new connection's TCP connect, for requests that opened one, by operation.") { $0.connectTime }
        histogram("pushswarm_tls_handshake_seconds", "A new connection's TLS handshake after TCP's, for requests that opened one over TLS, by operation.") { $0.tlsHandshakeTime }
        out.family("pushswarm_generator_lag_seconds", .histogram, help: "How late the generator reached its due events: over a few milliseconds, the machine is the bottleneck.")
        series("pushswarm_generator_lag_seconds", run, metrics.duration(.generatorLag) ?? LatencyHistogram())
        out.family("pushswarm_events_total", .counter, help: "The run's named counts (notifications, sockets, workload, ...).")
        for (name, count) in counters.sorted(by: { $0.key < $1.key }) {
            out.sample("pushswarm_events_total", run.with("name", name), count)
        }
        return out.text
    }
}
