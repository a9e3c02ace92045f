import Foundation
public import PushSwarmCore
import PushSwarmMetrics
import Synchronization

/// `--dashboard ADDRESS:PORT`: a page to watch a wall run while it goes. `GET /` is one HTML file
/// with its styles and script inline (no network beyond this server, so it works offline);
/// its script fetches `GET /data` each second and draws what it says. The charts are
/// report.html's own (`HTMLReport.overTime`, SVG made here), so the live view and the report
/// read the same.
public final class Dashboard: LiveEndpoint {
    /// The latest progress and the one before it (for rates), shared with the server's handler.
    private final class State: Sendable {
        let progress = Mutex<(latest: RunProgress?, previous: RunProgress?)>((nil, nil))
    }

    private let state = State()
    private let group: EventLoopGroup
    private let server: HTTPServer

    public init(scenario: String) {
        group = EventLoopGroup(threads: 1, name: "pushswarm-dashboard")
        let state = self.state
        server = HTTPServer(group: group) { request, responder in
            let path = request.path
            // RFC 9110 section 9.3.2: HEAD wherever GET is allowed (the server sends no body).
            guard request.method == "GET" || request.method == "HEAD" else {
                return responder.respond(Response(status: 405, headers: [Header("Allow", "GET, HEAD"), Header("Content-Type", "text/plain")], body: Array("the dashboard answers GET and HEAD only\n".utf8)))
            }
            let noStore = Header("Cache-Control", "no-store")
            switch path {
            case "/":
                responder.respond(Response(status: 200, headers: [Header("Content-Type", "text/html; charset=utf-8"), noStore], body: Array(Self.page(scenario: scenario).utf8)))
            case "/data":
                let (latest, previous) = state.progress.withLock { $0 }
                let data = Self.data(latest, previous: previous, scenario: scenario)
                responder.respond(Response(status: 200, headers: [Header("Content-Type", "application/json"), noStore], body: JSONWriter.bytes(of: data)))
            default:
                responder.respond(Response(status: 404, headers: [Header("Content-Type", "text/plain")], body: Array("the dashboard is at / and its data at /data\n".utf8)))
            }
        }
    }

    public func start(at address: SocketAddress) throws(NetError) { try server.start(at: address) }

    public var port: UInt16 { server.port }

    public func publish(_ progress: RunProgress) {
        state.progress.withLock { $0 = (progress, $0.latest) }
    }

    public func stop() {
        server.stop()
        group.shutdown()
    }

    /// What the page shows, as JSON: a status line, tiles (`id`, `label`, `text`, `value`) and
    /// the charts' SVG.
    static func data(_ progress: RunProgress?, previous: RunProgress?, scenario: String) -> JSONValue {
        guard let progress else {
            return ["scenario": .string(scenario), "status": "waiting for the run's first second", "tiles": .array([]), "charts": .array([])]
        }
        let metrics = progress.metrics
        let group = TerminalReport.group
        let format = TerminalReport.format2
        var rate = 0.0
        if let previous {
            let span = (progress.elapsed - previous.elapsed).seconds
            if span > 0 { rate = Double(metrics.sent - min(metrics.sent, previous.metrics.sent)) / span }
        }
        let statuses = metrics.byStatus
        let ok = statuses.filter { $0.key < 400 }.values.reduce(0, +)
        let rateLimited = statuses[429] ?? 0
        let otherErrors = statuses.filter { $0.key >= 400 && $0.key != 429 }.values.reduce(0, +) + metrics.transportErrors + metrics.timeouts
        let latest = metrics.timeline.intervals.last { !$0.latency.isEmpty }?.latency
        let latency = [0.5, 0.9, 0.99].map { quantile in latest?.milliseconds(atQuantile: quantile).map(format) ?? "–" }.joined(separator: " · ")
        let lag = metrics.duration(.generatorLag).flatMap { $0.value(atQuantile: 0.99) }.map { "\(format(Double($0) / 1_000)) ms" } ?? "–"
        func tile(_ id: String, _ label: String, _ text: String, _ value: Double) -> JSONValue {
            ["id": .string(id), "label": .string(label), "text": .string(text), "value": .number(value)]
        }
        let tiles: [JSONValue] = [
            tile("requests", "requests sent", group(metrics.sent), Double(metrics.sent)),
            tile("rate", "per second now", format(rate), rate),
            tile("ok", "answered 1xx–3xx", group(ok), Double(ok)),
            tile("rate-limited", "429s", group(rateLimited), Double(rateLimited)),
            tile("errors", "other errors", group(otherErrors), Double(otherErrors)),
            tile("retries", "retries", group(metrics.retries), Double(metrics.retries)),
            tile("latency", "p50 · p90 · p99 ms (latest interval)", latency, latest?.milliseconds(atQuantile: 0.99) ?? 0),
            tile("active", "devices active of \(group(UInt64(progress.devices)))", group(progress.activeDevices), Double(progress.activeDevices)),
            tile("sockets", "WebSockets open", group(metrics.socketsOpen), Double(metrics.socketsOpen)),
            tile("connections", "HTTP connections open", progress.openConnections.map { group(UInt64($0)) } ?? "–", Double(progress.openConnections ?? 0)),
            tile("lag", "generator lag p99", lag, Double(metrics.duration(.generatorLag)?.value(atQuantile: 0.99) ?? 0) / 1_000),
        ]
        let share = progress.duration.microseconds > 0 ? min(1, Double(progress.elapsed.microseconds) / Double(progress.duration.microseconds)) : 0
        let clock = { (seconds: Double) in Story.clock(max(0, seconds), long: false) }
        var status = "\(clock(progress.elapsed.seconds)) of \(clock(progress.duration.seconds)) (\(Int((share * 100).rounded())) %)"
        // A --workers shard that ended early: its counts above are its last, not live.
        let shards = progress.shards ?? []
        for (number, standing) in shards.enumerated() {
            if case .stopped(let why) = standing { status += " · shard \(number + 1)/\(shards.count) stopped (\(why)): its counts are its last" }
        }
        return [
            "scenario": .string(scenario), "status": .string(status),
            "elapsedSeconds": .number(progress.elapsed.seconds), "durationSeconds": .number(progress.duration.seconds),
            "tiles": .array(tiles), "charts": .array(HTMLReport.overTime(wholeIntervals(of: progress)).map { .string($0.svg) }),
        ]
    }

