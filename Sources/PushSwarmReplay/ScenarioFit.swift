public import PushSwarmCore
import PushSwarmMetrics

/// A scenario fitted to an access log: the network (addresses and devices behind them), the
/// per-address limit, the clients' retry rule, the campaigns (the deliveries their devices
/// reported and the taps that made the bursts of opens), and the rest of the load as an open
/// workload. Written as JSON a person can read and edit, every fitted number explained in its
/// `fit` section.
///
/// The model: a campaign's pushes are displayed on its audience's devices, which report each
/// delivery as their platform's SDK does (`CampaignTrace.delivery`), and its taps are cold starts:
/// a cold start sends what the platform's app sends when it opens from a push (its open, its
/// session's events), from the tapping device, in the device's own order, retried by the
/// device's own rule. So a burst is fitted as its cause, not as its arrivals: a tap's requests
/// queued behind a refused one, or a storm of retries, come out of the simulation as they came
/// out of the devices.
public struct ScenarioFit: Sendable {
    /// The longest log fitted: a week, a second at a time.
    public static let longestSpanSeconds: Int64 = 7 * 86_400
    /// Opens further apart than this belong to different campaigns.
    public static let campaignGapMicroseconds: Int64 = 300_000_000
    /// How far before a campaign's first open its deliveries are looked for.
    public static let deliveryLookBackMicroseconds: Int64 = 300_000_000

    public struct Campaign: Sendable, Equatable {
        public var platform: String
        /// When its burst began, Unix microseconds: the first tap, or where its devices reported
        /// deliveries, the first delivery (the push left then).
        public var atMicroseconds: Int64
        /// Taps: the campaign's first attempts of its platform's open.
        public var taps: Int
        /// Deliveries its devices reported (0: none told apart in the log).
        public var deliveries = 0
        /// The delivery operation's first attempts in the campaign's window beyond the rate of
        /// the minute before it: the deliveries, and what the taps' sessions sent on it when it
        /// is shared (`CampaignTrace.deliveryIsShared`); nil without a delivery operation.
        public var deliveryExcess: Int?
        /// The platform's first attempts in its burst beyond the rate before it, from `at`, in
        /// order (the earliest first: each device's first request of the campaign).
        public var burstOffsetsMicroseconds: [Int64]
        /// Its opens' first attempts, from `at`.
        public var openOffsetsMicroseconds: [Int64]
        /// The last first attempt of an open, Unix microseconds.
        public var lastOpenMicroseconds: Int64

        /// When its devices displayed the push, from `at`: the burst's earliest first attempts,
        /// as many as deliveries.
        public var deliveryOffsetsMicroseconds: [Int64] { Array(burstOffsetsMicroseconds.prefix(deliveries)) }

        /// When its devices tapped: with deliveries, from the display (an open's offset less the
        /// median delivery's: the delays add); without, the burst's earliest first attempts as
        /// many as taps (a cold start's first request leaves as its device taps).
        public var tapOffsetsMicroseconds: [Int64] {
            guard deliveries > 0 else { return Array(burstOffsetsMicroseconds.prefix(tapsFromTheLog ?? taps)) }
            let delivered = deliveryOffsetsMicroseconds
            let median = delivered.isEmpty ? 0 : delivered[delivered.count / 2]
            return openOffsetsMicroseconds.map { Int64((Double(max(0, $0 - median)) * timeToOpenScale).rounded()) }
        }

        /// The taps the log's labelling found, where a simulation set `taps` (`settingTapScale`):
        /// their times stay the shape of the taps' times.
        public var tapsFromTheLog: Int?

        /// What the taps' times from the display are scaled by (`settingTimeToOpenScale`): an
        /// open's first attempt waited in its device's queue behind its refused requests.
        public var timeToOpenScale = 1.0

        /// The end of the window the campaign's load is counted in: a minute after its last open,
        /// or the log's end before it.
        public var windowEndMicroseconds: Int64
    }

