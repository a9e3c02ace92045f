/// What happened in a run, told in a few plain sentences computed from its timeline's ticks: the
/// busiest minute and its share of 429s, the storm of 429s and retries (when it began, what set
/// it off, how many attempts each request took in it, how long the backlog took to drain) and
/// what the clients dropped. The terminal report ends with it; report.html opens with it and
/// zooms a chart on the storm.
public struct Story: Sendable, Equatable {
    /// A run of ticks with 429s or retries, no gap in it longer than the clients' longest back-off.
    public struct Storm: Sendable, Equatable {
        /// The first tick with a 429 or a retry, and the last (inclusive).
        public var firstTick: Int
        public var lastTick: Int
        /// Its first 429's tick, and its last 429's.
        public var firstRateLimitedTick: Int
        public var lastRateLimitedTick: Int
        public var sent: UInt64 = 0
        public var retries: UInt64 = 0
        public var rateLimited: UInt64 = 0
        /// Whether it ended before the run did: false when 429s or retries went on into the run's
        /// last second (the backlog was still there when the run stopped).
        public var drained = true
        /// Attempts per request over its ticks: sent over (sent − retries).
        public var attemptsPerRequest: Double { sent > retries ? Double(sent) / Double(sent - retries) : 1 }
    }

    /// The busiest minute: its first tick, its requests sent, its answers and 429s among them.
    public struct Peak: Sendable, Equatable {
        public var firstTick: Int
        public var ticks: Int
        public var sent: UInt64 = 0
        public var answered: UInt64 = 0
        public var rateLimited: UInt64 = 0
    }

    /// The 10 s with the most new HTTP connections (wall time), from the first tick with one to
    /// the last: a campaign's taps are cold starts, each a new connection and handshake at the
    /// service's edge.
    public struct ConnectionWave: Sendable, Equatable {
        public var firstTick: Int
        public var ticks: Int
        public var opened: UInt64 = 0
        /// Its busiest tick's new connections.
        public var peakTick: UInt64 = 0
    }

    public var sentences: [String] = []
    public var peak: Peak?
    public var storm: Storm?
    public var connectionWave: ConnectionWave?
    public var tickSeconds: Double

    /// How long the storm took to drain, from its first 429 to the end of its last troubled
    /// tick, in seconds; nil without a storm or when it had not drained by the run's end.
    public var drainedSeconds: Double? {
        guard let storm, storm.drained else { return nil }
        return Double(storm.lastTick + 1 - storm.firstRateLimitedTick) * tickSeconds
    }

