/// `report.html`: one self-contained file a person reads in a minute. Charts are inline SVG drawn
/// here, styles are inline, and nothing needs JavaScript or the network to be read.
public enum HTMLReport {
    /// Series colours, one per meaning across every chart (the browser check looks for them).
    public enum Colour {
        public static let sent = "#1f77b4"
        public static let ok = "#2ca02c"
        public static let p50 = "#17becf"
        public static let p90 = "#ff7f0e"
        public static let p99 = "#d62728"
        public static let rateLimited = "#9467bd"
        public static let clientErrors = "#8c564b"
        public static let serverErrors = "#e377c2"
        public static let failed = "#7f7f7f"
        public static let retries = "#bcbd22"
    }

    /// The charts' element ids, in page order.
    public static let chartIDs = ["chart-throughput", "chart-latency", "chart-status", "chart-retries"]

    public static func render(_ summary: Summary) -> String {
        let metrics = summary.metrics
        let seconds = Double(metrics.timeline.intervalMicroseconds) / 1_000_000

        var html = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>PushSwarm · \(escape(summary.scenario)) · \(escape(summary.runID))</title>
            <style>
            body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px auto;max-width:1000px;color:#222;padding:0 16px}
            h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
            .meta{color:#555}.tiles{display:flex;flex-wrap:wrap;gap:10px;margin:16px 0}
            .tile{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:120px}.tile b{display:block;font-size:20px}
            .bad{color:#b00020}.good{color:#1b7f3b}.warn{background:#fff4e5;border:1px solid #f0b35a;padding:8px 12px;border-radius:6px}
            .wide{overflow-x:auto}table{border-collapse:collapse;width:100%;margin:6px 0;font-size:13px}th,td{padding:3px 6px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
            th:first-child,td:first-child{text-align:left}th{background:#f6f6f6;font-weight:600}
            svg.chart{width:100%;height:auto;display:block;margin:4px 0 12px}svg text{font:11px system-ui,sans-serif;fill:#444}
            pre{background:#f6f6f6;padding:10px;overflow:auto;font-size:12px}
            </style></head><body>

            """
        html += "<h1>PushSwarm · \(escape(summary.scenario))</h1>\n"
        var meta = "run <code>\(escape(summary.runID))</code> · seed \(summary.seed) · \(escape(summary.clock)) clock · \(TerminalReport.group(UInt64(summary.devices))) devices · \(TerminalReport.formatDuration(summary.simulatedSeconds)) run in \(TerminalReport.format2(summary.wallSeconds)) s wall time · PushSwarm \(escape(summary.version))"
        if let shard = summary.shard { meta += " · shard \(shard.index) of \(shard.count)" }
        if summary.mergedFrom > 0 { meta += " · merged from \(summary.mergedFrom) shards" }
        html += "<p class=\"meta\">\(meta)</p>\n"
        if summary.isSaturated {
            html += "<p class=\"warn\">The generator was saturated (lag p99 \(TerminalReport.format2(summary.lagP99Milliseconds ?? 0)) ms, CPU \(TerminalReport.whole((summary.cpuBusy ?? 0) * 100)) %, \(summary.missedStarts) missed starts, \(summary.shedArrivals) arrivals shed): the load asked for was not the load put on.</p>\n"
        }

        // Verdict tiles: what a reader looks at first.
        let errorRate = metrics.errorRate
        let sent = metrics.sent
        var tiles: [(String, String, String)] = [
            ("requests", TerminalReport.group(sent), ""),
            ("per second", TerminalReport.format2(summary.simulatedSeconds > 0 ? Double(sent) / summary.simulatedSeconds : 0), ""),
            ("p99 latency", metrics.allLatencies.milliseconds(atQuantile: 0.99).map { "\(TerminalReport.format2($0)) ms" } ?? "–", ""),
            ("errors", percent(errorRate), errorRate > 0.01 ? "bad" : ""),
            ("429s", TerminalReport.group(summary.rateLimited), summary.rateLimited > 0 ? "bad" : ""),
            ("attempts per request", TerminalReport.format2(metrics.retryAmplification), metrics.retryAmplification > 1.1 ? "bad" : ""),
        ]
        if let lag = summary.lagP99Milliseconds {
            tiles.append(("generator lag p99", "\(TerminalReport.format2(lag)) ms", summary.isSaturated ? "bad" : ""))
        }
        if summary.ledger != nil {
            tiles.append(("ledger lost", String(summary.lost), summary.lost > 0 ? "bad" : "good"))
            tiles.append(("duplicates", TerminalReport.group(summary.ledgerDuplicates), summary.ledgerDuplicates > 0 ? "bad" : ""))
        }
        html += "<div class=\"tiles\">" + tiles.map { "<div class=\"tile\">\(escape($0.0))<b class=\"\($0.2)\">\(escape($0.1))</b></div>" }.joined() + "</div>\n"

        let judged = summary.thresholds.compactMap { try? Threshold(parsing: $0) }
        if !judged.isEmpty {
            html += "<h2>Thresholds</h2>\n<table><tr><th>threshold</th><th>measured</th><th>verdict</th></tr>\n"
            for threshold in judged {
                let holds = threshold.holds(summary)
                html += "<tr><td><code>\(escape(threshold.text))</code></td><td>\(escape(threshold.format(threshold.measure(summary))))</td><td class=\"\(holds ? "good" : "bad")\">\(holds ? "pass" : "FAIL")</td></tr>\n"
            }
            html += "</table>\n"
        }

        let story = Story(summary)
        if !story.sentences.isEmpty {
            html += "<h2>What happened</h2>\n<ul class=\"story\">" + story.sentences.map { "<li>\(escape($0))</li>" }.joined() + "</ul>\n"
        }

        html += "<h2>Over time</h2>\n<p class=\"meta\">Each point is one \(TerminalReport.formatDuration(seconds)) interval of the run's \(escape(summary.clock)) timeline.</p>\n"
        html += overTime(metrics).map(\.svg).joined()
        if let storm = story.storm {
            html += "<h2>The storm, tick by tick</h2>\n<p class=\"meta\">Each point is one \(TerminalReport.formatDuration(story.tickSeconds)) tick, from a little before the first 429 to a little after the backlog drained.</p>\n"
            html += stormChart(storm, story: story, metrics: metrics).svg
        }

        html += "<h2>By platform</h2>\n" + table(rows(grouping: metrics.operations, by: { String($0.prefix { $0 != "." }) }), first: "platform")
        html += "<h2>By operation</h2>\n<p class=\"meta\">Latency counts from when the device wanted the request sent (queueing and back-off waits included); service time from its first byte on the wire.</p>\n"
        html += table(rows(grouping: metrics.operations, by: { $0 }), first: "operation")

        html += "<h2>Status mix</h2>\n<table><tr><th>status</th><th>answers</th><th>share</th></tr>\n"
        let outcomes = metrics.byStatus.sorted { $0.key < $1.key }.map { ("\($0.key)", $0.value) }
            + metrics.transportErrorsByReason.sorted { $0.key < $1.key }.map { ("transport: \($0.key)", $0.value) }
            + (metrics.timeouts > 0 ? [("timeout", metrics.timeouts)] : [])
        for (name, count) in outcomes {
            html += "<tr><td>\(escape(name))</td><td>\(TerminalReport.group(count))</td><td>\(percent(sent > 0 ? Double(count) / Double(sent) : 0))</td></tr>\n"
        }
        html += "</table>\n"

        if let line = TerminalReport.connectionsLine(metrics) {
            // What the service's edge saw (docs/connections.md).
            html += "<h2>Connections</h2>\n<p>\(escape(line))</p>\n<p class=\"meta\">Each opened connection is a TCP handshake at the service's edge (and a TLS one over https); a full TLS handshake costs the edge an asymmetric key operation, a resumed one does not. Open at the end and at the peak count at a second's resolution.</p>\n"
        }
        if let http2 = HTTP2Figures(metrics) {
            html += "<p>HTTP/2: \(escape(http2.line))</p>\n<p class=\"meta\">Over HTTP/2 an install's requests to an origin are streams of one connection. A GOAWAY (a deploy draining its connections) leaves the streams after its last one unprocessed: they are sent again on a new connection, as are streams refused (REFUSED_STREAM); other resets are the request's error (docs/http2.md).</p>\n"
        }

        html += "<h2>Retries</h2>\n<p>\(TerminalReport.group(metrics.retries)) retries · \(TerminalReport.format2(metrics.retryAmplification)) attempts per request"
        if let p50 = metrics.backoffDelays.value(atQuantile: 0.5) {
            html += " · back-off p50 \(TerminalReport.format2(Double(p50) / 1_000_000)) s, max \(TerminalReport.format2(Double(metrics.backoffDelays.maximum) / 1_000_000)) s"
        }
        if let recovery = metrics.duration(.rateLimitRecovery), let p99 = recovery.value(atQuantile: 0.99) {
            html += " · from a first 429 to acceptance p99 \(TerminalReport.format2(Double(p99) / 1_000_000)) s"
        }
        html += "</p>\n"
        if !metrics.backoffByRetry.isEmpty {
            html += "<table><tr><th>retry</th><th>count</th><th>min s</th><th>p50 s</th><th>max s</th></tr>\n"
            for (retry, histogram) in metrics.backoffByRetry.sorted(by: { $0.key < $1.key }) {
                let seconds = { (value: UInt64) in TerminalReport.format2(Double(value) / 1_000_000) }
                html += "<tr><td>\(retry == RunMetrics.backoffRetryCap ? "\(retry)+" : "\(retry)")</td><td>\(TerminalReport.group(histogram.totalCount))</td><td>\(seconds(histogram.minimum))</td><td>\(seconds(histogram.value(atQuantile: 0.5) ?? 0))</td><td>\(seconds(histogram.maximum))</td></tr>\n"
            }
            html += "</table>\n"
        }
        if !metrics.droppedByReason.isEmpty {
            html += "<p>Dropped by the clients: " + metrics.droppedByReason.sorted { $0.key < $1.key }.map { "\(escape($0.key)) \(TerminalReport.group($0.value))" }.joined(separator: " · ") + "</p>\n"
        }

        if let ledger = summary.ledger {
            html += "<h2>Ledger</h2>\n<p>\(TerminalReport.group(summary.ledgerAccepted)) accepted · \(TerminalReport.group(summary.ledgerDuplicates)) duplicates · <span class=\"\(summary.lost == 0 ? "good" : "bad")\">\(summary.lost) lost</span> (items devices saw accepted that no ledger holds)</p>\n"
            html += "<table><tr><th>operation</th><th>accepted</th><th>duplicates</th><th>peak per second per source</th></tr>\n"
            for (name, entry) in ledger.sorted(by: { $0.key < $1.key }) {
                html += "<tr><td>\(escape(name))</td><td>\(TerminalReport.group(entry.accepted))</td><td>\(TerminalReport.group(entry.duplicates))</td><td>\(entry.peakAcceptedPerSecondPerSource)</td></tr>\n"
            }
            html += "</table>\n"
        }

        if !metrics.counters.isEmpty {
            html += "<h2>Counters</h2>\n<table><tr><th>counter</th><th>count</th></tr>\n"
            for (name, count) in metrics.counters.sorted(by: { $0.key < $1.key }) {
                html += "<tr><td>\(escape(name))</td><td>\(TerminalReport.group(count))</td></tr>\n"
            }
            html += "</table>\n"
        }

        html += "<h2>Scenario</h2>\n<p class=\"meta\">Seed \(summary.seed); rerun with <code>pushswarm run FILE --seed \(summary.seed)</code>.</p>\n"
        if let text = summary.scenarioText {
            html += "<details><summary>The scenario file as the run read it</summary><pre>\(escape(text))</pre></details>\n"
        }
        html += "</body></html>\n"
        return html
    }

    /// The four charts over the run's intervals (report.html's, and the live dashboard's), with
    /// the run's marks (campaign launches) drawn across them.
    public static func overTime(_ metrics: RunMetrics) -> [SVGChart] {
        let timeline = metrics.timeline
        let seconds = Double(timeline.intervalMicroseconds) / 1_000_000
        let intervals = timeline.intervals
        func perSecond(_ value: (Timeline.Interval) -> UInt64) -> [Double?] { intervals.map { Double(value($0)) / seconds } }
        func latency(_ quantile: Double) -> [Double?] { intervals.map { $0.latency.milliseconds(atQuantile: quantile) } }
        let marks = Self.marks(of: metrics)
        return [
            SVGChart(id: chartIDs[0], title: "Throughput (per second)", intervalSeconds: seconds, series: [
                .init(name: "sent", colour: Colour.sent, values: perSecond(\.sent)),
                .init(name: "answered 1xx–3xx", colour: Colour.ok, values: perSecond(\.ok)),
            ], marks: marks),
            SVGChart(id: chartIDs[1], title: "Latency from the intended start (ms)", intervalSeconds: seconds, series: [
                .init(name: "p50", colour: Colour.p50, values: latency(0.5)),
                .init(name: "p90", colour: Colour.p90, values: latency(0.9)),
                .init(name: "p99", colour: Colour.p99, values: latency(0.99)),
            ], marks: marks),
            SVGChart(id: chartIDs[2], title: "Outcomes (per second, stacked)", intervalSeconds: seconds, series: [
                .init(name: "1xx–3xx", colour: Colour.ok, values: perSecond(\.ok)),
                .init(name: "429", colour: Colour.rateLimited, values: perSecond(\.rateLimited)),
                .init(name: "other 4xx", colour: Colour.clientErrors, values: perSecond(\.clientErrors)),
                .init(name: "5xx", colour: Colour.serverErrors, values: perSecond(\.serverErrors)),
                .init(name: "transport errors and timeouts", colour: Colour.failed, values: perSecond { $0.transportErrors + $0.timeouts }),
            ], stacked: true, marks: marks),
            SVGChart(id: chartIDs[3], title: "Rate limiting and retries (per second)", intervalSeconds: seconds, series: [
                .init(name: "429 answers", colour: Colour.rateLimited, values: perSecond(\.rateLimited)),
                .init(name: "retries sent", colour: Colour.retries, values: perSecond(\.retries)),
            ], marks: marks),
        ]
    }

    /// The run's marks (campaign launches) as charts draw them.
    static func marks(of metrics: RunMetrics) -> [SVGChart.Mark] {
        metrics.marks.map { SVGChart.Mark(name: $0.name, seconds: Double($0.microseconds) / 1_000_000) }
    }

    /// The storm at the ticks' resolution: a quarter of its length (ten ticks at least) before
    /// its first 429 and after the backlog drained.
    static func stormChart(_ storm: Story.Storm, story: Story, metrics: RunMetrics) -> SVGChart {
        let ticks = metrics.timeline.ticks
        let margin = max(10, (storm.lastTick - storm.firstTick + 1) / 4)
        let first = max(0, min(storm.firstTick, storm.firstRateLimitedTick) - margin)
        let last = min(ticks.count - 1, storm.lastTick + margin)
        let window = ticks[first...last]
        let seconds = story.tickSeconds
        func perSecond(_ value: (Timeline.Tick) -> UInt32) -> [Double?] { window.map { Double(value($0)) / seconds } }
        let marks = Self.marks(of: metrics)
            .filter { $0.seconds >= Double(first) * seconds && $0.seconds <= Double(last + 1) * seconds }
        return SVGChart(id: "chart-storm", title: "The storm (per second)", intervalSeconds: seconds, series: [
            .init(name: "sent", colour: Colour.sent, values: perSecond(\.sent)),
            .init(name: "answered 1xx–3xx", colour: Colour.ok, values: perSecond(\.ok)),
            .init(name: "429 answers", colour: Colour.rateLimited, values: perSecond(\.rateLimited)),
            .init(name: "retries sent", colour: Colour.retries, values: perSecond(\.retries)),
        ], startSeconds: Double(first) * seconds, marks: marks)
    }

    private static func rows(grouping operations: [String: OperationMetrics], by key: (String) -> String) -> [(String, OperationMetrics)] {
        var grouped: [String: OperationMetrics] = [:]
        for (name, operation) in operations { grouped[key(name), default: OperationMetrics()].merge(operation) }
        return grouped.sorted { $0.key < $1.key }
    }

    private static func table(_ rows: [(String, OperationMetrics)], first: String) -> String {
        var html = "<div class=\"wide\"><table><tr><th>\(first)</th><th>sent</th><th>ok</th><th>429</th><th>other 4xx</th><th>5xx</th><th>net err</th><th>timeout</th><th>retries</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>max ms</th><th>service p99 ms</th></tr>\n"
        for (name, operation) in rows {
            func milliseconds(_ histogram: LatencyHistogram, _ quantile: Double) -> String {
                histogram.milliseconds(atQuantile: quantile).map(TerminalReport.format2) ?? "–"
            }
            let cells = [
                TerminalReport.group(operation.sent), TerminalReport.group(operation.answers(in: Quantity.okStatuses)), TerminalReport.group(operation.byStatus[429] ?? 0),
                TerminalReport.group(operation.answers(in: 400..<500, excluding: 429)), TerminalReport.group(operation.answers(in: 500..<600)),
                TerminalReport.group(operation.transportErrors), TerminalReport.group(operation.timeouts), TerminalReport.group(operation.retries),
                milliseconds(operation.latency, 0.5), milliseconds(operation.latency, 0.9), milliseconds(operation.latency, 0.99),
                operation.latency.isEmpty ? "–" : TerminalReport.format2(Double(operation.latency.maximum) / 1_000),
                milliseconds(operation.serviceTime, 0.99),
            ]
            html += "<tr><td>\(escape(name))</td>" + cells.map { "<td>\($0)</td>" }.joined() + "</tr>\n"
        }
        return html + "</table></div>\n"
    }

    static func percent(_ share: Double) -> String {
        share == 0 ? "0 %" : share < 0.001 ? "<0.1 %" : "\(TerminalReport.format2(share * 100)) %"
    }

    public static func escape(_ text: String) -> String { JUnit.escape(text) }
}

/// A line or stacked-area chart over a run's intervals, as inline SVG with axes, grid and legend.
public struct SVGChart: Sendable {
    struct Series {
        var name: String
        var colour: String
        /// One value per interval; nil where there is nothing to show (no answers, no latency).
        var values: [Double?]
    }

    /// A moment drawn as a dashed vertical line with its name (a campaign's launch).
    struct Mark {
        var name: String
        /// On the run's timeline.
        var seconds: Double
    }

    var id: String
    var title: String
    var intervalSeconds: Double
    var series: [Series]
    var stacked = false
    /// Where the first point is on the run's timeline (a zoomed chart starts later than 0).
    var startSeconds = 0.0
    var marks: [Mark] = []

    static let width = 960.0
    static let height = 280.0
    static let left = 64.0
    static let right = 16.0
    static let top = 30.0
    static let bottom = 44.0

    public var svg: String {
        let plotWidth = Self.width - Self.left - Self.right
        let plotHeight = Self.height - Self.top - Self.bottom
        let count = series.map(\.values.count).max() ?? 0
        // Stacked: each series sits on the sum of those before it.
        var layers: [[Double?]] = series.map(\.values)
        if stacked {
            var base = Array(repeating: 0.0, count: count)
            for index in layers.indices {
                layers[index] = (0..<count).map { point in
                    base[point] += (point < series[index].values.count ? series[index].values[point] : nil) ?? 0
                    return base[point]
                }
            }
        }
        let highest = layers.flatMap { $0.compactMap { $0 } }.max() ?? 0
        let top = Self.niceCeiling(highest)
        func x(_ point: Int) -> Double { Self.left + (count <= 1 ? plotWidth / 2 : plotWidth * Double(point) / Double(count - 1)) }
        func y(_ value: Double) -> Double { Self.top + plotHeight * (1 - (top > 0 ? value / top : 0)) }

        var svg = "<svg class=\"chart\" id=\"\(id)\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(Int(Self.width)) \(Int(Self.height))\" role=\"img\" aria-label=\"\(HTMLReport.escape(title))\">\n"
        svg += "<text x=\"\(Self.left)\" y=\"18\" style=\"font-size:13px;font-weight:600\">\(HTMLReport.escape(title))</text>\n"
        // Horizontal grid and value labels.
        for step in 0...4 {
            let value = top * Double(step) / 4
            let lineY = y(value)
            svg += "<line x1=\"\(Self.left)\" x2=\"\(Self.width - Self.right)\" y1=\"\(f(lineY))\" y2=\"\(f(lineY))\" stroke=\"#e4e4e4\"/>"
            svg += "<text x=\"\(Self.left - 6)\" y=\"\(f(lineY + 4))\" text-anchor=\"end\">\(Self.label(value))</text>\n"
        }
        // Time labels along the bottom, at round times (every 20 s, 5 min, 4 h...), at most eight.
        let last = Double(max(count - 1, 0)) * intervalSeconds
        let step = [1.0, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 10_800, 14_400, 21_600, 43_200, 86_400]
            .first { last / $0 <= 8 } ?? (last / 8).rounded(.up)
        var tick = (startSeconds / step).rounded(.up) * step - startSeconds
        while tick <= last + 1e-9 {
            let tickX = count <= 1 ? x(0) : Self.left + plotWidth * tick / last
            svg += "<text x=\"\(f(tickX))\" y=\"\(f(Self.height - Self.bottom + 16))\" text-anchor=\"middle\">\(Self.clockLabel(startSeconds + tick, step: step))</text>"
            if count <= 1 { break }
            tick += step
        }
        // Marks: a dashed line where each happened, named at the top.
        for mark in marks where count > 1 && last > 0 {
            let offset = mark.seconds - startSeconds
            guard offset >= 0, offset <= last + intervalSeconds else { continue }
            let markX = Self.left + plotWidth * min(offset, last) / last
            svg += "<line class=\"mark\" x1=\"\(f(markX))\" x2=\"\(f(markX))\" y1=\"\(f(Self.top))\" y2=\"\(f(y(0)))\" stroke=\"#555\" stroke-dasharray=\"4 3\"/>"
            // In the right third the name reads leftwards from the line, so the chart's edge does not cut it.
            let leftwards = markX > Self.left + plotWidth * 2 / 3
            svg += "<text x=\"\(f(leftwards ? markX - 4 : markX + 4))\" y=\"\(f(Self.top + 10))\"\(leftwards ? " text-anchor=\"end\"" : "")>\(HTMLReport.escape(mark.name))</text>\n"
        }
        svg += "\n<line x1=\"\(Self.left)\" x2=\"\(Self.width - Self.right)\" y1=\"\(f(y(0)))\" y2=\"\(f(y(0)))\" stroke=\"#888\"/>\n"
        // Series, drawn last first when stacked so lower layers stay on top of the fill.
        for index in (stacked ? Array(layers.indices.reversed()) : Array(layers.indices)) {
            let values = layers[index]
            if stacked {
                guard count > 0 else { continue }
                var points = (0..<count).map { "\(f(x($0))),\(f(y(values[$0] ?? 0)))" }
                points.append("\(f(x(count - 1))),\(f(y(0)))")
                points.append("\(f(x(0))),\(f(y(0)))")
                svg += "<polygon class=\"series\" data-series=\"\(HTMLReport.escape(series[index].name))\" fill=\"\(series[index].colour)\" fill-opacity=\"0.85\" stroke=\"\(series[index].colour)\" points=\"\(points.joined(separator: " "))\"/>\n"
            } else {
                // A gap where a value is missing: one polyline per run of values. The first series is
                // drawn wider, underneath, so that it shows where a later one equals it.
                var runs: [[String]] = [[]]
                for point in 0..<count {
                    if let value = values[point] { runs[runs.count - 1].append("\(f(x(point))),\(f(y(value)))") } else if !runs[runs.count - 1].isEmpty { runs.append([]) }
                }
                for run in runs where !run.isEmpty {
                    let shape = run.count == 1 ? run + [run[0]] : run
                    svg += "<polyline class=\"series\" data-series=\"\(HTMLReport.escape(series[index].name))\" fill=\"none\" stroke=\"\(series[index].colour)\" stroke-width=\"\(index == 0 ? 6 : 2.5)\" stroke-linejoin=\"round\" stroke-linecap=\"round\" points=\"\(shape.joined(separator: " "))\"/>\n"
                }
            }
        }
        // Legend.
        var legendX = Self.left
        for entry in series {
            svg += "<rect x=\"\(f(legendX))\" y=\"\(f(Self.height - 16))\" width=\"10\" height=\"4\" fill=\"\(entry.colour)\"/><text x=\"\(f(legendX + 14))\" y=\"\(f(Self.height - 11))\">\(HTMLReport.escape(entry.name))</text>"
            legendX += 24 + Double(entry.name.count) * 6.5
        }
        return svg + "\n</svg>\n"
    }

    private func f(_ value: Double) -> String { String(Double(TerminalReport.whole(value * 10)) / 10) }

    /// A round number at or above `value` for the top of an axis: 1, 2, 2.5 or 5 times a power of ten.
    static func niceCeiling(_ value: Double) -> Double {
        guard value > 0 else { return 1 }
        var magnitude = 1.0
        while magnitude * 10 <= value { magnitude *= 10 }
        while magnitude > value { magnitude /= 10 }
        for factor in [1.0, 2.0, 2.5, 5.0, 10.0] where magnitude * factor >= value { return magnitude * factor }
        return magnitude * 10
    }

    static func label(_ value: Double) -> String {
        if value >= 1_000_000 { return TerminalReport.format2(value / 1_000_000) + "M" }
        if value >= 10_000 { return TerminalReport.format2(value / 1_000) + "k" }
        if value == value.rounded() { return String(Int(value)) }
        var text = TerminalReport.format2(value)
        while text.hasSuffix("0") { text.removeLast() }
        return text
    }

    /// Elapsed time as h:mm for long runs (h:mm:ss when the labels are under a minute apart),
    /// m:ss for short ones.
    static func clockLabel(_ seconds: Double, step: Double = 60) -> String {
        let whole = TerminalReport.whole(seconds)
        if whole >= 3_600 {
            return "\(whole / 3_600)h\(String(format2: (whole % 3_600) / 60))" + (step < 60 ? ":\(String(format2: whole % 60))" : "")
        }
        return "\(whole / 60):\(String(format2: whole % 60))"
    }
}

extension String {
    /// Two digits with a leading zero.
    fileprivate init(format2 value: Int) {
        self = value < 10 ? "0\(value)" : "\(value)"
    }
}
