public import PushSwarmMetrics

/// Writes a `Scenario` as scenario JSON that `ScenarioDecoder` reads back to the same scenario:
/// every setting spelt out, defaults too (`pushswarm validate --print`, and what `fit` writes).
/// The decoder and this type are the scenario format's one definition, held together by a
/// round-trip test over every shipped scenario and a fitted one: a key renamed on one side
/// only fails it (`ScenarioRoundTripTests`).
///
/// What a scenario holds that its file does not (a wall run's nonce, `--max-waiting`) is not
/// written; a group's behaviour is written whole in the group (the file's top-level
/// `behaviour` is only the groups' base).
public struct ScenarioEncoder: Sendable {
    public init() {}

    /// The scenario as indented JSON text, newline-terminated.
    public func text(_ scenario: Scenario) -> String {
        JSONWriter.text(of: .object(encode(scenario)), indent: 2) + "\n"
    }

    public func encode(_ scenario: Scenario) -> JSONObject {
        var root: [(Scenario.Key, JSONValue)] = [(.name, .string(scenario.name))]
        if !scenario.description.isEmpty { root.append((.description, .string(scenario.description))) }
        root += [
            (.seed, .number(Double(scenario.seed))),
            (.clock, .string(scenario.clock.rawValue)),
            (.duration, Self.duration(scenario.duration)),
        ]
        if scenario.startIsExplicit { root.append((.start, Self.start(unixSeconds: scenario.startUnixSeconds))) }
        root += [
            (.devices, .number(Double(scenario.devices))),
            (.locales, .array(scenario.locales.map(Self.locale))),
            (.network, .object(Self.network(scenario.network))),
            (.warmUp, .object(Self.warmUp(scenario.warmUp))),
            (.groups, .array(scenario.groups.map(Self.group))),
        ]
        if !scenario.campaigns.isEmpty { root.append((.campaigns, .array(scenario.campaigns.map(Self.campaign)))) }
        if !scenario.thresholds.isEmpty { root.append((.thresholds, .array(scenario.thresholds.map { .string($0.text) }))) }
        let platforms = scenario.platforms.sorted { $0.key < $1.key }.map { ($0.key, JSONValue.object($0.value.encoded)) }
        root.append((.platforms, .object(JSONObject(platforms))))
        return Self.object(root)
    }

    /// An object of a format's keys (`Scenario.Key`, `DeviceGroup.Key`), in their order.
    public static func object<Key: RawRepresentable<String>>(_ members: [(Key, JSONValue)]) -> JSONObject {
        JSONObject(members.map { ($0.0.rawValue, $0.1) })
    }

    /// `start`: RFC 3339 in UTC.
    public static func start(unixSeconds: Int64) -> JSONValue {
        .string(RFC3339.format(unixMicroseconds: unixSeconds * 1_000_000, offsetSeconds: 0, utcAsZ: true))
    }

    /// The members of `written` whose values differ from `base`'s: what a reader that starts from
    /// `base` (a `behaviour` over the defaults, a `network`) needs to arrive at `written`.
    public static func differences(_ written: JSONObject, from base: JSONObject) -> JSONObject {
        JSONObject(written.members.filter { base[$0.key] != $0.value })
    }

    // MARK: the parts

    static func locale(_ locale: LocaleShare) -> JSONValue {
        ["country": .string(locale.country), "language": .string(locale.language), "timezone": .string(locale.timeZone), "share": .number(locale.weight)]
    }

    public static func network(_ network: NetworkSettings) -> JSONObject {
        var object: [(String, JSONValue)] = [
            ("devicesPerSourceIP", .number(Double(network.devicesPerSourceAddress))),
            ("connectionsPerSourceIP", .number(Double(network.connectionsPerSourceAddress))),
            ("connections", .string(network.connections.rawValue)),
            ("http2", .string(network.http2.rawValue)),
            ("errorRate", .number(network.errorRate)),
        ]
        if let roundTrip = network.roundTrip { object.append(("rtt", durationDistribution(roundTrip))) }
        object.append(("maxWebSocketMessageBytes", .number(Double(network.maxWebSocketMessageBytes))))
        return JSONObject(object)
    }