    public var start: Int64
    public var durationSeconds: Int
    /// Requests of each operation that were first attempts (not retries).
    public var firstAttempts: [String: Int] = [:]
    public var retries = 0
    /// Of the retries, those that came outside their windows (late): counted from the windows
    /// that took nothing, not labelled one by one.
    public var lateRetries = 0
    public var totalFirstAttempts: Int { firstAttempts.values.reduce(0, +) }
    public var campaigns: [Campaign] = []
    /// Per platform, the open workload: first attempts per minute of the log (per second,
    /// from `start`, as the steps' rates), outside the campaigns; nil when there are none.
    public var background: [String: [Double]] = [:]
    public var addresses = 0
    public var effectiveAddresses = 0
    public var devices = 0
    public var devicesByPlatform: [String: Int] = [:]
    /// The median time the service took to admit a request, microseconds.
    public var serviceMicroseconds: Int64?
    /// A request's longest life under the retry rule, seconds.
    public var requestLifeSeconds = 1.0
    /// The platforms a log's operations may be of, by name: what their campaigns leave in a log
    /// and how their clients' retries are set.
    public var platforms: [String: any Platform] = [:]
    /// Requests the log says came over HTTP/2 and over HTTP/1.x.
    public var protocols = (http2: 0, http1: 0)

    /// Which HTTP the fitted scenario's devices speak: what most of the log's requests came over
    /// (HTTP/2 is what ALPN agrees with an edge that offers it, the default; HTTP/1.1 only, when
    /// the log has no HTTP/2, so that a replay against an edge that now offers it is still the
    /// incident's); nil when the log does not say.
    public var httpVersions: HTTPVersionPolicy? {
        guard protocols.http2 + protocols.http1 > 0 else { return nil }
        return protocols.http2 >= protocols.http1 ? .negotiate : .off
    }

    /// What `platform`'s campaigns leave in a log (nothing known: an empty trace).
    public func trace(of platform: String) -> CampaignTrace { platforms[platform]?.campaignTrace ?? CampaignTrace() }

    /// Fits the parts of a scenario to a profile whose requests are in time order.
    /// `platforms`: those its operations may be of (`PlatformRegistry.all`). A shared delivery
    /// operation's deliveries are first taken as its whole excess: `settingTapRequests` takes the
    /// taps' share out of it.
    public static func fit(_ profile: LogProfile, retry: RetryFit?, platforms: [any Platform]) -> ScenarioFit? {
        guard let first = profile.first, let last = profile.last else { return nil }
        let start = LogProfile.second(first)
        var fit = ScenarioFit(start: start, durationSeconds: max(1, Int(LogProfile.second(last) - start) + 1))
        fit.platforms = Dictionary(uniqueKeysWithValues: platforms.map { ($0.name, $0) })
        fit.protocols = (profile.http2Requests, profile.http1Requests)
        let rule = retry?.rule
        // First attempts by platform and operation, in time order.
        var firsts: [String: [(microseconds: Int64, operation: UInt16)]] = [:]
        // Room for each platform's requests at once: grown by doubling, the arrays of a log of
        // 10⁷ lines held twice what they needed.
        var sizes: [String: Int] = [:]
        for (name, operation) in profile.operations { sizes[Self.platform(of: name), default: 0] += operation.requests }
        for (platform, size) in sizes { firsts[platform, default: []].reserveCapacity(size) }
        var durations: [Int64] = []
        // Per operation, where the windows that took no retry ended: as many retries came
        // outside them and were labelled first attempts.
        var late: [UInt16: [Int64]] = [:]
        let logEnd = last
        for requests in profile.byAddress.values {
            var labelling = RetryFit.Labelling()
            let attempts = rule.map { RetryFit.attempts(of: requests, rule: $0, logEnd: logEnd, labelling: &labelling) } ?? [UInt8](repeating: 0, count: requests.count)
            for (operation, ends) in labelling.unmatched { late[operation, default: []] += ends }
            for (index, request) in requests.enumerated() {
                if (200..<300).contains(request.status), let duration = request.durationMicroseconds, durations.count < 100_000 { durations.append(duration) }
                guard attempts[index] == 0 else {
                    fit.retries += 1
                    continue
                }
                let name = profile.operationNames[Int(request.operation)]
                fit.firstAttempts[name, default: 0] += 1
                firsts[Self.platform(of: name), default: []].append((request.microseconds, request.operation))
            }
        }
        for (operation, ends) in late {
            let name = profile.operationNames[Int(operation)]
            let taken = min(ends.count, fit.firstAttempts[name] ?? 0)
            fit.firstAttempts[name, default: 0] -= taken
            fit.retries += taken
            fit.lateRetries += taken
        }
        if !durations.isEmpty {
            durations.sort()
            fit.serviceMicroseconds = durations[durations.count / 2]
        }
        for platform in firsts.keys.sorted() {
            var requests = firsts[platform] ?? []
            requests.sort { $0.microseconds < $1.microseconds }
            let trace = fit.trace(of: platform)
            let index = { (name: String?) in name.flatMap { profile.operationNames.firstIndex(of: $0) }.map(UInt16.init) }
            let openIndex = index(trace.open)
            let found = Self.campaigns(platform: platform, requests: requests, open: openIndex, delivery: index(trace.delivery), late: openIndex.flatMap { late[$0] } ?? [],
                                       lateDeliveries: index(trace.delivery).flatMap { late[$0] } ?? [], logStart: first, logEnd: last)
            fit.campaigns += found
            let steps = Self.background(requests: requests, open: openIndex, campaigns: found, start: start, seconds: fit.durationSeconds)
            if steps.contains(where: { $0 > 0 }) { fit.background[platform] = steps }
        }
        // The network: devices spread evenly over addresses as many as the log's carry its load
        // (the participation ratio of requests per address: n for n equal addresses, near the
        // heavy ones' count when a few NATs carry most).
        let counts = profile.perAddressCounts.map(Double.init)
        fit.addresses = counts.count
        let sum = counts.reduce(0, +)
        let squares = counts.reduce(0) { $0 + $1 * $1 }
        fit.effectiveAddresses = squares > 0 ? max(1, Int((sum * sum / squares).rounded())) : 1
        fit.requestLifeSeconds = Double(Self.lifeMicroseconds(rule)) / 1_000_000
        fit.sizeDevices()
        return fit
    }