    public init(_ summary: Summary) {
        let metrics = summary.metrics
        let ticks = metrics.timeline.ticks
        let tickSeconds = Double(metrics.timeline.tickMicroseconds) / 1_000_000
        self.tickSeconds = tickSeconds
        // The run's own ticks: what came in while it drained after its end is not a minute of it.
        // No timeline holds more than `tickLimit` (an archive may claim a longer run).
        let runTicks = max(1, min(Timeline.tickLimit, TerminalReport.whole(summary.simulatedSeconds / tickSeconds, .up)))
        // Ticks exist up to the last one with anything in it: a run's quiet end is empty ticks.
        var ownTicks = Array(ticks.prefix(runTicks))
        if ownTicks.count < runTicks { ownTicks += repeatElement(Timeline.Tick(), count: runTicks - ownTicks.count) }
        peak = Self.peak(of: ownTicks, tickSeconds: tickSeconds)
        storm = Self.storm(of: ticks, tickSeconds: tickSeconds, longestBackoffSeconds: Double(metrics.backoffDelays.maximum) / 1_000_000)
        if let last = storm?.lastTick, last >= runTicks - 1 { storm?.drained = false }
        let clock = { (tick: Int) in Self.clock(Double(tick) * tickSeconds, long: summary.simulatedSeconds >= 3_600) }
        let group = TerminalReport.group

        if let peak, peak.sent > 0, peak.firstTick == 0, peak.ticks >= runTicks {
            // A run shorter than a minute has no busiest minute: it is one.
            let seconds = Double(peak.ticks) * tickSeconds
            sentences.append("In its \(Self.span(seconds, atLeast: 0)) the run sent \(Self.count(peak.sent, "request")), \(Self.rate(Double(peak.sent) / seconds)) per second"
                + (peak.rateLimited > 0 ? "; \(Self.share(peak.rateLimited, of: peak.answered)) of the answers were 429." : "."))
        } else if let peak, peak.sent > 0 {
            let seconds = Double(peak.ticks) * tickSeconds
            let average = summary.simulatedSeconds > 0 ? Double(metrics.sent) / summary.simulatedSeconds : 0
            var sentence = "The busiest \(seconds == 60 ? "minute" : Self.span(seconds, atLeast: 0)) began at \(clock(peak.firstTick))"
            if let mark = Self.mark(before: Double(peak.firstTick + peak.ticks) * tickSeconds, within: 600, in: metrics.marks) {
                let launch = Double(mark.microseconds) / 1_000_000
                sentence += launch >= Double(peak.firstTick) * tickSeconds
                    ? ", when \(mark.name) launched (\(Self.clock(launch, long: summary.simulatedSeconds >= 3_600)))"
                    : ", \(Self.span(Double(peak.firstTick) * tickSeconds - launch, atLeast: 0)) after \(mark.name) launched"
            }
            sentence += ": \(Self.count(peak.sent, "request")), \(Self.rate(Double(peak.sent) / seconds)) per second"
            if average > 0 { sentence += " (\(Self.times(Double(peak.sent) / seconds / average)) the run's average of \(Self.rate(average)))" }
            sentence += peak.rateLimited > 0 ? "; \(Self.share(peak.rateLimited, of: peak.answered)) of its answers were 429." : "."
            sentences.append(sentence)
        }

        if let storm {
            let start = Double(storm.firstRateLimitedTick) * tickSeconds
            var sentence = "A storm of 429s began at \(clock(storm.firstRateLimitedTick))"
            if let mark = Self.mark(before: start + tickSeconds, within: 3_600, in: metrics.marks) {
                let after = start + tickSeconds - Double(mark.microseconds) / 1_000_000
                sentence += after <= tickSeconds ? ", within \(Self.span(tickSeconds, atLeast: 0)) of \(mark.name)'s launch" : ", \(Self.span(after, atLeast: 0)) after \(mark.name) launched"
            }
            sentence += ": \(Self.count(storm.rateLimited, "request")) \(storm.rateLimited == 1 ? "was" : "were") refused and \(Self.count(storm.retries, "retry", "retries")) sent"
            sentence += ", \(TerminalReport.format2(storm.attemptsPerRequest)) attempts per request while it lasted (\(TerminalReport.format2(metrics.retryAmplification)) over the whole run)."
            sentences.append(sentence)
            var recovery: String
            if let drained = drainedSeconds {
                recovery = "The backlog drained \(Self.span(drained, atLeast: tickSeconds)) after the first 429, at \(clock(storm.lastTick + 1))"
                recovery += storm.lastRateLimitedTick == storm.lastTick ? " (its last 429)" : " (last 429 at \(clock(storm.lastRateLimitedTick)), last retry at \(clock(storm.lastTick)))"
            } else {
                recovery = "The backlog had not drained when the run ended at \(clock(runTicks)): 429s or retries went on into its last second"
                if summary.pendingAtEnd > 0 { recovery += ", and \(Self.count(UInt64(summary.pendingAtEnd), "request")) \(summary.pendingAtEnd == 1 ? "was" : "were") still waiting in devices" }
            }
            if let recoveries = metrics.duration(.rateLimitRecovery), let median = recoveries.value(atQuantile: 0.5), let p99 = recoveries.value(atQuantile: 0.99) {
                recovery += "; a refused request that got through waited p50 \(Self.span(Double(median) / 1_000_000, atLeast: 0)), p99 \(Self.span(Double(p99) / 1_000_000, atLeast: 0)) from its first 429"
            }
            sentences.append(recovery + ".")
        } else if metrics.sent > 0 {
            sentences.append(metrics.retries > 0
                ? "No request was answered 429; \(Self.count(metrics.retries, "retry", "retries")) followed other failures (\(TerminalReport.format2(metrics.retryAmplification)) attempts per request)."
                : "No request was answered 429 and none was retried.")
        }

        if let (opened, closed) = metrics.connections, opened > 0, summary.simulatedSeconds > 0 {
            connectionWave = Self.connectionWave(of: ownTicks, tickSeconds: tickSeconds)
            let average = Double(opened) / summary.simulatedSeconds
            if let wave = connectionWave, wave.opened > 0 {
                let seconds = Double(wave.ticks) * tickSeconds
                var sentence = "The biggest wave of new connections: \(group(wave.opened)) in \(Self.span(seconds, atLeast: 0)) from \(clock(wave.firstTick))"
                if let mark = Self.mark(before: Double(wave.firstTick + wave.ticks) * tickSeconds, within: 3_600, in: metrics.marks) {
                    let launch = Double(mark.microseconds) / 1_000_000
                    let start = Double(wave.firstTick) * tickSeconds
                    sentence += launch >= start ? ", when \(mark.name) launched" : ", \(Self.span(start - launch, atLeast: 0)) after \(mark.name) launched"
                }
                sentence += ", up to \(Self.rate(Double(wave.peakTick) / tickSeconds)) a second (the run's average: \(Self.rate(average)))"
                let background = closed.first { $0.reason == "background" }?.count ?? 0
                let died = closed.first { $0.reason == "processDied" }?.count ?? 0
                if background + died > 0 {
                    sentence += "; over the run \(group(background + died)) closed with their app (\(group(background)) suspended in the background, \(group(died)) with the process)"
                }
                if let timedOut = metrics[.connectionsHandshakesTimedOut], timedOut > 0 {
                    let full = metrics[.connectionsHandshakesFull] ?? 0
                    sentence += "; \(group(timedOut)) \(timedOut == 1 ? "opening" : "openings") timed out waiting for the edge's handshake (\(group(full)) full handshakes done)"
                }
                if let refused = metrics[.connectionsRefused], refused > 0 {
                    sentence += "; \(group(refused)) \(refused == 1 ? "opening was" : "openings were") refused by the edge"
                }
                sentences.append(sentence + ".")
            }
        }

        let dropped = metrics.droppedByReason.filter { $0.value > 0 }
        if dropped.isEmpty {
            if metrics.sent > 0 { sentences.append("No request was dropped.") }
        } else {
            let total = dropped.values.reduce(0, +)
            let reasons = dropped.sorted { ($1.value, $0.key) < ($0.value, $1.key) }.map { "\(group($0.value)) \(Self.why($0.key))" }
            sentences.append("\(group(total)) \(total == 1 ? "request was" : "requests were") dropped by the clients: \(reasons.joined(separator: "; ")).")
        }
    }