    static func warmUp(_ warmUp: WarmUpSettings) -> JSONObject {
        var object: [(String, JSONValue)] = []
        if let enabled = warmUp.enabled { object.append(("enabled", .bool(enabled))) }
        object += [("rate", rate(warmUp.rate)), ("maxDuration", duration(warmUp.maxDuration))]
        if let rate = warmUp.perAddressRate { object.append(("perAddressRate", Self.rate(rate))) }
        object.append(("settle", duration(warmUp.settle)))
        return JSONObject(object)
    }

    static func group(_ group: DeviceGroup) -> JSONValue {
        var object: [(DeviceGroup.Key, JSONValue)] = [
            (.name, .string(group.name)), (.share, .number(group.weight)), (.platform, .string(group.platform)), (.os, .string(group.os.rawValue)),
        ]
        if let client = group.client.encodedOptions { object.append((.client, .object(client))) }
        object.append((.behaviour, .object(behaviour(group.behaviour))))
        object.append((.workload, workload(group.workload)))
        return .object(Self.object(object))
    }

    public static func behaviour(_ behaviour: Behaviour) -> JSONObject {
        JSONObject([
            ("sessionsPerDay", numberDistribution(behaviour.sessionsPerDay)),
            ("sessionLength", durationDistribution(behaviour.sessionLength)),
            ("eventsPerSession", .number(behaviour.eventsPerSession)),
            ("eventMix", .object(JSONObject(behaviour.eventMix.map { event in
                (event.name, JSONValue.object(["weight": .number(event.weight), "params": .array(event.parameters.map(JSONValue.string))]))
            }))),
            ("activeHours", .array(behaviour.activeHours.map(JSONValue.number))),
            ("backgroundToClosed", durationDistribution(behaviour.backgroundToClosed)),
            ("newInstallShare", .number(behaviour.newInstallShare)),
            ("accountShare", .number(behaviour.accountShare)),
            ("loggedInAtStart", .number(behaviour.loggedInAtStart)),
            ("loginPerSession", .number(behaviour.loginPerSession)),
            ("logoutPerSession", .number(behaviour.logoutPerSession)),
            ("pushPermissionRate", perOS(behaviour.pushPermissionRate, JSONValue.number)),
            ("permissionChangesPerDay", .number(behaviour.permissionChangesPerDay)),
            ("tapRate", perOS(behaviour.tapRate, JSONValue.number)),
            ("timeToOpen", perOS(behaviour.timeToOpen, durationDistribution)),
            ("dismissRate", .number(behaviour.dismissRate)),
            ("timeToDismiss", durationDistribution(behaviour.timeToDismiss)),
            ("tokenRotationsPerDay", .number(behaviour.tokenRotationsPerDay)),
            ("unreachableShare", .number(behaviour.unreachableShare)),
            ("offlineDuration", durationDistribution(behaviour.offlineDuration)),
            ("forceStopShare", perOS(behaviour.forceStopShare, JSONValue.number)),
            ("appVersion", .string(behaviour.appVersion)),
        ])
    }

    public static func workload(_ workload: Workload) -> JSONValue {
        switch workload {
        case .lifecycle:
            return ["model": "lifecycle"]
        case .open(let open):
            let steps = open.segments.map { segment -> JSONValue in
                segment.fromRate == segment.toRate
                    ? ["for": duration(segment.length), "rate": rate(segment.fromRate)]
                    : ["for": duration(segment.length), "from": rate(segment.fromRate), "to": rate(segment.toRate)]
            }
            return .object(JSONObject([
                ("model", "open"), ("start", duration(open.start)), ("steps", .array(steps)), ("arrivals", .string(open.isPoisson ? "poisson" : "constant")),
            ]))
        case .closed(let closed):
            return .object(JSONObject([
                ("model", "closed"), ("start", duration(closed.start)), ("concurrency", .number(Double(closed.concurrency))),
                ("thinkTime", durationDistribution(closed.thinkTime)),
            ]))
        }
    }