    /// What platform an operation name belongs to: the part before its dot.
    static func platform(of operation: String) -> String {
        operation.split(separator: ".", maxSplits: 1).first.map(String.init) ?? operation
    }

    /// The longest a request lives under the rule: every retry's delay, and a second.
    static func lifeMicroseconds(_ rule: RetryFit.Rule?) -> Int64 {
        guard let rule else { return 1_000_000 }
        return (1...max(1, rule.maxRetries)).reduce(1_000_000) { $0 + rule.delay(attempt: $1) }
    }

    /// The campaigns of one platform: its first attempts of opens, split where they are
    /// `campaignGapMicroseconds` apart, less the retries of opens that came outside their
    /// windows (`late`: where those windows ended; each is one of the opens labelled first
    /// attempts; `lateDeliveries` the same for the delivery operation), as many as fell within
    /// the campaign. Each campaign's burst starts where the
    /// platform's first attempts rise above their rate before it: at the first open's second
    /// less 2 s, or where the platform reports deliveries, where the rise that ends at the first
    /// open began (`burstStart`), up to 5 minutes before it.
    /// The rate without the burst is the minute before it, or after its window where the log
    /// begins too soon before it (`beside`): the rate the open workload keeps through the
    /// campaign (`background`).
    static func campaigns(platform: String, requests: [(microseconds: Int64, operation: UInt16)], open: UInt16?, delivery: UInt16?, late: [Int64], lateDeliveries: [Int64], logStart: Int64, logEnd: Int64) -> [Campaign] {
        guard let open else { return [] }
        let opens = requests.filter { $0.operation == open }.map(\.microseconds)
        var groups: [[Int64]] = []
        for instant in opens {
            if let previous = groups.last?.last, instant - previous <= campaignGapMicroseconds {
                groups[groups.count - 1].append(instant)
            } else {
                groups.append([instant])
            }
        }
        var previousEnd = Int64.min
        return groups.map { group in
            let lateRetries = late.filter { $0 >= group[0] && $0 <= group[group.count - 1] }.count
            let taps = max(1, group.count - lateRetries)
            let onset = delivery == nil
                ? group[0] - 2_000_000
                : burstStart(requests, before: group[0], notBefore: max(previousEnd, logStart))
            let windowEnd = min(logEnd, group[group.count - 1] + 60_000_000)
            previousEnd = windowEnd
            // The platform's first attempts beside the burst: the rate the load had without it.
            let beside = Self.beside(onset: onset, windowEnd: windowEnd, logStart: logStart, logEnd: logEnd)
            let load = requests.filter { request in beside.contains { $0.contains(request.microseconds) } }
            let span = Double(beside.reduce(0) { $0 + $1.upperBound - $1.lowerBound })
            let backgroundPerMicrosecond = span > 0 ? Double(load.count) / span : 0
            // From the onset, the first attempts in order beyond that rate: a device's first
            // request of the campaign leaves as its push is displayed, or as it taps.
            var burst: [Int64] = []
            var taken = 0
            var firstTap: Int64?
            for request in requests where request.microseconds >= onset && request.microseconds <= windowEnd {
                taken += 1
                let expected = backgroundPerMicrosecond * Double(request.microseconds - onset)
                if Double(taken) - expected < 1 { continue }
                let at = firstTap ?? request.microseconds
                firstTap = at
                burst.append(request.microseconds - at)
                if delivery == nil && burst.count >= taps { break }
            }
            let at = firstTap ?? group[0]
            var campaign = Campaign(platform: platform, atMicroseconds: at, taps: taps, burstOffsetsMicroseconds: burst,
                                    openOffsetsMicroseconds: group.map { $0 - at }, lastOpenMicroseconds: group[group.count - 1], windowEndMicroseconds: windowEnd)
            if let delivery {
                // The delivery operation's first attempts in the window, less its rate before it.
                let rate = span > 0 ? Double(load.filter { $0.operation == delivery }.count) / span : 0
                // Less the retries that came late (labelled first attempts, counted out by the
                // windows that took nothing: `lateDeliveries`, where those ended).
                let lateInWindow = lateDeliveries.filter { $0 >= onset && $0 <= windowEnd }.count
                let inWindow = requests.filter { $0.operation == delivery && $0.microseconds >= onset && $0.microseconds <= windowEnd }.count - lateInWindow
                let excess = max(0, Int((Double(inWindow) - rate * Double(windowEnd - onset)).rounded()))
                campaign.deliveryExcess = excess
                campaign.deliveries = min(excess, burst.count)
            }
            return campaign
        }
    }

