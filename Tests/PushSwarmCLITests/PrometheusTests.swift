import Foundation
import PushSwarmMetrics
import PushSwarmTestSupport
import Testing

/// Issue 38's end to end: Debian's `prometheus` scrapes three shard processes of one wall run
/// every second, as docs/distributed.md sets it up, and what its HTTP API answers after the run is
/// the run `merge` reports: requests, 429s and retries summed over the shards, and p99s from
/// `histogram_quantile` over the summed buckets. Every query of deploy/grafana/pushswarm.json
/// returns data from it. CI installs prometheus; `.ci/run` fails without it.
@Suite(.serialized) struct PrometheusTests {
    private let cli = CommandLineTests()

    /// A campaign on 600 installs behind 6 addresses, refused by the built-in mock's per-address
    /// limit and retried: 429s, retries and drops in a few seconds.
    private static let scenario = """
        {
          "name": "prometheus-shards", "seed": 38, "duration": "5s", "devices": 600,
          "network": {"devicesPerSourceIP": 100},
          "groups": [{"name": "android", "platform": "smartapppush", "os": "android", "share": 1, "client": {"profile": "fcm"}}],
          "behaviour": {"newInstallShare": 0, "unreachableShare": 0},
          "campaigns": [{"name": "burst", "at": "500ms", "audience": 1, "deliveryDelay": {"constant": "100ms"}, "tapRate": 0.5,
                         "timeToOpen": {"uniform": ["0s", "1500ms"]}}],
          "platforms": {"smartapppush": {
            "retry": {"rateLimited": {"initialDelay": "300ms", "multiplier": 2, "maxDelay": "1200ms", "maxRetries": 3, "whenExhausted": "drop", "jitter": "none"}},
            "mock": {"latency": {"lognormal": {"median": "4ms", "sigma": 0.8}},
                     "rateLimits": [{"algorithm": "leakyBucket", "rate": "10/s", "burst": 10, "nodelay": true, "key": "sourceIP", "status": 429}]}
          }}
        }
        """