    /// summary.json's `story`: the sentences, and the figures they are made of (times in seconds
    /// from the run's start; `storm` is null when nothing was answered 429).
    public var json: JSONValue {
        let round = { (value: Double) in JSONValue.number((value * 1_000).rounded() / 1_000) }
        var object: JSONObject = ["sentences": .array(sentences.map(JSONValue.string)), "tickSeconds": round(tickSeconds)]
        if let peak {
            let seconds = Double(peak.ticks) * tickSeconds
            object["peakMinute"] = [
                "startSeconds": round(Double(peak.firstTick) * tickSeconds), "seconds": round(seconds),
                "sent": .number(Double(peak.sent)), "perSecond": round(Double(peak.sent) / seconds),
                "answered": .number(Double(peak.answered)), "rateLimited": .number(Double(peak.rateLimited)),
            ]
        }
        if let storm {
            let start = Double(storm.firstRateLimitedTick) * tickSeconds
            object["storm"] = [
                "startSeconds": round(start), "drained": .bool(storm.drained),
                "drainedSeconds": drainedSeconds.map(round) ?? .null,
                "lastRateLimitedSeconds": round(Double(storm.lastRateLimitedTick) * tickSeconds),
                "rateLimited": .number(Double(storm.rateLimited)), "retries": .number(Double(storm.retries)),
                "sent": .number(Double(storm.sent)), "attemptsPerRequest": round(storm.attemptsPerRequest),
            ]
        } else {
            object["storm"] = .null
        }
        if let wave = connectionWave {
            object["connectionWave"] = [
                "startSeconds": round(Double(wave.firstTick) * tickSeconds), "seconds": round(Double(wave.ticks) * tickSeconds),
                "opened": .number(Double(wave.opened)), "peakPerSecond": round(Double(wave.peakTick) / tickSeconds),
            ]
        }
        return .object(object)
    }

