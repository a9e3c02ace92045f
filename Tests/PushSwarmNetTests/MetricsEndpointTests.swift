import Foundation
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmTestSupport
@testable import PushSwarmNet
import Testing

/// `--metrics-listen`: a wall run's progress in Prometheus's text format over a real socket.
@Suite struct MetricsEndpointTests {
    static func progress() -> RunProgress {
        var metrics = RunMetrics()
        metrics.timeline = Timeline(intervalMicroseconds: 1_000_000)
        for request in 0..<40 {
            metrics.recordSent(operation: "smartapppush.events", retryNumber: request % 8 == 7 ? 1 : 0, at: Int64(request) * 100_000)
            metrics.recordResponse(operation: "smartapppush.events", status: request % 10 == 0 ? 429 : 200, latencyMicroseconds: 20_000 + UInt64(request) * 1_000, at: Int64(request) * 100_000 + 20_000)
        }
        metrics.increment(.notificationsTapped, by: 2)
        metrics.increment(.socketsOpened, by: 5)
        metrics.increment(.socketsClosedByPeer, by: 2)
        metrics.increment(.workloadArrivals, by: 30)
        metrics.increment(.workloadShed, by: 3)
        metrics.increment(.workloadShedAtWaitingCeiling, by: 1)
        metrics.increment(.workloadMissedStarts, by: 2)
        metrics.droppedByReason["http429RetriesExhausted"] = 4
        metrics.recordDuration(.generatorLag, microseconds: 1_500)
        return RunProgress(elapsed: .seconds(4), duration: .seconds(60), metrics: metrics, devices: 500)
    }

    static let labels = MetricsEndpoint.RunLabels(scenario: "quick\"start", runID: "r-1", shard: "2/3")
    static let run = "scenario=\"quick\\\"start\",run_id=\"r-1\",shard=\"2/3\""

    @Test func theTextFormatHasCountersAndLatencyHistograms() {
        var progress = Self.progress()
        progress.openConnections = 3
        let text = MetricsEndpoint.text(progress, labels: Self.labels)
        let lines = Set(text.split(separator: "\n").map(String.init))
        let labels = "\(Self.run),operation=\"smartapppush.events\""
        #expect(lines.contains("pushswarm_requests_sent_total{\(labels)} 40"))
        #expect(lines.contains("pushswarm_retries_total{\(labels)} 5"))
        #expect(lines.contains("pushswarm_responses_total{\(labels),status=\"429\",status_class=\"4xx\"} 4"))
        #expect(lines.contains("pushswarm_responses_total{\(labels),status=\"200\",status_class=\"2xx\"} 36"))
        #expect(lines.contains("pushswarm_rate_limited_total{\(labels)} 4"))
        #expect(lines.contains("pushswarm_dropped_total{\(Self.run),reason=\"http429RetriesExhausted\"} 4"))
        #expect(lines.contains("pushswarm_workload_arrivals_total{\(Self.run)} 30"))
        #expect(lines.contains("pushswarm_workload_shed_total{\(Self.run),reason=\"deviceBusy\"} 2"))
        #expect(lines.contains("pushswarm_workload_shed_total{\(Self.run),reason=\"waitingCeiling\"} 1"))
        #expect(lines.contains("pushswarm_workload_shed_total{\(Self.run),reason=\"missedStart\"} 2"))
        #expect(lines.contains("pushswarm_sockets_open{\(Self.run)} 3"))
        #expect(lines.contains("pushswarm_generator_lag_seconds_count{\(Self.run)} 1"))
        #expect(lines.contains("pushswarm_generator_lag_seconds_bucket{\(Self.run),le=\"0.00141\"} 0"))
        #expect(lines.contains("pushswarm_generator_lag_seconds_bucket{\(Self.run),le=\"0.00154\"} 1"))
        #expect(lines.contains("pushswarm_latency_seconds_count{\(labels)} 40"))
        #expect(lines.contains("# TYPE pushswarm_latency_seconds histogram"))
        #expect(lines.contains("pushswarm_latency_seconds_bucket{\(labels),le=\"+Inf\"} 40"))
        // Latencies 20 to 59 ms: none at or below 19 ms, 39 at or below 58.7 ms, all by 64 ms.
        #expect(lines.contains("pushswarm_latency_seconds_bucket{\(labels),le=\"0.019\"} 0"))
        #expect(lines.contains("pushswarm_latency_seconds_bucket{\(labels),le=\"0.0587\"} 39"))
        #expect(lines.contains("pushswarm_latency_seconds_bucket{\(labels),le=\"0.064\"} 40"))
        #expect(lines.contains("# TYPE pushswarm_service_time_seconds histogram"))
        #expect(lines.contains("pushswarm_events_total{\(Self.run),name=\"notifications.tapped\"} 2"))
        #expect(lines.contains("pushswarm_run_elapsed_seconds{\(Self.run)} 4.0"))
        #expect(lines.contains("pushswarm_http_connections_open{\(Self.run)} 3"))
        #expect(!MetricsEndpoint.text(Self.progress(), labels: Self.labels).contains("connections_open"), "no gauge in simulated time")
        // Every sample line is `name{labels} value`.
        for line in lines where !line.hasPrefix("#") {
            #expect(line.split(separator: " ").last.flatMap { Double($0) } != nil, "\(line)")
        }
    }

