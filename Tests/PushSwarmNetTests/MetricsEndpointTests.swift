import Foundation
import PushSwarmCore
import PushSwarmMetrics
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
        metrics.increment("notifications.tapped", by: 2)
        return RunProgress(elapsed: .seconds(4), duration: .seconds(60), metrics: metrics, devices: 500)
    }

    @Test func theTextFormatHasCountersAndALatencySummary() {
        var progress = Self.progress()
        progress.openConnections = 3
        let text = MetricsEndpoint.text(progress, scenario: "quick\"start")
        let lines = Set(text.split(separator: "\n").map(String.init))
        let labels = "scenario=\"quick\\\"start\",operation=\"smartapppush.events\""
        #expect(lines.contains("pushswarm_requests_sent_total{\(labels)} 40"))
        #expect(lines.contains("pushswarm_retries_total{\(labels)} 5"))
        #expect(lines.contains("pushswarm_responses_total{\(labels),status=\"429\"} 4"))
        #expect(lines.contains("pushswarm_responses_total{\(labels),status=\"200\"} 36"))
        #expect(lines.contains("pushswarm_latency_seconds_count{\(labels)} 40"))
        #expect(lines.contains("# TYPE pushswarm_latency_seconds summary"))
        #expect(lines.contains("pushswarm_events_total{scenario=\"quick\\\"start\",name=\"notifications.tapped\"} 2"))
        #expect(lines.contains("pushswarm_run_elapsed_seconds{scenario=\"quick\\\"start\"} 4.0"))
        #expect(lines.contains("pushswarm_http_connections_open{scenario=\"quick\\\"start\"} 3"))
        #expect(!MetricsEndpoint.text(Self.progress(), scenario: "s").contains("connections_open"), "no gauge in simulated time")
        // Every sample line is `name{labels} value`.
        for line in lines where !line.hasPrefix("#") {
            #expect(line.split(separator: " ").last.flatMap { Double($0) } != nil, "\(line)")
        }
    }

    @Test func theEndpointServesTheLatestProgressOverASocket() async throws {
        let endpoint = MetricsEndpoint(scenario: "s")
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
        #expect(String(decoding: after.body, as: UTF8.self).contains("pushswarm_requests_sent_total{scenario=\"s\",operation=\"smartapppush.events\"} 40"))
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