    /// The aligned minute (or tick, when a tick is longer) with the most requests sent.
    static func peak(of ticks: [Timeline.Tick], tickSeconds: Double) -> Peak? {
        guard !ticks.isEmpty else { return nil }
        let width = max(1, TerminalReport.whole(60 / tickSeconds))
        var best: Peak?
        var start = 0
        while start < ticks.count {
            var window = Peak(firstTick: start, ticks: min(width, ticks.count - start))
            for tick in ticks[start..<min(start + width, ticks.count)] {
                window.sent += UInt64(tick.sent)
                window.answered += UInt64(tick.ok) + UInt64(tick.rateLimited) + UInt64(tick.failed)
                window.rateLimited += UInt64(tick.rateLimited)
            }
            if window.sent > (best?.sent ?? 0) { best = window }
            start += width
        }
        return best
    }

    /// The 10 s (or one tick, when a tick is longer) with the most connections opened, from its
    /// first tick with one to its last, and its busiest tick; nil when none opened.
    static func connectionWave(of ticks: [Timeline.Tick], tickSeconds: Double) -> ConnectionWave? {
        let width = min(ticks.count, max(1, TerminalReport.whole(10 / tickSeconds)))
        guard width > 0 else { return nil }
        var best: ConnectionWave?
        var sum: UInt64 = 0
        for index in ticks.indices {
            sum += UInt64(ticks[index].opened)
            if index >= width { sum -= UInt64(ticks[index - width].opened) }
            // The last of equal windows: with a steady trickle beside a burst, the one that
            // starts at the burst.
            guard index >= width - 1, sum > 0, sum >= (best?.opened ?? 0) else { continue }
            let first = index - width + 1
            best = ConnectionWave(firstTick: first, ticks: width, opened: sum, peakTick: ticks[first...index].map { UInt64($0.opened) }.max() ?? 0)
        }
        // From its first tick with a connection opened to its last.
        guard var wave = best, let first = ticks[wave.firstTick..<(wave.firstTick + wave.ticks)].firstIndex(where: { $0.opened > 0 }),
              let last = ticks[wave.firstTick..<(wave.firstTick + wave.ticks)].lastIndex(where: { $0.opened > 0 }) else { return nil }
        wave.firstTick = first
        wave.ticks = last - first + 1
        return wave
    }

    /// The storm with the most 429s: ticks with a 429 or a retry, split where none came for longer
    /// than the clients' longest back-off (at least a minute), so that one storm's retry waves stay
    /// one storm.
    static func storm(of ticks: [Timeline.Tick], tickSeconds: Double, longestBackoffSeconds: Double) -> Storm? {
        let gap = max(1, TerminalReport.whole(max(60, longestBackoffSeconds + 2) / tickSeconds, .up))
        var best: Storm?
        var current: Storm?
        func close() {
            if let storm = current, storm.rateLimited > 0, storm.rateLimited > (best?.rateLimited ?? 0) { best = storm }
            current = nil
        }
        for (index, tick) in ticks.enumerated() {
            if let storm = current, index - storm.lastTick > gap { close() }
            guard tick.rateLimited > 0 || tick.retries > 0 else { continue }
            var storm = current ?? Storm(firstTick: index, lastTick: index, firstRateLimitedTick: -1, lastRateLimitedTick: -1)
            // The ticks between troubled ones count too: new requests sent during the storm.
            if current != nil { for between in ticks[(storm.lastTick + 1)..<index] { storm.sent += UInt64(between.sent) } }
            storm.lastTick = index
            storm.sent += UInt64(tick.sent)
            storm.retries += UInt64(tick.retries)
            if tick.rateLimited > 0 {
                if storm.firstRateLimitedTick < 0 { storm.firstRateLimitedTick = index }
                storm.lastRateLimitedTick = index
                storm.rateLimited += UInt64(tick.rateLimited)
            }
            current = storm
        }
        close()
        return best
    }