    /// HTTP/2's figures (issue 51): requests by protocol, HTTP/2 connections, GOAWAYs and resets
    /// by code, requests sent again; absent from a run that spoke no HTTP/2.
    @Test func http2FiguresAreFamiliesOfTheirOwn() {
        #expect(!MetricsEndpoint.text(Self.progress(), labels: Self.labels).contains("http2"), "a run without HTTP/2 has no HTTP/2 families")
        var progress = Self.progress()
        progress.metrics.increment(.requestsHTTP2, by: 90)
        progress.metrics.increment(.requestsHTTP1, by: 10)
        progress.metrics.increment(.http2ConnectionsOpened, by: 3)
        progress.metrics.increment(CounterKey.http2GoAways("NO_ERROR"), by: 2)
        progress.metrics.increment(CounterKey.http2Resets("REFUSED_STREAM"), by: 4)
        progress.metrics.increment(.http2RetriedUnprocessed, by: 6)
        let lines = Set(MetricsEndpoint.text(progress, labels: Self.labels).split(separator: "\n").map(String.init))
        #expect(lines.contains("pushswarm_http_requests_by_protocol_total{\(Self.run),protocol=\"HTTP/2\"} 90"))
        #expect(lines.contains("pushswarm_http_requests_by_protocol_total{\(Self.run),protocol=\"HTTP/1.1\"} 10"))
        #expect(lines.contains("pushswarm_http2_connections_total{\(Self.run)} 3"))
        #expect(lines.contains("pushswarm_http2_goaways_total{\(Self.run),code=\"NO_ERROR\"} 2"))
        #expect(lines.contains("pushswarm_http2_stream_resets_total{\(Self.run),code=\"REFUSED_STREAM\"} 4"))
        #expect(lines.contains("pushswarm_http2_retried_unprocessed_total{\(Self.run)} 6"))
    }

    /// One writer for the format (`PrometheusText`), for the run's endpoint and the built-in
    /// mock's alike: label values are escaped (`\\`, `\"`, `\n`), and what both serve passes
    /// Prometheus's own linter. The mock once wrote its lines by hand, unescaped.
    @Test(.enabled(if: which("promtool") != nil, "needs promtool (apt-get install prometheus)"))
    func labelValuesWithQuotesAndNewlinesPassPromtoolFromBothEndpoints() async throws {
        #expect(PrometheusText.escape("a\"b\nc\\d") == #"a\"b\nc\\d"#)
        var progress = Self.progress()
        progress.metrics.droppedByReason["a \"quoted\"\nreason\\"] = 1
        let labels = MetricsEndpoint.RunLabels(scenario: "quick\"start\nsecond line", runID: "r\\1", shard: "1/1")
        let runText = MetricsEndpoint.text(progress, labels: labels)
        #expect(runText.contains(#"pushswarm_dropped_total{scenario="quick\"start\nsecond line",run_id="r\\1",shard="1/1",reason="a \"quoted\"\nreason\\"} 1"#))
        let mocks = MockFleet(platforms: ["echo": EchoConfiguration(mockBehaviour: MockBehaviour())], seed: 1)
        let server = MockServer(mocks: mocks, group: testGroup, clock: WallClock())
        try server.start(at: SocketAddress(ip: .loopback, port: 0))
        defer { server.stop() }
        #expect(await HTTPClient(group: testGroup).send(HTTPClientRequest(method: "GET", url: TargetURL("http://127.0.0.1:\(server.port)/anything")!)).response?.status == 200)
        let mockText = server.metricsText()
        #expect(mockText.contains(#"pushswarm_mock_requests_total{operation="echo",status="200"} 1"#), "\(mockText)")
        for text in [runText, mockText] {
            let (status, output) = await onAThreadOfItsOwn { () -> (Int32, String) in
                let process = Process()
                process.executableURL = URL(fileURLWithPath: which("promtool")!)
                process.arguments = ["check", "metrics"]
                let input = Pipe()
                let output = Pipe()
                process.standardInput = input
                process.standardOutput = output
                process.standardError = output
                do { try process.run() } catch { return (-1, "\(error)") }
                input.fileHandleForWriting.write(Data(text.utf8))
                try? input.fileHandleForWriting.close()
                let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                process.waitUntilExit()
                return (process.terminationStatus, said)
            }
            #expect(status == 0, "promtool: \(output)")
        }
    }

