import PushSwarmMetrics

/// A scenario fitted to an access log: the network (addresses and devices behind them), the
/// per-address limit, the clients' retry rule, the campaigns whose taps made the bursts of
/// opens, and the rest of the load as an open workload. Written as JSON a person can read and
/// edit, every fitted number explained in its `fit` section.
///
/// The model: a campaign's taps are cold starts, and a cold start sends what the platform's
/// app sends when it opens from a push (its open, its session's events), from the tapping
/// device, in the device's own order, retried by the device's own rule. So a burst of opens is
/// fitted as its cause, not as its arrivals: a tap's requests queued behind a refused one, or a
/// storm of retries, come out of the simulation as they came out of the devices.
public struct ScenarioFit: Sendable {
    /// The operation a tap on a platform's push sends: what marks a campaign in a log.
    public static let openOperations: [String: String] = [
        "smartapppush": "smartapppush.pushes_opened",
        "flocktory": "flocktory.push_click",
    ]
    /// The longest log fitted: a week, a second at a time.
    public static let longestSpanSeconds: Int64 = 7 * 86_400
    /// Opens further apart than this belong to different campaigns.
    public static let campaignGapMicroseconds: Int64 = 300_000_000

    public struct Campaign: Sendable, Equatable {
        public var platform: String
        /// The first tap, Unix microseconds.
        public var atMicroseconds: Int64
        /// Taps: the campaign's first attempts of its platform's open.
        public var taps: Int
        /// When its devices tapped, from `at`: the earliest first attempts of the platform from
        /// the burst's start, as many as there were taps, less what the platform sent before it.
        public var tapOffsetsMicroseconds: [Int64]
        /// The last first attempt of an open, Unix microseconds.
        public var lastOpenMicroseconds: Int64
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

    /// Fits the parts of a scenario to a profile whose requests are in time order.
    public static func fit(_ profile: LogProfile, retry: RetryFit?) -> ScenarioFit? {
        guard let first = profile.first, let last = profile.last else { return nil }
        let start = LogProfile.second(first)
        var fit = ScenarioFit(start: start, durationSeconds: max(1, Int(LogProfile.second(last) - start) + 1))
        let rule = retry?.rule
        // First attempts by platform and operation, in time order.
        var firsts: [String: [(microseconds: Int64, operation: UInt16)]] = [:]
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
            let openIndex = Self.openOperations[platform].flatMap { open in profile.operationNames.firstIndex(of: open) }.map(UInt16.init)
            let found = Self.campaigns(platform: platform, requests: requests, open: openIndex, late: openIndex.flatMap { late[$0] } ?? [])
            fit.campaigns += found
            let steps = Self.background(requests: requests, open: openIndex, campaigns: found, start: start, seconds: fit.durationSeconds)
            if steps.contains(where: { $0 > 0 }) { fit.background[platform] = steps }
        }
        // The network: devices spread evenly over addresses as many as the log's carry its load
        // (the participation ratio of requests per address: n for n equal addresses, near the
        // heavy ones' count when a few NATs carry most).
        let counts = profile.perAddress.values.map(Double.init)
        fit.addresses = counts.count
        let sum = counts.reduce(0, +)
        let squares = counts.reduce(0) { $0 + $1 * $1 }
        fit.effectiveAddresses = squares > 0 ? max(1, Int((sum * sum / squares).rounded())) : 1
        // Devices, per platform: every tap of its largest campaign is a device of its own, and
        // its open workload finds a free device at its peak while earlier ones still retry (the
        // peak rate times a request's longest life under the retry rule).
        let life = Double(Self.lifeMicroseconds(rule)) / 1_000_000
        for platform in firsts.keys {
            let taps = fit.campaigns.filter { $0.platform == platform }.map(\.taps).max() ?? 0
            let peak = fit.background[platform]?.max() ?? 0
            fit.devicesByPlatform[platform] = max(1, taps, Int((peak * life).rounded(.up)))
        }
        fit.devices = min(10_000_000, max(fit.devicesByPlatform.values.reduce(0, +), fit.effectiveAddresses))
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
    /// attempts), as many as fell within the campaign; each campaign's taps start where the
    /// burst of its platform's first attempts does.
    static func campaigns(platform: String, requests: [(microseconds: Int64, operation: UInt16)], open: UInt16?, late: [Int64]) -> [Campaign] {
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
        return groups.map { group in
            let lateRetries = late.filter { $0 >= group[0] && $0 <= group[group.count - 1] }.count
            let taps = max(1, group.count - lateRetries)
            // The platform's first attempts before the burst: the rate the load had without it.
            let onset = group[0] - 2_000_000
            let before = requests.filter { $0.microseconds >= onset - 60_000_000 && $0.microseconds < onset }.count
            let backgroundPerMicrosecond = Double(before) / 60_000_000
            // From the onset, the first attempts in order until, less that rate, they are as
            // many as the taps: a cold start's first request leaves as its device taps.
            var offsets: [Int64] = []
            var taken = 0
            var firstTap: Int64?
            for request in requests where request.microseconds >= onset {
                taken += 1
                let expected = backgroundPerMicrosecond * Double(request.microseconds - onset)
                if Double(taken) - expected < 1 { continue }
                let at = firstTap ?? request.microseconds
                firstTap = at
                offsets.append(request.microseconds - at)
                if offsets.count >= taps { break }
            }
            return Campaign(platform: platform, atMicroseconds: firstTap ?? group[0], taps: taps, tapOffsetsMicroseconds: offsets, lastOpenMicroseconds: group[group.count - 1])
        }
    }

    /// The open workload of one platform: its first attempts other than opens, per minute as a
    /// rate a second (per second in a minute with a burst), one entry a second of the run; within a campaign (2 s before its first tap
    /// to a minute after its last open) the rate of the minute before it (none where the log
    /// holds less than half of that minute), as the taps' sessions make the rest.
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
                    // The minute before the campaign, where the log holds half of it at least
                    // (a log that begins with the burst says nothing of the load without it).
                    let before = max(0, window.lowerBound - 60)..<min(seconds, max(0, window.lowerBound))
                    rates[second] = before.count < 30 ? 0 : Double(before.reduce(0) { $0 + perSecond[$1] }) / Double(before.count)
                } else {
                    rates[second] = bursty ? Double(perSecond[second]) : rate ?? 0
                }
            }
            minute += 1
        }
        return rates
    }
}
