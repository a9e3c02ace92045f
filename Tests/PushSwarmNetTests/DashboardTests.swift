import Foundation
import PushSwarmCore
import PushSwarmMetrics
@testable import PushSwarmNet
import Testing

/// `--dashboard`: the live page's data and its server. (The page in a browser:
/// WallClockTests.theLiveDashboardDrawsTheChartsAndItsCountGrowsWhileTheRunGoes.)
@Suite struct DashboardTests {
    @Test func theDataHasTheTilesAndTheReportsChartsWithoutTheIntervalUnderWay() throws {
        var progress = MetricsEndpointTests.progress()
        progress.metrics[.socketsOpened] = 7
        progress.metrics[.socketsClosedByPeer] = 2
        progress.openConnections = 12
        var previous = progress
        previous.elapsed = .seconds(2)
        previous.metrics = RunMetrics()
        let data = Dashboard.data(progress, previous: previous, scenario: "s")
        let tiles = Dictionary(uniqueKeysWithValues: (data["tiles"]?.arrayValue ?? []).compactMap { tile in tile["id"]?.stringValue.map { ($0, tile) } })
        #expect(tiles["requests"]?["value"] == .number(40))
        #expect(tiles["rate"]?["value"] == .number(20), "40 requests in the 2 s since the previous snapshot")
        #expect(tiles["ok"]?["value"] == .number(36) && tiles["rate-limited"]?["value"] == .number(4))
        #expect(tiles["retries"]?["value"] == .number(5))
        #expect(tiles["sockets"]?["value"] == .number(5), "7 opened, 2 closed")
        #expect(tiles["connections"]?["value"] == .number(12))
        #expect(data["status"] == .string("0:04 of 1:00 (7 %)"))
        let charts = (data["charts"]?.arrayValue ?? []).compactMap { $0.stringValue }
        #expect(charts.count == 4 && zip(charts, HTMLReport.chartIDs).allSatisfy { $0.contains("id=\"\($1)\"") })
        // Four seconds of one-second intervals, all whole: four points; at 3.5 s the fourth is
        // under way and left out.
        func points(_ svg: String) -> Int { svg.components(separatedBy: "points=\"")[1].split(separator: "\"")[0].split(separator: " ").count }
        #expect(points(charts[0]) == 4)
        progress.elapsed = .milliseconds(3_500)
        let early = try #require(Dashboard.data(progress, previous: nil, scenario: "s")["charts"]?.arrayValue?.first?.stringValue)
        #expect(points(early) == 3)
    }

    @Test func theServerAnswersThePageItsDataAndNothingElse() async throws {
        let dashboard = Dashboard(scenario: "s <&>")
        try dashboard.start(at: SocketAddress(ip: .loopback, port: 0))
        defer { dashboard.stop() }
        let client = HTTPClient(group: testGroup)
        func get(_ path: String, method: String = "GET") async throws -> Response {
            try #require(await client.send(HTTPClientRequest(method: method, url: TargetURL("http://127.0.0.1:\(dashboard.port)\(path)")!)).response)
        }
        let page = try await get("/")
        let html = String(decoding: page.body, as: UTF8.self)
        #expect(page.status == 200 && html.contains("<title>PushSwarm live · s &lt;&amp;&gt;</title>") && html.contains("fetch(\"data\""))
        let waiting = try JSONParser.parse(try await get("/data").body)
        #expect(waiting["status"]?.stringValue?.contains("waiting") == true && waiting["charts"] == .array([]))
        dashboard.publish(MetricsEndpointTests.progress())
        let data = try JSONParser.parse(try await get("/data").body)
        #expect(data["tiles"]?.arrayValue?.first?["value"] == .number(40))
        #expect(try await get("/elsewhere").status == 404)
        #expect(try await get("/data", method: "POST").status == 405)
        // RFC 9110 section 9.3.2: HEAD wherever GET is allowed, its headers without the body.
        let head = try await get("/", method: "HEAD")
        #expect(head.status == 200 && head.body.isEmpty && head.header("Content-Length") == String(page.body.count))
    }
}