    @Test(.enabled(if: which("prometheus") != nil && which("curl") != nil, "needs prometheus and curl (apt-get install prometheus curl)"))
    func prometheusAddsTheShardsUpToTheMergedReport() async throws {
        let directory = NSTemporaryDirectory() + "pushswarm-prometheus-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let scenario = directory + "/scenario.json"
        try Self.scenario.write(toFile: scenario, atomically: true, encoding: .utf8)
        let runID = "prom-\(UUID().uuidString.prefix(8).lowercased())"
        let ports = (0..<3).map { _ in freePort() }
        let prometheusPort = freePort()
        // deploy/prometheus/prometheus.yml, with this run's targets and a 1 s scrape.
        let deployed = try String(contentsOfFile: CommandLineTests.root.path + "/deploy/prometheus/prometheus.yml", encoding: .utf8)
        var config = deployed.replacingOccurrences(of: "scrape_interval: 5s", with: "scrape_interval: 1s")
        let targets = deployed.split(separator: "\n").filter { $0.contains("example.internal:9464") }
        #expect(targets.count == 3, "the deployed configuration lists three shards")
        for (target, port) in zip(targets, ports) {
            config = config.replacingOccurrences(of: String(target), with: "          - 127.0.0.1:\(port)")
        }
        try config.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        let prometheus = try Peer(which("prometheus")!, [
            "--config.file=\(directory)/prometheus.yml", "--storage.tsdb.path=\(directory)/data",
            "--web.listen-address=127.0.0.1:\(prometheusPort)", "--log.level=info",
        ], readyWhen: "Server is ready to receive web requests", on: .standardError)
        defer { prometheus.stop() }
        #expect(await prometheus.ready())

        // Three shard processes of one run, as on three machines: one run id, one start.
        let startAt = Int(Date().timeIntervalSince1970) + 3
        let shards = try (1...3).map { index in
            let process = Process()
            process.executableURL = CommandLineTests.binary
            process.arguments = [
                "run", scenario, "--clock", "wall", "--shard", "\(index)/3", "--run-id", runID, "--start-at", "\(startAt)",
                "--metrics-listen", "127.0.0.1:\(ports[index - 1])", "--metrics-linger", "3s", "--no-warm-up",
                "--out", "\(directory)/shard-\(index)", "--quiet",
            ]
            process.currentDirectoryURL = CommandLineTests.root
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        defer { for shard in shards where shard.isRunning { kill(shard.processIdentifier, SIGKILL) } }
        for shard in shards {
            await exited(shard)
            #expect(shard.terminationStatus == 0)
        }
        let merge = try await cli.run(["merge", "\(directory)/shard-1", "\(directory)/shard-2", "\(directory)/shard-3", "--out", "\(directory)/merged", "--quiet"])
        #expect(merge.status == 0, "\(merge.error)")
        let merged = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: "\(directory)/merged/summary.json"))))

        /// An instant query's values (`last_over_time`: a shard that ended is stale to a plain
        /// selector), by the value of `label`.
        func query(_ expression: String, by label: String? = nil) throws -> [String: Double] {
            let text = try cli.shell("curl", ["-s", "-G", "--data-urlencode", "query=\(expression)", "http://127.0.0.1:\(prometheusPort)/api/v1/query"])
            let answer = try JSONParser.parse(Array(text.utf8))
            #expect(answer["status"] == "success", "\(expression): \(text.prefix(300))")
            var values: [String: Double] = [:]
            for series in answer["data"]?["result"]?.arrayValue ?? [] {
                let key = label.flatMap { series["metric"]?[$0]?.stringValue } ?? ""
                values[key] = series["value"]?.arrayValue?.last?.stringValue.flatMap(Double.init)
            }
            return values
        }
        // The whole hour: the run is its only data, and on a busy machine the shards' last
        // scrapes can be minutes old by the time the test gets here (CI's suites hold the
        // concurrency pool's threads; a full suite here once took 356 s to reach these queries,
        // and a 5-minute window found nothing).
        let selector = "{run_id=\"\(runID)\"}[1h]"
        let shardsSeen = try query("count(last_over_time(pushswarm_run_elapsed_seconds\(selector))) by (shard)", by: "shard")
        #expect(Set(shardsSeen.keys) == ["1/3", "2/3", "3/3"], "\(shardsSeen)")
        let sent = try query("sum(last_over_time(pushswarm_requests_sent_total\(selector)))")[""]
        let refused = try query("sum(last_over_time(pushswarm_rate_limited_total\(selector)))")[""]
        let retries = try query("sum(last_over_time(pushswarm_retries_total\(selector)))")[""]
        let mergedSent = try #require(merged["requests"]?["sent"]?.numberValue)
        let mergedRefused = merged["requests"]?["byStatus"]?["429"]?.numberValue ?? 0
        let mergedRetries = try #require(merged["retries"]?["total"]?.numberValue)
        #expect(mergedSent > 500 && mergedRefused > 50 && mergedRetries > 50, "a run with 429s and retries: \(mergedSent) sent, \(mergedRefused) 429s, \(mergedRetries) retries")
        #expect(sent == mergedSent, "sent: Prometheus \(String(describing: sent)), merged \(mergedSent)")
        #expect(refused == mergedRefused, "429s: Prometheus \(String(describing: refused)), merged \(mergedRefused)")
        #expect(retries == mergedRetries, "retries: Prometheus \(String(describing: retries)), merged \(mergedRetries)")
        // p99 per operation from the summed buckets, against the merged (exact) histogram's.
        let p99s = try query("histogram_quantile(0.99, sum by (le, operation) (last_over_time(pushswarm_latency_seconds_bucket\(selector))))", by: "operation")
        guard case .object(let operations)? = merged["operations"] else {
            Issue.record("the merged summary has no operations")
            return
        }
        #expect(!operations.members.isEmpty)
        for (operation, entry) in operations.members {
            let exact = try #require(entry["latencyMs"]?["p99"]?.numberValue) / 1_000
            let estimate = try #require(p99s[operation], "no p99 for \(operation): \(p99s)")
            #expect(abs(estimate - exact) <= 0.1 * exact, "\(operation) p99: Prometheus \(estimate) s, merged \(exact) s")
        }

        // Every query of the Grafana dashboard, over the run, returns data.
        let dashboard = try JSONParser.parse(Array(try Data(contentsOf: CommandLineTests.root.appendingPathComponent("deploy/grafana/pushswarm.json"))))
        let expressions = (dashboard["panels"]?.arrayValue ?? []).flatMap { $0["targets"]?.arrayValue ?? [] }.compactMap { $0["expr"]?.stringValue }
        #expect(expressions.count >= 10)
        let now = Int(Date().timeIntervalSince1970)
        for expression in expressions {
            let concrete = expression.replacingOccurrences(of: "$run_id", with: runID).replacingOccurrences(of: "$__rate_interval", with: "4s")
            let text = try cli.shell("curl", [
                "-s", "-G", "--data-urlencode", "query=\(concrete)", "--data-urlencode", "start=\(startAt - 5)", "--data-urlencode", "end=\(now)",
                "--data-urlencode", "step=1", "http://127.0.0.1:\(prometheusPort)/api/v1/query_range",
            ])
            let answer = try JSONParser.parse(Array(text.utf8))
            let values = (answer["data"]?["result"]?.arrayValue ?? []).flatMap { $0["values"]?.arrayValue ?? [] }
            let numbers = values.compactMap { $0.arrayValue?.last?.stringValue.flatMap(Double.init) }.filter { !$0.isNaN }
            #expect(!numbers.isEmpty, "no data for the dashboard's \(expression): \(text.prefix(300))")
        }
    }
}
