/// The summary as a person reads it at the end of a run: a few labelled tables.
public enum TerminalReport {
    public static func render(_ summary: Summary, reportPath: String?) -> String {
        let metrics = summary.metrics
        var lines: [String] = []
        let simulated = formatDuration(summary.simulatedSeconds)
        lines.append("PushSwarm · \(summary.scenario) · seed \(summary.seed) · \(summary.clock) clock · \(group(UInt64(summary.devices))) devices · \(simulated) run in \(format2(summary.wallSeconds)) s wall time")
        lines.append("")

        var table: [[String]] = [["operation", "sent", "ok", "4xx", "429", "5xx", "net err", "timeout", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms"]]
        for (name, operation) in metrics.operations.sorted(by: { $0.key < $1.key }) {
            func quantile(_ q: Double) -> String {
                operation.latency.milliseconds(atQuantile: q).map(format2) ?? "-"
            }
            table.append([
                name, group(operation.sent), group(operation.answers(in: Quantity.okStatuses)), group(operation.answers(in: 400..<500, excluding: 429)),
                group(operation.byStatus[429] ?? 0), group(operation.answers(in: 500..<600)), group(operation.transportErrors),
                group(operation.timeouts), quantile(0.5), quantile(0.9), quantile(0.99), quantile(0.999),
                operation.latency.isEmpty ? "-" : format2(Double(operation.latency.maximum) / 1_000),
            ])
        }
        lines.append("Requests by operation (ok: 1xx-3xx, 101 being an opened WebSocket; latency from the intended start to the response)")
        lines += formatTable(table)
        lines.append("")
        let tls = metrics.operations.values.contains { $0.tlsHandshakeTime.totalCount > 0 }
        if summary.clock == "wall" || tls {
            // Where the time went on real sockets (or simulated time's connections and edge).
            var phases: [[String]] = [["operation", "service p50", "service p99", "first byte p50", "first byte p99", "connections", "connect p50", "connect p99"]]
            if tls { phases[0] += ["tls p50", "tls p99"] }
            for (name, operation) in metrics.operations.sorted(by: { $0.key < $1.key }) {
                func milliseconds(_ histogram: LatencyHistogram, _ q: Double) -> String {
                    histogram.milliseconds(atQuantile: q).map(format2) ?? "-"
                }
                phases.append([
                    name, milliseconds(operation.serviceTime, 0.5), milliseconds(operation.serviceTime, 0.99),
                    milliseconds(operation.timeToFirstByte, 0.5), milliseconds(operation.timeToFirstByte, 0.99),
                    group(operation.connectTime.totalCount), milliseconds(operation.connectTime, 0.5), milliseconds(operation.connectTime, 0.99),
                ] + (tls ? [milliseconds(operation.tlsHandshakeTime, 0.5), milliseconds(operation.tlsHandshakeTime, 0.99)] : []))
            }
            lines.append("On the wire, ms (service: first byte sent to response; connect: TCP, and tls: its TLS handshake, for new connections)")
            lines += formatTable(phases)
            lines.append("")
        }

        let statuses = metrics.byStatus.sorted { $0.key < $1.key }.map { "\($0.key): \(group($0.value))" }.joined(separator: ", ")
        lines.append("Requests    \(group(metrics.sent)) sent · by status \(statuses.isEmpty ? "none" : statuses) · transport errors \(group(metrics.transportErrors)) · timeouts \(group(metrics.timeouts))")
        if let warmUp = summary.warmUp {
            // Before the run, and not in any figure above.
            let statuses = warmUp.byStatus.sorted { $0.key < $1.key }.map { "\($0.key): \(group($0.value))" }.joined(separator: ", ")
            let missing = warmUp.notRegistered.sorted { $0.key < $1.key }.filter { $0.value > 0 }.map { "\($0.key) \(group($0.value))" }.joined(separator: ", ")
            let ending = warmUp.complete ? "complete" : "incomplete: \(missing.isEmpty ? "stopped early" : "not registered: " + missing), \(group(warmUp.pendingAtEnd)) requests still waiting"
            let settled = warmUp.settleSeconds > 0 ? ", then \(format2(warmUp.settleSeconds)) s for the service's limiter to drain" : ""
            lines.append("Warm-up     \(group(warmUp.installs)) installs from before the run registered first in \(format2(warmUp.seconds)) s\(settled) (\(ending)): "
                + "\(group(warmUp.sent)) requests, by status \(statuses.isEmpty ? "none" : statuses) · transport errors \(group(warmUp.transportErrors)) · timeouts \(group(warmUp.timeouts)) · not in the figures above")
        }
        if let line = Self.connectionsLine(metrics) { lines.append("Connections " + line) }
        if let http2 = HTTP2Figures(metrics) { lines.append("HTTP/2      " + http2.line) }
        lines.append("Rate limit  \(group(summary.rateLimited)) answered 429")
        let retryParts = metrics.retriesByAttempt.sorted { $0.key < $1.key }.map { "retry \($0.key): \(group($0.value))" }.joined(separator: ", ")
        var retryLine = "Retries     \(group(metrics.retries)) · \(format2(metrics.retryAmplification)) attempts per request"
        if !retryParts.isEmpty {
            retryLine += " (\(retryParts))"
            if let median = metrics.backoffDelays.value(atQuantile: 0.5) {
                retryLine += " · back-off p50 \(format2(Double(median) / 1_000_000)) s, max \(format2(Double(metrics.backoffDelays.maximum) / 1_000_000)) s"
            }
        }
        lines.append(retryLine)
        let drops = metrics.droppedByReason.sorted { $0.key < $1.key }.map { "\($0.key): \(group($0.value))" }.joined(separator: ", ")
        lines.append("Dropped     \(group(metrics.droppedByReason.values.reduce(0, +)))\(drops.isEmpty ? "" : " (\(drops))")")
        lines.append("Queued      \(group(UInt64(summary.pendingAtEnd))) requests still in device queues at the end")
        if let started = summary.startedArrivals {
            let verdict = started == summary.offeredArrivals
                ? "ok: every arrival started"
                : "NOT ALL STARTED: shed arrivals found their device's queue already full of earlier requests (the target did not keep up); missed ones were reached over a second late (PushSwarm did not)"
            lines.append("Workload    \(group(summary.offeredArrivals)) arrivals · \(group(started)) started · \(group(summary.shedArrivals)) shed · \(group(summary.missedStarts)) missed (\(verdict))")
        }
        if let milliseconds = summary.lagP99Milliseconds {
            let verdict = summary.isSaturated
                ? "SATURATED: work started late or not at all, or the CPU was pegged, so the load asked for was not the load put on; run fewer devices or a lower rate"
                : "ok"
            let cpu = summary.cpuBusy.map { " · CPU \(whole($0 * 100)) % of the cores" } ?? ""
            let loops = summary.loopWakeUps.map { " · \(group($0.wakeUps)) wake-ups, \(format2($0.eventsPerWakeUp)) events each" } ?? ""
            lines.append("Generator   lag p99 \(format2(milliseconds)) ms\(cpu)\(loops) (\(verdict))")
        }
        if summary.ledger != nil {
            let verdict = summary.lost == 0 ? "ok: every item devices saw accepted is in the ledger" : "LOST: \(summary.lost) items devices saw accepted are missing from the ledger"
            lines.append("Ledger      \(group(summary.ledgerAccepted)) accepted · \(group(summary.ledgerDuplicates)) duplicates · \(summary.lost) lost (\(verdict))")
        } else {
            lines.append("Ledger      not checked (the target is not a built-in mock)")
        }
        // The push funnel, with what never reached a device: held while offline (delivered later),
        // expired past its time to live, undeliverable to a stale token.
        let funnel: [(CounterKey, String)] = [
            (.notificationsSent, "sent"), (.notificationsHeldWhileUnreachable, "held offline"), (.notificationsExpired, "expired"),
            (.notificationsUndeliverable, "undeliverable"), (.notificationsDelivered, "delivered"), (.notificationsDisplayed, "displayed"),
            (.notificationsTapped, "tapped"), (.notificationsDismissed, "dismissed"),
        ]
        let notifications = funnel.compactMap { key, label in metrics[key].map { "\(label) \(group($0))" } }
        if !notifications.isEmpty {
            lines.append("Pushes      " + notifications.joined(separator: " · "))
        }
        let story = Story(summary).sentences
        if !story.isEmpty {
            lines.append("")
            lines.append("What happened")
            lines += story.map { "  " + $0 }
        }
        if let path = reportPath {
            lines.append("")
            lines.append("Summary written to \(path)")
        }
        return lines.joined(separator: "\n")
    }

    static func formatTable(_ rows: [[String]]) -> [String] {
        guard let header = rows.first else { return [] }
        var widths = header.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        return rows.map { row in
            row.enumerated().map { index, cell in
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                return index == 0 ? cell + padding : padding + cell
            }.joined(separator: "  ")
        }
    }

    /// 1234567 → "1,234,567".
    public static func group(_ value: UInt64) -> String {
        let digits = String(value)
        var result = ""
        for (index, character) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
            result.append(character)
        }
        return result
    }

    /// `value` rounded by `rule` to a whole number to print, held within ±2⁵³ (NaN is 0): an
    /// archive's figures can be any finite number, and a report prints them without trapping.
    static func whole(_ value: Double, _ rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero) -> Int {
        let limit = 9_007_199_254_740_992.0
        let rounded = value.rounded(rule)
        guard !rounded.isNaN else { return 0 }
        return Int(min(max(rounded, -limit), limit))
    }

    /// Two decimals for any value: one too large for them (or not finite, as an archive may
    /// hold) is written as Swift writes it.
    public static func format2(_ value: Double) -> String {
        guard abs(value) < 1e15 else { return String(value) }
        let scaled = Int64((abs(value) * 100).rounded())
        let fraction = scaled % 100
        return "\(value < 0 && scaled > 0 ? "-" : "")\(scaled / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    static func formatDuration(_ seconds: Double) -> String {
        let whole = whole(seconds)
        if whole % 3_600 == 0 && whole >= 3_600 { return "\(whole / 3_600)h" }
        if whole % 60 == 0 && whole >= 60 { return "\(whole / 60)m" }
        return "\(whole)s"
    }
}

extension TerminalReport {
    /// What the service's edge saw of the run's HTTP connections, after the word "Connections":
    /// opened (each a TCP, and TLS, handshake), how their handshakes went, openings that failed,
    /// closed by why, and open at the end and at the peak; nil when the run counted none.
    public static func connectionsLine(_ metrics: RunMetrics) -> String? {
        guard let (opened, closed) = metrics.connections else { return nil }
        let total = closed.reduce(0) { $0 + $1.count }
        let reasons = closed.map { "\($0.reason) \(group($0.count))" }.joined(separator: ", ")
        let counter = { (key: CounterKey) in metrics[key] ?? 0 }
        let (full, resumed, failed) = (counter(.connectionsHandshakesFull), counter(.connectionsHandshakesResumed), counter(.connectionsHandshakesFailed))
        var line = "\(group(opened)) opened"
        if full + resumed + failed > 0 {
            line += " (TLS handshakes: \(group(full)) full, \(group(resumed)) resumed\(failed > 0 ? ", \(group(failed)) failed" : ""))"
        }
        if case let timedOut = counter(.connectionsHandshakesTimedOut), timedOut > 0 { line += " · \(group(timedOut)) timed out opening" }
        if case let refused = counter(.connectionsRefused), refused > 0 { line += " · \(group(refused)) refused" }
        line += " · \(group(total)) closed\(reasons.isEmpty ? "" : " (\(reasons))") · \(group(opened - min(opened, total))) open at the end"
        if let peak = metrics.timeline.connectionsOpenPeak { line += " (peak \(group(peak)))" }
        return line
    }
}