    public static func campaign(_ campaign: Campaign) -> JSONValue {
        var object: [(String, JSONValue)] = [
            ("name", .string(campaign.name)), ("platform", .string(campaign.platform)), ("at", duration(campaign.at)),
            ("audience", .number(campaign.audience)), ("deliveryDelay", durationDistribution(campaign.deliveryDelay)),
        ]
        if let tapRate = campaign.tapRate { object.append(("tapRate", perOS(tapRate, JSONValue.number))) }
        if let timeToOpen = campaign.timeToOpen { object.append(("timeToOpen", perOS(timeToOpen, durationDistribution))) }
        object.append(("ttl", duration(campaign.timeToLive)))
        return .object(JSONObject(object))
    }

    // MARK: settings every platform's section shares

    /// The members `readMockBehaviour` reads, for a platform's `mock` object.
    public static func mockBehaviour(_ behaviour: MockBehaviour) -> [(String, JSONValue)] {
        var members: [(String, JSONValue)] = [
            ("latency", durationDistribution(behaviour.latency)),
            ("http503Rate", .number(behaviour.http503Rate)),
            ("loseAcceptedRate", .number(behaviour.loseAcceptedRate)),
            ("rateLimits", .array(behaviour.rateLimits.map(rateLimitRule))),
            ("faults", .array(behaviour.faults.map(faultRule))),
        ]
        let edge = behaviour.edge
        var edgeMembers: [(String, JSONValue)] = [("tls", .string(edge.tls.rawValue))]
        if let rate = edge.handshakesPerSecond { edgeMembers.append(("handshakesPerSecond", .number(rate))) }
        if let most = edge.maxConnections { edgeMembers.append(("maxConnections", .number(Double(most)))) }
        if let streams = edge.maxConcurrentStreams { edgeMembers.append(("maxConcurrentStreams", .number(Double(streams)))) }
        edgeMembers.append(("http2", .bool(edge.offersHTTP2)))
        members.append(("edge", .object(JSONObject(edgeMembers))))
        return members
    }

    public static func rateLimitRule(_ rule: RateLimitRule) -> JSONValue {
        var object: [(String, JSONValue)]
        switch rule.algorithm {
        case .tokenBucket(let rate, let burst):
            object = [("algorithm", "tokenBucket"), ("rate", Self.rate(rate)), ("burst", .number(Double(burst)))]
        case .leakyBucket(let rate, let burst, let nodelay):
            object = [("algorithm", "leakyBucket"), ("rate", Self.rate(rate)), ("burst", .number(Double(burst))), ("nodelay", .bool(nodelay))]
        case .fixedWindow(let limit, let window):
            object = [("algorithm", "fixedWindow"), ("limit", .number(Double(limit))), ("window", duration(window))]
        case .slidingWindow(let limit, let window):
            object = [("algorithm", "slidingWindow"), ("limit", .number(Double(limit))), ("window", duration(window))]
        }
        let key: String
        switch rule.key {
        case .sourceIP: key = "sourceIP"
        case .endpoint: key = "endpoint"
        case .sourceIPAndEndpoint: key = "sourceIPAndEndpoint"
        case .global: key = "global"
        case .header(let name): key = "header:" + name
        case .bodyField(let name): key = "body:" + name
        }
        object += [("key", .string(key)), ("status", .number(Double(rule.status))), ("retryAfter", .bool(rule.sendsRetryAfter))]
        object.append(("paths", .array(rule.paths.map(JSONValue.string))))
        return .object(JSONObject(object))
    }

    public static func faultRule(_ rule: FaultRule) -> JSONValue {
        var object: [(String, JSONValue)]
        switch rule.kind {
        case .serverError(let status): object = [("kind", "http5xx"), ("status", .number(Double(status)))]
        case .stall: object = [("kind", "stall")]
        case .reset: object = [("kind", "reset")]
        case .truncated: object = [("kind", "truncated")]
        case .malformed: object = [("kind", "malformed")]
        case .goAway: object = [("kind", "goAway")]
        case .slowBody(let rate): object = [("kind", "slowBody"), ("bytesPerSecond", .number(Double(rate)))]
        }
        switch rule.when {
        case .rate(let rate): object.append(("rate", .number(rate)))
        case .periodic(let period, let length, let offset): object += [("every", duration(period)), ("for", duration(length)), ("offset", duration(offset))]
        }
        object.append(("paths", .array(rule.paths.map(JSONValue.string))))
        return .object(JSONObject(object))
    }