    /// Where a campaign's load without it is counted: the minute before its burst, where the log
    /// holds 5 s of it at least (a log cut shortly before the storm still shows the load before
    /// it); else the minute after its window, where the log goes on 5 s at least; else nowhere
    /// (a log that begins with the burst and ends in it says nothing of the load without it).
    static func beside(onset: Int64, windowEnd: Int64, logStart: Int64, logEnd: Int64) -> [Range<Int64>] {
        let before = max(logStart, onset - 60_000_000)..<max(logStart, onset)
        if before.count >= 5_000_000 { return [before] }
        let after = min(logEnd, windowEnd + 1)..<min(logEnd, windowEnd + 60_000_000)
        return after.count >= 5_000_000 ? [after] : []
    }

    /// Where the rise of a platform's first attempts that ends at `end` began: the second from
    /// which the count a second stays furthest above the median second of the span looked in
    /// (the start of the largest cumulative excess, a change point), from `notBefore`; then,
    /// within that second and the next, the first request from which the next 100 ms hold a
    /// quarter of the burst's busiest second's rate (a request of the load before the burst, in
    /// the same second, is not its start).
    static func burstStart(_ requests: [(microseconds: Int64, operation: UInt16)], before end: Int64, notBefore: Int64) -> Int64 {
        let from = max(notBefore, end - deliveryLookBackMicroseconds)
        let seconds = Int((end - from) / 1_000_000) + 1
        guard seconds > 1 else { return from }
        let times = requests.lazy.map(\.microseconds).filter { $0 >= from && $0 < end }
        var counts = [Int](repeating: 0, count: seconds)
        for time in times { counts[Int((time - from) / 1_000_000)] += 1 }
        let typical = Double(counts.sorted()[seconds / 2])
        // A second counts as raised past half again the typical one, and two requests more.
        let threshold = typical * 0.5 + 2
        var best = (sum: 0.0, start: seconds - 1)
        var sum = 0.0
        for second in stride(from: seconds - 1, through: 0, by: -1) {
            sum += Double(counts[second]) - typical - threshold
            if sum > best.sum { best = (sum, second) }
        }
        let bin = from + Int64(best.start) * 1_000_000
        let busiest = counts[best.start..<min(seconds, best.start + 5)].max() ?? 0
        let near = Array(times.filter { $0 >= bin && $0 < bin + 3_000_000 })
        var last = 0
        for (index, time) in near.enumerated() where time < bin + 2_000_000 {
            while last < near.count, near[last] < time + 100_000 { last += 1 }
            if Double(last - index) >= max(1, max(typical + threshold, Double(busiest) / 4) / 10) { return time }
        }
        return bin
    }

