import Foundation
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmPlatforms
import PushSwarmReplay

/// `fit --out FILE` and `fit --check`: the scenario fitted to a log, written, and its simulated
/// run held against the log.
enum FitCheck {
    static func fitAndCheck(_ profile: LogProfile, limiter: LimiterFit?, reader: AccessLogReader, files: [String], arguments: Arguments) async -> PushSwarmCommand.ExitCode {
        if let first = profile.first, let last = profile.last, (last - first) / 1_000_000 > ScenarioFit.longestSpanSeconds {
            PushSwarmCommand.printError("the logs span \((last - first) / 86_400_000_000) days; fit writes a scenario of a week at most (give it the incident's files, or a week of them)")
            return .badInput
        }
        let retry = RetryFit.fit(profile)
        guard var fit = ScenarioFit.fit(profile, retry: retry, platforms: PlatformRegistry.all) else {
            PushSwarmCommand.printError("the logs hold no request of a known operation: there is nothing to fit")
            return .badInput
        }
        do {
            fit = try await takingTapsOutOfDeliveries(fit, retry: retry)
            fit = try await takingQueuesOutOfTaps(fit, limiter: limiter, retry: retry, requests: profile.requests)
            fit = try await countingTaps(fit, limiter: limiter, retry: retry, profile: profile)
        } catch {
            PushSwarmCommand.printError("the fitted taps' scenario does not validate (\(error)); please report it with the log's first lines")
            return .failure
        }
        let out = arguments.value("--out")
        let name = out.map { (($0 as NSString).lastPathComponent as NSString).deletingPathExtension }.flatMap { $0.isEmpty ? nil : $0 } ?? "fitted-incident"
        let text = fit.scenario(name: name, source: .init(files: files, lines: reader.lines, records: reader.records), limiter: limiter, retry: retry)
        print("")
        print(describe(fit, retry: retry))
        let scenario: Scenario
        do {
            scenario = try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array(text.utf8))
        } catch {
            // A fit that writes what `run` would refuse is a bug of the fit: say so, keep the text.
            PushSwarmCommand.printError("the fitted scenario does not validate (\(error)); please report it with the log's first lines")
            return .failure
        }
        if let out {
            do {
                try text.write(toFile: out, atomically: true, encoding: .utf8)
            } catch {
                PushSwarmCommand.printError("cannot write \(out): \(error.localizedDescription)")
                return .failure
            }
            print("scenario written to \(out): pushswarm run \(out)")
        }
        guard arguments.flags.contains("--check") else { return .success }
        let result = await Run.simulated(scenario).run()
        let summary = result.summary(runID: "\(name)-check", version: PushSwarmCommand.version)
        var log = LoadShape(profile, firstAttempts: fit.totalFirstAttempts)
        log.deliveries = fit.campaigns.map(\.deliveries).reduce(0, +)
        log.taps = fit.campaigns.map(\.taps).reduce(0, +)
        let simulated = shape(of: summary)
        print("")
        print(compare(log: log, simulated: simulated))
        let verdict = FitVerdict(log: log, simulated: simulated)
        print(judge(verdict, fit: fit, retry: retry, limiter: limiter, profile: profile))
        let directory = arguments.value("--report") ?? "Reports/fit-check-\(RunCommand.timestamp())"
        do {
            _ = try ReportFiles.write(summary, to: directory)
            let page = (directory as NSString).appendingPathComponent("fit-check.html")
            try chart(log: log, simulated: simulated, title: name).write(toFile: page, atomically: true, encoding: .utf8)
            print("the simulated run's report: \(directory); log against simulation, second by second: \(page)")
        } catch {
            PushSwarmCommand.printError("cannot write the report to \(directory): \(error.localizedDescription)")
            return .failure
        }
        return verdict.holds ? .success : .thresholdsFailed
    }

    /// "requests −0.2 % (±5 %)", "429 share +9.6 pts (±3)".
    static func text(_ figure: FitVerdict.Figure) -> String {
        figure.inPoints
            ? "\(figure.name) \(String(format: "%+.1f", figure.difference * 100)) pts (±\(String(format: "%.0f", figure.tolerance * 100)))"
            : "\(figure.name) \(String(format: "%+.1f", figure.difference * 100)) % (±\(String(format: "%.0f", figure.tolerance * 100)) %)"
    }

    /// Whether the simulated run reproduces the log within the fit's tolerances, and where it
    /// does not, what the fit could not see that may be why.
    static func judge(_ verdict: FitVerdict, fit: ScenarioFit, retry: RetryFit?, limiter: LimiterFit?, profile: LogProfile) -> String {
        guard !verdict.holds else {
            return "the fit reproduces the log within its tolerances: " + verdict.figures.map(text).joined(separator: ", ")
        }
        var lines = ["the fit does not reproduce the log: " + verdict.missed.map(text).joined(separator: ", ") + " (exit 99); what the fit could not see:"]
        if limiter.map({ !$0.isConvincing }) ?? (profile.rateLimited > 0) {
            lines.append("  the 429s follow no one per-address leaky bucket: the scenario has no limit, and the log's refusals are not replayed")
        }
        if let retry, retry.rule.jitter != .none {
            lines.append("  the clients' retries are at no fixed delays: full jitter is assumed (1 s doubling to 60 s), not fitted")
        } else if let retry, !retry.limitSeen {
            lines.append("  no client is seen giving up: the scenario retries \(retry.rule.maxRetries) times, and the clients may retry more (a log that goes on past the storm shows their limit)")
        }
        let excerpt = profile.excerpt
        if excerpt.opening != nil { lines.append("  the log begins within the storm: the attempts before it are not in it") }
        if excerpt.closing != nil { lines.append("  the log ends within the storm: the retries after it are not in it") }
        if fit.lateRetries > 0, fit.retries > 0, Double(fit.lateRetries) > 0.1 * Double(fit.retries) {
            lines.append("  \(TerminalReport.group(UInt64(fit.lateRetries))) of \(TerminalReport.group(UInt64(fit.retries))) retries came outside the rule's windows (late: a stalled client, or a network slower than the noise fitted)")
        }
        if lines.count == 1 { lines.append("  nothing the fit can name: the log against the simulation, second by second, is in fit-check.html") }
        return lines.joined(separator: "\n")
    }

    /// Where a platform reports deliveries on an operation its other traffic shares (SmartAppPush's
    /// `push_received` on `/events`), the campaign's excess there is its deliveries and what its
    /// taps' sessions sent: the taps are simulated alone (`ScenarioFit.tapProbe`), and what they
    /// send there, per tap, is taken out.
    static func takingTapsOutOfDeliveries(_ fit: ScenarioFit, retry: RetryFit?) async throws -> ScenarioFit {
        func sharing(_ campaign: ScenarioFit.Campaign) -> Bool { campaign.deliveryExcess != nil && fit.trace(of: campaign.platform).deliveryIsShared }
        let platforms = Set(fit.campaigns.filter(sharing).map(\.platform))
        guard !platforms.isEmpty else { return fit }
        // Of a big fit, a share of its addresses: what a tap sends is the same.
        let whole = fit.tapProbe()
        let (probe, _) = whole.sampled(addresses: probedAddresses(of: whole))
        let metrics = try await simulated(probe, limiter: nil, retry: retry)
        var perTap: [String: Double] = [:]
        for platform in platforms.sorted() {
            let count = probe.campaigns.filter { $0.platform == platform && sharing($0) }.reduce(0) { $0 + $1.taps }
            let trace = fit.trace(of: platform)
            guard let delivery = trace.delivery, let open = trace.open else { continue }
            // Per tap that happened within the window (one the probe's end cut off sent nothing):
            // each sent its open once (no limit, no retry).
            let tapped = Int(metrics.operations[open]?.sent ?? 0)
            perTap[platform] = Double(metrics.operations[delivery]?.sent ?? 0) / Double(max(1, min(count, tapped)))
        }
        return fit.settingTapRequests(perTap)
    }

    /// In a storm an open's first attempt waits in its device's queue behind the device's refused
    /// requests (its delivery report's retries, its cold start's event), so the opens spread
    /// later than the taps did, and taps placed at the opens' times put fewer requests into the
    /// storm than the devices did. Only a simulation of the queues takes that wait back out: the
    /// times to open of the campaigns whose devices reported deliveries are scaled down (by 1 to
    /// 1/20, bisected on a logarithmic scale, six simulated runs) until the fitted scenario's
    /// simulated requests meet the log's. Without a fitted limit, or where the times as the
    /// opens left already send as many, they stay.
    static func takingQueuesOutOfTaps(_ fit: ScenarioFit, limiter: LimiterFit?, retry: RetryFit?, requests: Int) async throws -> ScenarioFit {
        guard let limiter, limiter.isConvincing, fit.campaigns.contains(where: { $0.deliveries > 0 }) else { return fit }
        func miss(_ scale: Double) async throws -> Int {
            try await simulatedRequests(fit.settingTimeToOpenScale(scale), limiter: limiter, retry: retry) - requests
        }
        var high = 1.0
        var best = (scale: 1.0, miss: try await miss(1.0))
        guard best.miss < 0 else { return fit }
        var low = 0.05
        for _ in 0..<6 {
            let middle = (low * high).squareRoot()
            let missed = try await miss(middle)
            if abs(missed) < abs(best.miss) { best = (middle, missed) }
            if missed < 0 { high = middle } else { low = middle }
        }
        return fit.settingTimeToOpenScale((best.scale * 1_000).rounded() / 1_000)
    }

    /// The retries are told from first attempts by what their windows hold beyond chance, not
    /// one by one (`RetryFit`): through a noisy network, or from a loaded client whose retries
    /// came milliseconds late, the taps (the opens that were first attempts) are an estimate
    /// some per cent off, and in a storm each tap is its opens and their retries. So where the
    /// clients retried at fixed delays, the taps of the campaigns whose devices reported no
    /// delivery are scaled (by 1/2 to 2, bisected on a logarithmic scale, seven simulated runs)
    /// until the simulated run sends as many requests as the log holds.
    static func countingTaps(_ fit: ScenarioFit, limiter: LimiterFit?, retry: RetryFit?, profile: LogProfile) async throws -> ScenarioFit {
        guard retry?.rule.jitter == RetryFit.Jitter.none, let limiter, limiter.isConvincing, fit.campaigns.contains(where: { $0.deliveries == 0 }) else { return fit }
        func miss(_ scale: Double) async throws -> Int {
            try await simulatedRequests(fit.settingTapScale(scale), limiter: limiter, retry: retry) - profile.requests
        }
        var best = (scale: 1.0, miss: try await miss(1))
        var (low, high) = best.miss < 0 ? (1.0, 2.0) : (0.5, 1.0)
        for _ in 0..<7 where best.miss != 0 {
            let middle = (low * high).squareRoot()
            let missed = try await miss(middle)
            if abs(missed) < abs(best.miss) { best = (middle, missed) }
            if missed < 0 { low = middle } else { high = middle }
        }
        return fit.settingTapScale(best.scale)
    }

    /// The requests a variant of the fit sends, simulated: where it has more than
    /// `probedDevices` devices, as a probe of a share of its addresses sends them, scaled up
    /// (`ScenarioFit.sampled`).
    private static func simulatedRequests(_ fit: ScenarioFit, limiter: LimiterFit?, retry: RetryFit?) async throws -> Int {
        let (probe, share) = fit.sampled(addresses: probedAddresses(of: fit))
        return Int((Double(try await simulated(probe, limiter: limiter, retry: retry).sent) / share).rounded())
    }

    /// The addresses a probe of `fit` keeps: all of them up to `probedDevices` devices.
    private static func probedAddresses(of fit: ScenarioFit) -> Int {
        fit.devices > probedDevices ? max(probedAddresses, fit.effectiveAddresses * probedDevices / max(1, fit.devices)) : fit.effectiveAddresses
    }

    /// A fit's devices past which the refinements simulate a share of its addresses, and the
    /// fewest addresses they keep: 2,000 devices simulate in a fifth of a second, and 30
    /// addresses' storms average out what one address's draws vary.
    static let probedDevices = 2_000
    static let probedAddresses = 30

    /// A variant of the fit, run in simulated time as `run` would read it: its measurements.
    private static func simulated(_ fit: ScenarioFit, limiter: LimiterFit?, retry: RetryFit?) async throws -> RunMetrics {
        let text = fit.scenario(name: "fit-probe", source: .init(files: [], lines: 0, records: 0), limiter: limiter, retry: retry)
        let scenario = try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array(text.utf8))
        return await Run.simulated(scenario).run().summary(runID: "fit-probe", version: PushSwarmCommand.version).metrics
    }

    /// What the fit found, in a few lines.
    static func describe(_ fit: ScenarioFit, retry: RetryFit?) -> String {
        var lines: [String] = []
        lines.append("fit: \(fit.totalFirstAttempts) first attempts and \(fit.retries) retries; \(fit.devices) devices behind \(fit.effectiveAddresses) addresses (of \(fit.addresses) in the log)")
        if let rule = retry?.rule {
            if rule.jitter == .none {
                let delays = "retry rule: \(ScenarioFit.span(rule.initialDelayMicroseconds)) × \(ScenarioFit.number(rule.multiplier)) up to \(ScenarioFit.span(rule.maxDelayMicroseconds)), \(rule.maxRetries) retries, jitter none"
                if let noise = retry?.noise {
                    lines.append("\(delays) (its windows hold \(retry?.found ?? 0) requests where their flanks hold \(retry?.control ?? 0) by chance)")
                    lines.append("network noise: retries reached the service \(ScenarioFit.span(noise.medianMicroseconds)) after their delays (median; quartiles \(ScenarioFit.span(noise.lowerQuartileMicroseconds)) to \(ScenarioFit.span(noise.upperQuartileMicroseconds))): the network's round trip and the clients' turnaround, replayed as network.rtt \(JSONWriter.text(of: ScenarioEncoder.durationDistribution(noise.roundTrip)))")
                } else {
                    lines.append("\(delays) (it finds \(retry?.found ?? 0) retries where chance finds \(retry?.control ?? 0))")
                }
                if retry?.limitSeen == false {
                    lines.append("retry limit: \(rule.maxRetries) at least: the log shows no client giving up (none ran out of retries, or the log ends before any did); the scenario retries \(rule.maxRetries) times")
                }
            } else {
                lines.append("retry rule: no fixed delays (the best finds \(retry?.found ?? 0) retries where chance finds \(retry?.control ?? 0)); full jitter assumed")
            }
        }
        for campaign in fit.campaigns {
            let deliveries = campaign.deliveries > 0 ? "\(campaign.deliveries) deliveries reported, " : ""
            lines.append("campaign on \(campaign.platform) at \(ScenarioFit.time(campaign.atMicroseconds)): \(deliveries)\(campaign.taps) taps")
        }
        for (platform, rates) in fit.background.sorted(by: { $0.key < $1.key }) {
            lines.append("open workload on \(platform): \(ScenarioFit.number(rates.reduce(0, +).rounded())) first attempts, at most \(ScenarioFit.number(rates.max() ?? 0))/s")
        }
        return lines.joined(separator: "\n")
    }

    /// A run's shape: its ticks (a second each up to two days) from its start.
    static func shape(of summary: Summary) -> LoadShape {
        let metrics = summary.metrics
        let ticks = metrics.timeline.ticks
        let seconds = max(1, Int(summary.simulatedSeconds.rounded(.up)))
        var sent = [Int](repeating: 0, count: seconds)
        var refused = [Int](repeating: 0, count: seconds)
        let tickSeconds = max(1, Int(metrics.timeline.tickMicroseconds / 1_000_000))
        for (index, tick) in ticks.enumerated() where index * tickSeconds < seconds {
            sent[index * tickSeconds] += Int(tick.sent)
            refused[index * tickSeconds] += Int(tick.rateLimited)
        }
        let retries = Int(metrics.retries)
        var shape = LoadShape(byOperation: metrics.operations.mapValues { Int($0.sent) }, firstAttempts: Int(metrics.sent) - retries, perSecond: sent, rateLimitedPerSecond: refused)
        // A fitted scenario's devices have no pushes but its campaigns': every display reports a
        // delivery where the log showed them.
        shape.deliveries = Int(metrics[.notificationsDisplayed] ?? 0)
        shape.taps = Int(metrics[.notificationsTapped] ?? 0)
        return shape
    }

    /// The log and the simulation side by side.
    static func compare(log: LoadShape, simulated: LoadShape) -> String {
        var rows: [(String, String, String, String)] = []
        func row(_ what: String, _ a: Int, _ b: Int) {
            let difference = a > 0 ? String(format: "%+.1f %%", (Double(b) - Double(a)) / Double(a) * 100) : ""
            rows.append((what, TerminalReport.group(UInt64(a)), TerminalReport.group(UInt64(b)), difference))
        }
        row("requests", log.requests, simulated.requests)
        for operation in Set(log.byOperation.keys).union(simulated.byOperation.keys).sorted() {
            row("  \(operation)", log.byOperation[operation] ?? 0, simulated.byOperation[operation] ?? 0)
        }
        if log.taps > 0 || simulated.taps > 0 {
            row("campaign deliveries", log.deliveries, log.deliveries > 0 ? simulated.deliveries : 0)
            row("campaign taps", log.taps, simulated.taps)
        }
        row("429s", log.rateLimited, simulated.rateLimited)
        rows.append(("429 share", String(format: "%.1f %%", log.rateLimitedShare * 100), String(format: "%.1f %%", simulated.rateLimitedShare * 100),
                     String(format: "%+.1f pts", (simulated.rateLimitedShare - log.rateLimitedShare) * 100)))
        row("peak second", log.peakSecond.requests, simulated.peakSecond.requests)
        rows.append(("  at", "\(log.peakSecond.second) s", "\(simulated.peakSecond.second) s", ""))
        row("peak minute", log.peakMinute.requests, simulated.peakMinute.requests)
        if let a = log.storm, let b = simulated.storm {
            rows.append(("storm starts", "\(a.start) s", "\(b.start) s", ""))
            row("drain time (s)", a.drainSeconds, b.drainSeconds)
        } else {
            rows.append(("storm", log.storm == nil ? "none" : "\(log.storm?.drainSeconds ?? 0) s", simulated.storm == nil ? "none" : "\(simulated.storm?.drainSeconds ?? 0) s", ""))
        }
        rows.append(("attempts per request", String(format: "%.2f", log.attemptsPerRequest), String(format: "%.2f", simulated.attemptsPerRequest), ""))
        let width = max(24, (rows.map(\.0.count).max() ?? 0) + 2)
        var lines = ["".padding(toLength: width, withPad: " ", startingAt: 0) + "log".leftAligned(14) + "simulated".leftAligned(14) + "difference"]
        for (what, a, b, difference) in rows {
            lines.append(what.padding(toLength: width, withPad: " ", startingAt: 0) + a.leftAligned(14) + b.leftAligned(14) + difference)
        }
        return lines.joined(separator: "\n")
    }

    /// A page with the log's and the simulation's requests and 429s per second.
    static func chart(log: LoadShape, simulated: LoadShape, title: String) -> String {
        let seconds = max(log.perSecond.count, simulated.perSecond.count, 1)
        let top = max(1, (log.perSecond + simulated.perSecond).max() ?? 1)
        let width = 960.0
        let height = 320.0
        func line(_ values: [Int], _ colour: String, _ dash: String) -> String {
            let points = values.enumerated().map { index, value in
                String(format: "%.1f,%.1f", Double(index) / Double(max(1, seconds - 1)) * width, height - Double(value) / Double(top) * height)
            }.joined(separator: " ")
            return "<polyline fill=\"none\" stroke=\"\(colour)\" stroke-width=\"1.5\" stroke-dasharray=\"\(dash)\" points=\"\(points)\"/>"
        }
        let escaped = title.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        return """
            <!doctype html><html><head><meta charset="utf-8"><title>\(escaped): log against simulation</title>
            <style>body{font:14px system-ui,sans-serif;margin:2em}svg{border:1px solid #ccc;background:#fff}.k span{display:inline-block;margin-right:1.5em}</style></head><body>
            <h1>\(escaped): log against simulation</h1>
            <p>Requests and 429s per second from the log's first second (\(seconds) s; the highest second \(top) requests).</p>
            <p class="k"><span style="color:#1f6fb2">━ log requests</span><span style="color:#1f6fb2">┅ simulated requests</span><span style="color:#c0392b">━ log 429s</span><span style="color:#c0392b">┅ simulated 429s</span></p>
            <svg viewBox="0 0 \(Int(width)) \(Int(height))" width="\(Int(width))" height="\(Int(height))" role="img" aria-label="requests and 429s per second, log and simulation">
            \(line(log.perSecond, "#1f6fb2", "none"))
            \(line(simulated.perSecond, "#1f6fb2", "4 3"))
            \(line(log.rateLimitedPerSecond, "#c0392b", "none"))
            \(line(simulated.rateLimitedPerSecond, "#c0392b", "4 3"))
            </svg></body></html>

            """
    }
}

extension String {
    fileprivate func leftAligned(_ width: Int) -> String { count >= width ? self + " " : self + String(repeating: " ", count: width - count) }
}