    /// Issue 38: a p99 from `histogram_quantile` over the buckets (Prometheus's linear
    /// interpolation within the bucket the rank falls in) is within 10 % of the exact p99,
    /// wherever it lies from 1 ms to 60 s.
    @Test(arguments: [0.0012, 0.004, 0.037, 0.25, 1.9, 13, 55])
    func aQuantileOverTheBucketsIsWithinTenPerCent(p99Seconds: Double) throws {
        var histogram = LatencyHistogram()
        // 989 values well below, then 11 from the p99 up, so that the 990th of 1,000 is p99Seconds.
        for index in 0..<1_000 {
            let seconds = index < 989 ? p99Seconds * 0.3 * Double(index + 1) / 989 : p99Seconds * (1 + Double(index - 989) / 100)
            histogram.record(UInt64(seconds * 1_000_000))
        }
        let exact = Double(try #require(histogram.value(atQuantile: 0.99))) / 1_000_000
        let bounds = MetricsEndpoint.latencyBounds
        let cumulative = histogram.cumulativeCounts(atOrBelow: bounds.map { UInt64(($0 * 1_000_000).rounded()) })
        let rank = 0.99 * Double(histogram.totalCount)
        let bucket = try #require(cumulative.firstIndex { Double($0) >= rank })
        let lower = bucket == 0 ? 0 : bounds[bucket - 1]
        let below = bucket == 0 ? 0 : Double(cumulative[bucket - 1])
        let estimate = lower + (bounds[bucket] - lower) * (rank - below) / (Double(cumulative[bucket]) - below)
        #expect(abs(estimate - exact) <= 0.1 * exact, "p99 \(exact) s, from the buckets \(estimate) s")
        #expect(bounds.first == 0.001 && bounds.last == 60 && bounds.count < 140)
    }

    @Test func theEndpointServesTheLatestProgressOverASocket() async throws {
        let endpoint = MetricsEndpoint(labels: .init(scenario: "s", runID: "r", shard: "1/1"))
        try endpoint.start(at: SocketAddress(ip: .loopback, port: 0))
        defer { endpoint.stop() }
        let client = HTTPClient(group: testGroup)
        let metricsURL = TargetURL("http://127.0.0.1:\(endpoint.port)/metrics")!
        let before = try #require(await client.send(HTTPClientRequest(method: "GET", url: metricsURL)).response)
        #expect(before.status == 200)
        #expect(String(decoding: before.body, as: UTF8.self).contains("not reported yet"))
        endpoint.publish(Self.progress())
        let after = try #require(await client.send(HTTPClientRequest(method: "GET", url: metricsURL)).response)
        #expect(after.headers.first { $0.name.lowercased() == "content-type" }?.value.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(String(decoding: after.body, as: UTF8.self).contains("pushswarm_requests_sent_total{scenario=\"s\",run_id=\"r\",shard=\"1/1\",operation=\"smartapppush.events\"} 40"))
        let other = try #require(await client.send(HTTPClientRequest(method: "GET", url: TargetURL("http://127.0.0.1:\(endpoint.port)/")!)).response)
        #expect(other.status == 404)
    }

    @Test func theProgressLineSaysWhereTheRunIs() {
        var later = Self.progress()
        let first = Self.progress()
        later.elapsed = .seconds(6)
        later.metrics.recordSent(operation: "smartapppush.events", retryNumber: 0, at: 5_500_000)
        later.metrics.recordTimeout(operation: "smartapppush.events", at: 5_900_000)
        let line = later.line(since: first)
        #expect(line.hasPrefix("[ 6s of 1m00s  10% ]"), "\(line)")
        #expect(line.contains("of 500 devices active"))
        #expect(line.contains("0.50 req/s"), "one request in 2 s: \(line)")
        #expect(line.contains("429s 4 · errors 5 · sent 41"), "\(line)")
        #expect(first.line(since: nil).contains("10.00 req/s"), "40 requests in 4 s")
    }

    /// The active count is the latest whole interval's: the one under way has only begun.
    @Test func devicesActiveAreTheLatestWholeIntervals() {
        var progress = Self.progress()
        progress.metrics = RunMetrics()
        for (second, devices) in [(0, 900), (1, 950), (2, 5)] {
            let index = progress.metrics.timeline.index(at: Int64(second) * 1_000_000)
            for _ in 0..<devices { progress.metrics.timeline.recordDeviceActive(interval: index) }
        }
        progress.elapsed = .milliseconds(2_100)
        #expect(progress.activeDevices == 950)
        #expect(progress.line(since: nil).contains("950 of 500 devices active"), "\(progress.line(since: nil))")
        progress.elapsed = .milliseconds(500)
        #expect(progress.activeDevices == 900, "before an interval has ended: the first, as it stands")
    }
}