    /// The fit with the taps' own requests on each shared delivery operation taken out of its
    /// excess: `perTap` by platform, what a tap's session sent on it within its campaign's window
    /// (simulated: `tapProbe`). The deliveries are what is left, where it is a quarter of the
    /// excess or more (ten at least) and nine tenths of the taps or more (every tapped push was
    /// displayed, and reported): less is within what the taps' sessions and the load beside them
    /// vary by.
    public func settingTapRequests(_ perTap: [String: Double]) -> ScenarioFit {
        var fit = self
        for index in fit.campaigns.indices {
            let campaign = fit.campaigns[index]
            guard let excess = campaign.deliveryExcess, let share = perTap[campaign.platform] else { continue }
            let left = Double(excess) - share * Double(campaign.taps)
            let told = left >= max(10, Double(excess) / 4, 0.9 * Double(campaign.taps))
            fit.campaigns[index].deliveries = told ? min(campaign.burstOffsetsMicroseconds.count, max(campaign.taps, Int(left.rounded()))) : 0
        }
        fit.sizeDevices()
        return fit
    }

    /// The scenario `settingTapRequests` needs simulated: the fit's taps alone, each where its
    /// open's first attempt was in the log, no delivery reported (no campaign has deliveries, so
    /// none writes the setting that reports them), no open workload, to the end of the last
    /// campaign's window. What it sends on a shared delivery operation, per tap, is the taps'
    /// share of that operation's excess.
    public func tapProbe() -> ScenarioFit {
        var probe = self
        probe.background = [:]
        for index in probe.campaigns.indices {
            probe.campaigns[index].deliveries = 0
            probe.campaigns[index].burstOffsetsMicroseconds = probe.campaigns[index].openOffsetsMicroseconds.map { max(0, $0) }.sorted()
        }
        probe.sizeDevices()
        if let end = campaigns.map(\.windowEndMicroseconds).max() {
            probe.durationSeconds = max(1, min(durationSeconds, Int((end - start * 1_000_000) / 1_000_000) + 1))
        }
        return probe
    }

    /// The fit with the taps of each campaign whose devices reported no delivery scaled by
    /// `scale` (`FitCheck.countingTaps`), their times' shape kept.
    public func settingTapScale(_ scale: Double) -> ScenarioFit {
        var fit = self
        for index in fit.campaigns.indices where fit.campaigns[index].deliveries == 0 {
            let fitted = fit.campaigns[index].tapsFromTheLog ?? fit.campaigns[index].taps
            fit.campaigns[index].tapsFromTheLog = fitted
            fit.campaigns[index].taps = max(1, Int((Double(fitted) * scale).rounded()))
        }
        fit.sizeDevices()
        return fit
    }

