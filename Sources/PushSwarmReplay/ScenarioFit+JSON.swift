import PushSwarmCore
import Foundation
import PushSwarmMetrics

extension ScenarioFit {
    /// What the scenario's `fit` section says of the log it came from.
    public struct Source: Sendable {
        public var files: [String]
        public var lines: Int
        public var records: Int

        public init(files: [String], lines: Int, records: Int) {
            self.files = files
            self.lines = lines
            self.records = records
        }
    }

    /// The scenario as JSON: `name`, the log's span from its first second, one group per
    /// platform, the campaigns, the fitted limit and retry rule on each platform's mock and
    /// clients, and a `fit` section saying where each number came from.
    public func scenario(name: String, source: Source, limiter: LimiterFit?, retry: RetryFit?) -> String {
        JSONWriter.text(of: scenarioValue(name: name, source: source, limiter: limiter, retry: retry), indent: 2) + "\n"
    }

    func scenarioValue(name: String, source: Source, limiter: LimiterFit?, retry: RetryFit?) -> JSONValue {
        let platforms = Set(firstAttempts.keys.map(Self.platform(of:))).sorted()
        let life = Double(Self.lifeMicroseconds(retry?.rule)) / 1_000_000
        let total = devices
        var notes: [(String, JSONValue)] = [
            ("source", .string("\(source.files.joined(separator: ", ")): \(source.lines) lines, \(source.records) read")),
            ("span", .string("\(Self.time(start * 1_000_000)) for \(durationSeconds) s: the run starts at the log's first second and lasts as long as it")),
            ("firstAttempts", .object(JSONObject(firstAttempts.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.number(Double($0.value))) }))),
            ("retries", .number(Double(retries))),
        ]
        notes.append(("network", .string("\(addresses) client addresses; their requests are spread as over \(effectiveAddresses) equal ones (the participation ratio (Σn)²/Σn² of requests per address), so \(total) devices sit \(Self.perAddressCount(total, effectiveAddresses)) an address. Devices that sent nothing are not in a log: the count is the fewest that make its load")))
        if let versions = httpVersions {
            let said = protocols.http2 + protocols.http1
            let share = Int((Double(protocols.http2) / Double(said) * 100).rounded())
            notes.append(("http2", .string(versions == .negotiate
                ? "\(share) % of the \(said) requests whose protocol the log gives came over HTTP/2: network.http2 negotiate (the default, so not written), devices speaking it where the target's ALPN offers h2 (against a cleartext target, set priorKnowledge)"
                : "the log's \(said) requests whose protocol it gives came over HTTP/1.x: network.http2 off, so the replay speaks HTTP/1.1 even to an edge that now offers h2")))
        }
        var network = NetworkSettings()
        network.devicesPerSourceAddress = Self.perAddressCount(total, effectiveAddresses)
        if let versions = httpVersions { network.http2 = versions }
        if let noise = retry?.noise {
            // The replay's retries reach the service as late after their delays as the log's.
            network.roundTrip = noise.roundTrip
            notes.append(("network.rtt", .string("The log's retries reached the service \(Self.span(noise.medianMicroseconds)) after their delays (median; quartiles \(Self.span(noise.lowerQuartileMicroseconds)) to \(Self.span(noise.upperQuartileMicroseconds)), from \(noise.retries) requests beyond chance in the rule's windows): the network's round trip and the clients' turnaround, as a carrier network spreads them. Each exchange of the replay takes a round trip drawn from this log-normal of that median and quartiles")))
        }
        var behaviour = Behaviour()
        behaviour.newInstallShare = 0
        behaviour.unreachableShare = 0
        behaviour.tokenRotationsPerDay = 0
        behaviour.permissionChangesPerDay = 0
        behaviour.pushPermissionRate = PerOS(both: 1)
        behaviour.sessionsPerDay = .constant(0)
        // Of the network and the behaviour, what differs from what a scenario leaves out.
        var root: [(Scenario.Key, JSONValue)] = [
            (.name, .string(name)),
            (.description, .string("Fitted by pushswarm fit from \(source.files.joined(separator: ", ")) (\(source.records) requests): see the fit section for where each number came from. Edit it to try a fix, and run it with pushswarm run.")),
            (.seed, 1),
            (.duration, ScenarioEncoder.duration(.seconds(Double(durationSeconds)))),
            (.start, ScenarioEncoder.start(unixSeconds: start)),
            (.devices, .number(Double(total))),
            (.network, .object(ScenarioEncoder.differences(ScenarioEncoder.network(network), from: ScenarioEncoder.network(NetworkSettings())))),
            (.behaviour, .object(ScenarioEncoder.differences(ScenarioEncoder.behaviour(behaviour), from: ScenarioEncoder.behaviour(Behaviour())))),
        ]
        notes.append(("behaviour", "Devices have no sessions of their own (the log's load is the open workload and the campaigns' taps), all allow pushes and are reachable; a tap's session follows the platform's default app"))
        var groups: [JSONValue] = []
        for platform in platforms {
            var group: [(DeviceGroup.Key, JSONValue)] = [
                (.name, .string(platform)), (.share, .number(Double(devicesByPlatform[platform] ?? 1))), (.platform, .string(platform)),
                (.os, .string(OperatingSystem.android.rawValue)),
            ]
            if let rates = background[platform] {
                group.append((.workload, ScenarioEncoder.workload(.open(OpenWorkload(segments: Self.segments(rates), isPoisson: false)))))
                notes.append(("\(platform).workload", .string("An open workload of the first attempts of \(platform)'s operations other than its push open: per minute of the log as a rate a second (a minute with a burst, a second with ten requests or more and three times the minute's rate, second by second); within a campaign (2 s before its first tap to a minute after its last open) the rate of the minute before it (none where the log holds less than half of that minute), the taps' sessions making the rest. Its devices: the peak rate times a request's longest life under the retry rule (\(Self.number(life)) s)")))
            } else {
                notes.append(("\(platform).workload", .string("No open workload: every first attempt of \(platform) came with a campaign's taps")))
            }
            groups.append(.object(ScenarioEncoder.object(group)))
        }
        root.append((.groups, .array(groups)))
        var campaignValues: [JSONValue] = []
        var reporting: Set<String> = []
        for (index, campaign) in campaigns.enumerated() {
            let devices = Double(devicesByPlatform[campaign.platform] ?? 1)
            let name = "\(campaign.platform)-\(index + 1)"
            let at = max(0, campaign.atMicroseconds - start * 1_000_000)
            let (timeToOpen, why) = Self.distribution(campaign.tapOffsetsMicroseconds, of: "taps")
            let trace = trace(of: campaign.platform)
            let opens = "the first attempts of \(trace.open ?? "opens") from \(Self.time(campaign.atMicroseconds + (campaign.openOffsetsMicroseconds.first ?? 0))) to \(Self.time(campaign.lastOpenMicroseconds)) (opens more than \(Self.campaignGapMicroseconds / 60_000_000) min apart are campaigns of their own)"
            if campaign.deliveries > 0 {
                reporting.insert(campaign.platform)
                let (delay, delayWhy) = Self.distribution(campaign.deliveryOffsetsMicroseconds, of: "deliveries")
                let delivered = Double(max(campaign.deliveries, campaign.taps))
                campaignValues.append(ScenarioEncoder.campaign(PushSwarmCore.Campaign(
                    name: name, platform: campaign.platform, at: Self.milliseconds(at), audience: min(1, (delivered / devices * 100_000).rounded() / 100_000),
                    deliveryDelay: delay, tapRate: PerOS(both: min(1, (Double(campaign.taps) / delivered * 100_000).rounded() / 100_000)),
                    timeToOpen: PerOS(both: timeToOpen)
                )))
                let excess = campaign.deliveryExcess ?? campaign.deliveries
                let told = trace.deliveryIsShared
                    ? "\(excess) first attempts of \(trace.delivery ?? "its delivery reports") in its window (from the burst's start to a minute after its last open) beyond the rate of the minute before, less what its taps' sessions send on it there (\(excess - campaign.deliveries), simulated)"
                    : "the first attempts of \(trace.delivery ?? "its delivery reports") in its window beyond the rate of the minute before"
                notes.append(("campaigns.\(name)", .string("\(campaign.deliveries) deliveries reported: \(told); the push left as the burst of the platform's first attempts began, at \(Self.time(campaign.atMicroseconds)), and its devices displayed it as the burst's earliest first attempts (a device's first request of a campaign is its report; \(delayWhy)). \(campaign.taps) taps: \(opens); the time to open from the display is an open's time less the median delivery's\(campaign.timeToOpenScale == 1 ? "" : ", times \(Self.number(campaign.timeToOpenScale)) (the opens waited in their devices' queues behind refused requests: the scale at which the simulated run sends as many requests as the log)") (\(why)). Every delivery is a device of its own, the audience their share of the platform's devices")))
            } else {
                campaignValues.append(ScenarioEncoder.campaign(PushSwarmCore.Campaign(
                    name: name, platform: campaign.platform, at: Self.milliseconds(at), audience: min(1, (Double(campaign.taps) / devices * 100_000).rounded() / 100_000),
                    deliveryDelay: .constant(0.001), tapRate: PerOS(both: 1), timeToOpen: PerOS(both: timeToOpen)
                )))
                let none = campaign.deliveryExcess == nil ? "" : "; no delivery reports beyond what the taps send (\(trace.delivery ?? "")): its devices report none"
                notes.append(("campaigns.\(name)", .string("\(campaign.taps) taps: \(opens); its devices tapped as the burst's earliest first attempts of the platform began (\(why)); every tap is a device of its own, the audience its share of the platform's devices\(none)")))
            }
        }
        if !campaignValues.isEmpty { root.append((.campaigns, .array(campaignValues))) }
        var sections: [(String, JSONValue)] = []
        // The platforms whose clients' retries a scenario cannot set.
        var unsettable: [String] = []
        for platform in platforms {
            var behaviour = MockBehaviour()
            if let service = serviceMicroseconds { behaviour.latency = .constant(Self.milliseconds(max(1_000, service)).seconds) }
            if let limiter, limiter.isConvincing {
                behaviour.rateLimits = [RateLimitRule(algorithm: .leakyBucket(perSecond: limiter.perSecond, burst: limiter.burst, nodelay: limiter.nodelay ?? true), key: .sourceIP, status: 429)]
            }
            // What differs from a mock's defaults, and the platform's own limit set aside.
            let mock = ScenarioEncoder.differences(JSONObject(ScenarioEncoder.mockBehaviour(behaviour)), from: JSONObject(ScenarioEncoder.mockBehaviour(MockBehaviour())))
                .members + trace(of: platform).mockWithoutOwnLimit
            var section: [(String, JSONValue)] = []
            if let rule = retry?.rule {
                // The platform's own settings for the rule found (its Retry-After handling stays
                // the SDK's); none where its clients' retries are not a setting.
                let found = RetryRule(
                    initialDelay: Self.milliseconds(rule.initialDelayMicroseconds), multiplier: rule.multiplier, maximumDelay: Self.milliseconds(rule.maxDelayMicroseconds),
                    maximumRetries: rule.maxRetries, whenExhausted: .drop, jitter: rule.jitter == .full ? .full : .none
                )
                if let settings = self.platforms[platform]?.settings(retryingRefusedBy: found) {
                    section += settings
                } else {
                    unsettable.append(platform)
                }
            }
            if reporting.contains(platform) { section += trace(of: platform).reportingDeliveries }
            section.append((MockBehaviour.scenarioKey, .object(JSONObject(mock))))
            sections.append((platform, .object(JSONObject(section))))
        }
        root.append((.platforms, .object(JSONObject(sections))))
        if let service = serviceMicroseconds {
            notes.append(("mock.latency", .string("The median duration of the admitted requests, \(Self.span(max(1_000, service))) (at least 1 ms)")))
        }
        if let limiter {
            let agreement = String(format: "%.1f", limiter.agreement * 100)
            if !limiter.isConvincing {
                notes.append(("mock.rateLimits", .string("None: the 429s do not follow one per-address leaky bucket (\(limiter.refusals) refusals; the best tells \(agreement) % of \(limiter.requests) requests)")))
            } else {
                let mode = limiter.nodelay.map { $0 ? "nodelay: admitted requests the bucket would hold back were not slower" : "delaying the excess: admitted requests the bucket holds back took that long" } ?? "nodelay assumed: the log has no durations to tell"
                notes.append(("mock.rateLimits", .string("nginx limit_req, \(Self.rate(limiter.perSecond)) burst \(limiter.burst) per address (\(mode)): the leaky bucket that tells \(agreement) % of the \(limiter.requests) requests of the \(limiter.addresses) addresses refused most which were admitted and which refused")))
            }
        } else {
            notes.append(("mock.rateLimits", "None: no request was answered 429"))
        }
        if let retry {
            let rule = retry.rule
            notes.append(("retry.rateLimited", .string((rule.jitter == .none && retry.noise != nil
                ? "Retries at fixed delays through a noisy network: of the rules whose delays the log's correlogram (each 429's later requests of its address and operation, by lag) shows peaks after, this one's windows (from \(rule.window.lowerBound / 1_000) to \(rule.window.upperBound / 1_000) ms after each delay, a request taken as a retry where it is the nearest the noise's median) hold \(retry.found) requests in \(retry.requests) requests of the \(retry.addresses) addresses refused most, where their flanks (as wide, either side) hold \(retry.control) by chance; \(Self.limit(retry)); the \(lateRetries) windows that took nothing are retries that came late, counted as retries, not first attempts"
                : rule.jitter == .none
                ? "Retries at fixed delays: this rule finds \(retry.found) retries of 429s (a request of the same address and operation from \(rule.window.lowerBound / 1_000) to \(rule.window.upperBound / 1_000) ms after its delay from the 429's answer) in \(retry.requests) requests of the \(retry.addresses) addresses refused most, where the same windows 100 ms later find \(retry.control) by chance; \(Self.limit(retry)); the \(lateRetries) windows that took nothing are retries that came late, counted as retries, not first attempts"
                : "No fixed delays: the best fixed rule found \(retry.found) retries where chance finds \(retry.control); full jitter over 1 s doubling to 60 s, \(rule.maxRetries) retries, is assumed")
                + (unsettable.isEmpty ? "" : ". Not written for \(unsettable.joined(separator: ", ")): their clients retry as their SDKs do, which a scenario does not set"))))
        }
        root.append((.fit, .object(JSONObject(notes))))
        return .object(ScenarioEncoder.object(root))
    }

    /// How the retry limit was told, for the fit's note.
    static func limit(_ retry: RetryFit) -> String {
        let retries = retry.rule.maxRetries
        return retry.limitSeen
            ? "\(retries) retries: the next attempt's windows held about nothing beyond their flanks where this one's held a retry each (the clients gave up)"
            : "\(retries) retries at least: no attempt's windows showed the clients giving up (no request in the log ran out of retries, or the log ends before any did), and from attempt \(retries) on the windows, pooled, held a quarter of a retry each beyond their flanks"
    }

    /// Consecutive equal rates as one step each.
    static func segments(_ rates: [Double]) -> [OpenWorkload.Segment] {
        var segments: [OpenWorkload.Segment] = []
        var index = 0
        while index < rates.count {
            var end = index + 1
            while end < rates.count, rates[end] == rates[index] { end += 1 }
            segments.append(OpenWorkload.Segment(length: .seconds(Double(end - index)), fromRate: rates[index], toRate: rates[index]))
            index = end
        }
        return segments
    }

    /// A span of microseconds as the scenario holds it: rounded to the millisecond, as the fit's
    /// notes say it.
    static func milliseconds(_ microseconds: Int64) -> TimeSpan {
        TimeSpan(microseconds: (microseconds + 500) / 1_000 * 1_000)
    }

    /// The delay that draws the offsets best (Kolmogorov–Smirnov distance): a uniform spread
    /// from the first, or a log-normal from the quantiles of their logarithms. `of`: what they
    /// are, for the explanation.
    static func distribution(_ offsets: [Int64], of what: String) -> (Distribution, String) {
        let sorted = offsets.map { Double(max(1_000, $0)) / 1_000_000 }.sorted()
        guard sorted.count >= 2, let last = sorted.last else { return (.constant(0.001), "one of \(what)") }
        let uniformDistance = distance(sorted) { min(1, max(0, $0 / last)) }
        let logs = sorted.map { Foundation.log($0) }
        let median = exp(logs[logs.count / 2])
        let sigma = max(0.01, (logs[Int(Double(logs.count - 1) * 0.8413)] - logs[Int(Double(logs.count - 1) * 0.1587)]) / 2)
        let logNormalDistance = distance(sorted) { value in 0.5 * erfc(-(Foundation.log(value) - Foundation.log(median)) / (sigma * 2.squareRoot())) }
        if uniformDistance <= logNormalDistance {
            return (.uniform(minimum: 0, maximum: Self.milliseconds(Int64(last * 1_000_000)).seconds),
                    "uniform over \(Self.span(Int64(last * 1_000_000))), Kolmogorov–Smirnov distance \(Self.number(uniformDistance)) against a log-normal's \(Self.number(logNormalDistance))")
        }
        return (.logNormal(median: Self.milliseconds(Int64(median * 1_000_000)).seconds, sigma: (sigma * 1_000).rounded() / 1_000),
                "log-normal, median \(Self.span(Int64(median * 1_000_000))), σ \(Self.number(sigma)) from the quantiles of the \(what)' offsets, Kolmogorov–Smirnov distance \(Self.number(logNormalDistance)) against a uniform's \(Self.number(uniformDistance))")
    }

    private static func distance(_ sorted: [Double], _ cdf: (Double) -> Double) -> Double {
        var most = 0.0
        for (index, value) in sorted.enumerated() {
            let expected = cdf(value)
            most = max(most, abs(Double(index + 1) / Double(sorted.count) - expected), abs(Double(index) / Double(sorted.count) - expected))
        }
        return most
    }

    static func perAddressCount(_ devices: Int, _ addresses: Int) -> Int { max(1, (devices + max(1, addresses) - 1) / max(1, addresses)) }

    /// A span as a scenario writes it: whole seconds, else milliseconds.
    public static func span(_ microseconds: Int64) -> String {
        let milliseconds = (microseconds + 500) / 1_000
        return milliseconds % 1_000 == 0 ? "\(milliseconds / 1_000)s" : "\(milliseconds)ms"
    }

    /// A number in at most four significant digits, without a trailing ".0".
    public static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return "\(Int64(value))" }
        return String(format: "%.4g", value)
    }

    /// A rate as a scenario and nginx write it: per second, or per minute when that is whole
    /// and the rate a second is not.
    public static func rate(_ perSecond: Double) -> String {
        let perMinute = perSecond * 60
        if perSecond == perSecond.rounded() { return "\(Int(perSecond))/s" }
        if abs(perMinute - perMinute.rounded()) < 1e-9 { return "\(Int(perMinute.rounded()))/m" }
        return "\(String(format: "%.4g", perSecond))/s"
    }

    public static func time(_ microseconds: Int64) -> String {
        RFC3339.format(unixMicroseconds: microseconds, offsetSeconds: 0, utcAsZ: true)
    }
}