    /// The latest mark at or before `seconds`, no more than `within` seconds earlier.
    static func mark(before seconds: Double, within: Double, in marks: [RunMetrics.Mark]) -> RunMetrics.Mark? {
        marks.last { Double($0.microseconds) / 1_000_000 <= seconds && seconds - Double($0.microseconds) / 1_000_000 <= within }
    }

    /// A moment of the run's timeline: h:mm:ss from its start in runs of an hour or more, m:ss
    /// in shorter ones (the story's sentences, the live dashboard's status).
    public static func clock(_ seconds: Double, long: Bool) -> String {
        let whole = TerminalReport.whole(seconds, .down)
        let two = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        return long || whole >= 3_600 ? "\(whole / 3_600):\(two(whole % 3_600 / 60)):\(two(whole % 60))" : "\(whole / 60):\(two(whole % 60))"
    }

    /// A length as people say it: "38 s", "4 min 10 s", "2 h 5 min"; never under `atLeast`.
    static func span(_ seconds: Double, atLeast: Double) -> String {
        let value = max(seconds, atLeast)
        if value < 10 {
            let tenths = TerminalReport.whole(value * 10)
            return tenths % 10 == 0 ? "\(tenths / 10) s" : "\(tenths / 10).\(tenths % 10) s"
        }
        let whole = TerminalReport.whole(value)
        if whole < 60 { return "\(whole) s" }
        if whole < 3_600 { return whole % 60 == 0 ? "\(whole / 60) min" : "\(whole / 60) min \(whole % 60) s" }
        return whole % 3_600 / 60 == 0 ? "\(whole / 3_600) h" : "\(whole / 3_600) h \(whole % 3_600 / 60) min"
    }

    /// Requests per second: whole above 100, one decimal above 10, two below.
    static func rate(_ value: Double) -> String {
        if value >= 100 { return TerminalReport.group(UInt64(TerminalReport.whole(value))) }
        if value >= 10 {
            let tenths = TerminalReport.whole(value * 10)
            return "\(tenths / 10).\(tenths % 10)"
        }
        return TerminalReport.format2(value)
    }

    /// A share in whole percent, "<1 %" for a few.
    static func share(_ part: UInt64, of whole: UInt64) -> String {
        guard whole > 0, part > 0 else { return "0 %" }
        let percent = Double(part) * 100 / Double(whole)
        return percent < 1 ? "<1 %" : "\(TerminalReport.whole(percent)) %"
    }

    /// "1 request", "2,000 requests".
    static func count(_ value: UInt64, _ one: String, _ many: String? = nil) -> String {
        "\(TerminalReport.group(value)) \(value == 1 ? one : many ?? one + "s")"
    }

    static func times(_ ratio: Double) -> String {
        ratio >= 10 ? "\(TerminalReport.whole(ratio))×" : "\(TerminalReport.format2(ratio))×"
    }

    /// A client's drop reason in words.
    static func why(_ reason: String) -> String {
        if reason.hasSuffix("RetriesExhausted"), reason.hasPrefix("http") {
            return "after their retries ran out on \(reason.dropFirst(4).prefix { $0.isNumber })s (\(reason))"
        }
        switch reason {
        case "queueFull": return "because the device's offline queue was full (queueFull)"
        case "retryBudgetExhausted": return "over the client's retry budget (retryBudgetExhausted)"
        case "networkErrorRetriesExhausted": return "after their retries ran out on network errors and timeouts (networkErrorRetriesExhausted)"
        default:
            if reason.hasPrefix("http"), let status = Int(reason.dropFirst(4)) { return "answered \(status), which the client does not retry (\(reason))" }
            return "(\(reason))"
        }
    }
}