    /// The fit cut down to `kept` of its addresses, each with the load it had (its devices, its
    /// share of each campaign's taps and deliveries and of the open workload), and what share of
    /// the whole that is: a per-address limit makes addresses independent, so a probe of a few
    /// of them sends that share of what the whole would (`FitCheck`'s refinements, which simulate
    /// a fit up to eight times, of a million-line log's 130,000 devices before).
    public func sampled(addresses kept: Int) -> (fit: ScenarioFit, share: Double) {
        guard kept < effectiveAddresses, effectiveAddresses > 0 else { return (self, 1) }
        let share = Double(max(1, kept)) / Double(effectiveAddresses)
        var probe = self
        func scaled(_ count: Int) -> Int { count == 0 ? 0 : max(1, Int((Double(count) * share).rounded())) }
        for index in probe.campaigns.indices {
            probe.campaigns[index].taps = scaled(probe.campaigns[index].taps)
            probe.campaigns[index].deliveries = scaled(probe.campaigns[index].deliveries)
        }
        probe.background = probe.background.mapValues { $0.map { $0 * share } }
        probe.effectiveAddresses = max(1, kept)
        probe.addresses = max(1, kept)
        probe.sizeDevices()
        return (probe, share)
    }

    /// The fit with each reporting campaign's times to open scaled by `scale`.
    public func settingTimeToOpenScale(_ scale: Double) -> ScenarioFit {
        var fit = self
        for index in fit.campaigns.indices where fit.campaigns[index].deliveries > 0 { fit.campaigns[index].timeToOpenScale = scale }
        return fit
    }

    /// Devices, per platform: every delivery and every tap of its largest campaign is a device
    /// of its own, and its open workload finds a free device at its peak while earlier ones
    /// still retry (the peak rate times a request's longest life under the retry rule).
    mutating func sizeDevices() {
        for platform in firstAttempts.keys.map(Self.platform(of:)) {
            let most = campaigns.filter { $0.platform == platform }.map { max($0.taps, $0.deliveries) }.max() ?? 0
            let peak = background[platform]?.max() ?? 0
            devicesByPlatform[platform] = max(1, most, Int((peak * requestLifeSeconds).rounded(.up)))
        }
        devices = min(10_000_000, max(devicesByPlatform.values.reduce(0, +), effectiveAddresses))
    }

    /// The open workload of one platform: its first attempts other than opens, per minute as a
    /// rate a second (per second in a minute with a burst), one entry a second of the run; within a campaign (2 s before its first tap
    /// to a minute after its last open) the rate of the minute before it (of its last 5 s at
    /// least; else of the minute after it), as the taps' sessions make the rest.
    static func background(requests: [(microseconds: Int64, operation: UInt16)], open: UInt16?, campaigns: [Campaign], start: Int64, seconds: Int) -> [Double] {
        var perSecond = [Int](repeating: 0, count: seconds)
        for request in requests where request.operation != open {
            let second = Int(LogProfile.second(request.microseconds) - start)
            if second >= 0, second < seconds { perSecond[second] += 1 }
        }
        let windows = campaigns.map { campaign in
            (Int(LogProfile.second(campaign.atMicroseconds) - start) - 2)...(Int(LogProfile.second(campaign.lastOpenMicroseconds) - start) + 60)
        }
        var rates = [Double](repeating: 0, count: seconds)
        var minute = 0
        while minute * 60 < seconds {
            let range = (minute * 60)..<min(seconds, minute * 60 + 60)
            let outside = range.filter { second in !windows.contains { $0.contains(second) } }
            let rate = outside.isEmpty ? nil : Double(outside.reduce(0) { $0 + perSecond[$1] }) / Double(outside.count)
            // A burst (a second with ten requests or more, three times the minute's rate) keeps
            // its minute's seconds as they were.
            let bursty = rate.map { rate in outside.contains { Double(perSecond[$0]) >= max(10, 3 * rate) } } ?? false
            for second in range {
                if let window = windows.first(where: { $0.contains(second) }) {
                    // The minute before the campaign where the log holds 5 s of it at least, else
                    // the minute after it where the log goes on so long (`beside`).
                    let before = max(0, window.lowerBound - 60)..<min(seconds, max(0, window.lowerBound))
                    let after = min(seconds, window.upperBound + 1)..<min(seconds, window.upperBound + 61)
                    let beside = before.count >= 5 ? before : after.count >= 5 ? after : 0..<0
                    rates[second] = beside.isEmpty ? 0 : Double(beside.reduce(0) { $0 + perSecond[$1] }) / Double(beside.count)
                } else {
                    rates[second] = bursty ? Double(perSecond[second]) : rate ?? 0
                }
            }
            minute += 1
        }
        return rates
    }
}