    /// The metrics with the interval under way left out of the charts: it has only begun
    /// counting, and would draw every line dropping towards zero at the right edge.
    static func wholeIntervals(of progress: RunProgress) -> RunMetrics {
        var metrics = progress.metrics
        let whole = Int(max(0, progress.elapsed.microseconds) / max(1, metrics.timeline.intervalMicroseconds))
        if whole > 0, metrics.timeline.intervals.count > whole {
            metrics.timeline.restore(Array(metrics.timeline.intervals.prefix(whole)))
        }
        return metrics
    }

    /// The page: styles as report.html's, a script that polls `data` each second.
    static func page(scenario: String) -> String {
        let title = HTMLReport.escape(scenario)
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>PushSwarm live · \(title)</title>
            <style>
            body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px auto;max-width:1000px;color:#222;padding:0 16px}
            h1{font-size:22px;margin:0 0 4px}.meta{color:#555}.tiles{display:flex;flex-wrap:wrap;gap:10px;margin:16px 0}
            .tile{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:120px}.tile b{display:block;font-size:20px}
            .ended{color:#b00020}svg.chart{width:100%;height:auto;display:block;margin:4px 0 12px}svg text{font:11px system-ui,sans-serif;fill:#444}
            </style></head><body>
            <h1>PushSwarm live · \(title)</h1>
            <p class="meta" id="status">connecting…</p>
            <div class="tiles" id="tiles"></div>
            <div id="charts"></div>
            <script>
            "use strict";
            const tiles = document.getElementById("tiles"), charts = document.getElementById("charts"), status = document.getElementById("status");
            function draw(data) {
              status.textContent = data.status;
              status.className = "meta";
              for (const tile of data.tiles) {
                let box = document.getElementById(tile.id);
                if (!box) {
                  box = document.createElement("div");
                  box.className = "tile";
                  box.id = tile.id;
                  box.append(document.createElement("span"), document.createElement("b"));
                  tiles.append(box);
                }
                box.firstChild.textContent = tile.label;
                box.lastChild.textContent = tile.text;
                box.dataset.value = tile.value;
              }
              charts.innerHTML = data.charts.join("");
            }
            async function refresh() {
              try {
                const response = await fetch("data", {cache: "no-store"});
                if (!response.ok) throw new Error(response.status);
                draw(await response.json());
              } catch (error) {
                status.textContent = "The run has ended or the dashboard cannot be reached: these are the last figures it served.";
                status.className = "meta ended";
              }
            }
            refresh();
            setInterval(refresh, 1000);
            </script>
            </body></html>

            """
    }
}