    /// A platform's `retry` table, every row whole.
    public static func retryTable(_ table: RetryTable) -> JSONValue {
        var object = RetryTable.Row.allCases.map { ($0.rawValue, retryRule(table[$0])) }
        if let budget = table.retryBudget { object.append(("budget", .number(budget))) }
        return .object(JSONObject(object))
    }

    /// A rule's settings, `keys` of them (all by default): a partial row reads back over the
    /// row it is written over, the others as they were.
    public static func retryRule(_ rule: RetryRule, keys: [RetryRule.Key] = RetryRule.Key.allCases) -> JSONValue {
        .object(JSONObject(keys.map { key -> (String, JSONValue) in
            switch key {
            case .initialDelay: (key.rawValue, duration(rule.initialDelay))
            case .multiplier: (key.rawValue, .number(rule.multiplier))
            case .maxDelay: (key.rawValue, duration(rule.maximumDelay))
            case .maxRetries: (key.rawValue, .number(Double(rule.maximumRetries)))
            case .whenExhausted: (key.rawValue, .string(rule.whenExhausted.rawValue))
            case .jitter: (key.rawValue, .string(rule.jitter.rawValue))
            case .honourRetryAfter: (key.rawValue, .bool(rule.honoursRetryAfter))
            case .maxRetryAfter: (key.rawValue, duration(rule.maximumRetryAfter))
            }
        }))
    }

    /// A retry table that sets one row, `keys` of its rule: the settings a platform writes to
    /// make its clients follow a rule found elsewhere (`fit`'s), the rest of its table its own.
    public static func retryTable(setting row: RetryTable.Row, to rule: RetryRule, keys: [RetryRule.Key]) -> JSONValue {
        .object(JSONObject([(row.rawValue, retryRule(rule, keys: keys))]))
    }

    // MARK: values

    /// A duration as a scenario writes it, in the largest unit it is a whole number of: `28d`,
    /// `2h`, `5m`, `90s`, `250ms`, `1500us`.
    public static func duration(_ span: TimeSpan) -> JSONValue {
        let microseconds = span.microseconds
        guard microseconds != 0 else { return "0s" }
        for (unit, size) in [("d", Int64(86_400_000_000)), ("h", 3_600_000_000), ("m", 60_000_000), ("s", 1_000_000), ("ms", 1_000)] where microseconds % size == 0 {
            return .string("\(microseconds / size)\(unit)")
        }
        return .string("\(microseconds)us")
    }

    /// A rate as a scenario writes it, per second (`5/s`, `0.25/s`): the number as its shortest
    /// text that reads back to it.
    public static func rate(_ perSecond: Double) -> JSONValue {
        if perSecond == perSecond.rounded(), abs(perSecond) < 1e15 { return .string("\(Int64(perSecond))/s") }
        return .string("\(perSecond)/s")
    }

    /// A distribution of durations (its values in seconds, as `durationDistribution` reads them).
    public static func durationDistribution(_ distribution: Distribution) -> JSONValue {
        written(distribution) { duration(.seconds($0)) }
    }

    /// A distribution of plain numbers.
    public static func numberDistribution(_ distribution: Distribution) -> JSONValue {
        written(distribution) { .number($0) }
    }

    private static func written(_ distribution: Distribution, _ scalar: (Double) -> JSONValue) -> JSONValue {
        switch distribution {
        case .constant(let value): ["constant": scalar(value)]
        case .uniform(let minimum, let maximum): ["uniform": [scalar(minimum), scalar(maximum)]]
        case .exponential(let mean): ["exponential": ["mean": scalar(mean)]]
        case .logNormal(let median, let sigma): ["lognormal": ["median": scalar(median), "sigma": .number(sigma)]]
        }
    }

    /// One value for both systems when they agree, else `{"android": …, "ios": …}`.
    static func perOS<Value: Equatable>(_ value: PerOS<Value>, _ write: (Value) -> JSONValue) -> JSONValue {
        value.android == value.ios ? write(value.android) : ["android": write(value.android), "ios": write(value.ios)]
    }
}
