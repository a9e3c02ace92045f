import PushSwarmMetrics

/// Reads a scenario file into a validated `Scenario`, or throws a `ScenarioError` naming the JSON
/// path of the first problem. Unknown keys are errors: a misspelt setting must never be ignored.
public struct ScenarioDecoder: Sendable {
    /// The platforms scenarios may name, by name.
    public let platforms: [String: any Platform]

    public init(platforms: [any Platform]) {
        self.platforms = Dictionary(uniqueKeysWithValues: platforms.map { ($0.name, $0) })
    }

    /// Parses and validates scenario text.
    public func decode(text: [UInt8]) throws -> Scenario {
        let value: JSONValue
        do {
            // Repeated names are reported by `JSONReader`, with their JSON path.
            value = try JSONParser.parse(text, duplicateNames: .keep)
        } catch {
            throw ScenarioError(path: "$", message: "not valid JSON: \(error)")
        }
        return try decode(JSONReader(value))
    }

    public func decode(_ document: JSONReader) throws -> Scenario {
        var root = try document.object()
        let name = try root.required(Scenario.Key.name) { try $0.nonEmptyString() }
        let description = try root.optional(Scenario.Key.description) { try $0.string() } ?? ""
        // What `pushswarm fit` says of where a fitted scenario's numbers came from: for people.
        _ = root.reader(Scenario.Key.fit)
        let seed = try root.optional(Scenario.Key.seed) { UInt64(try $0.integer(minimum: 0)) } ?? 1
        let clock = try root.optional(Scenario.Key.clock) { Scenario.ClockKind(rawValue: try $0.choice(["simulated", "wall"])) ?? .simulated } ?? .simulated
        let duration = try root.required(Scenario.Key.duration) { reader in
            let span = try reader.positiveDuration()
            guard span <= .days(366) else { throw reader.fail("must be at most 366 days") }
            return span
        }
        let start = try root.optional(Scenario.Key.start) { reader -> Int64 in
            guard let micros = RFC3339.parse(try reader.string()) else {
                throw reader.fail("expected an RFC 3339 time with offset, such as \"2026-03-02T00:00:00Z\"")
            }
            return micros / 1_000_000
        } ?? 1_772_409_600  // 2026-03-02T00:00:00Z, a Monday
        let devices = try root.required(Scenario.Key.devices) { try $0.integer(minimum: 1, maximum: 10_000_000) }
        let locales = try root.optional(Scenario.Key.locales) { try decodeLocales($0) } ?? LocaleShare.defaultMix
        let network = try root.optional(Scenario.Key.network) { try decodeNetwork($0) } ?? NetworkSettings()
        let warmUp = try root.optional(Scenario.Key.warmUp) { try decodeWarmUp($0) } ?? WarmUpSettings()
        let behaviour = try root.optional(Scenario.Key.behaviour) { try decodeBehaviour($0, base: Behaviour()) } ?? Behaviour()

        // Platforms first: groups and campaigns refer to them.
        var configured: [String: any PlatformConfiguration] = [:]
        var platformSections: [String: JSONReader] = [:]
        if let section = root.reader(Scenario.Key.platforms) {
            var object = try section.object()
            for (key, reader) in object.allMembers() {
                guard platforms[key] != nil else { throw unknownPlatform(key, at: object.memberPath(key)) }
                platformSections[key] = reader
            }
            try object.finish()
        }
        func configuration(_ platformName: String, at path: String) throws -> any PlatformConfiguration {
            if let existing = configured[platformName] { return existing }
            guard let platform = platforms[platformName] else { throw unknownPlatform(platformName, at: path) }
            let made = try platform.configure(platformSections[platformName])
            configured[platformName] = made
            return made
        }
        for key in platformSections.keys.sorted() {
            _ = try configuration(key, at: "$.\(Scenario.Key.platforms.rawValue).\(key)")
        }

        let groups = try root.required(Scenario.Key.groups) { reader -> [DeviceGroup] in
            let elements = try reader.array()
            guard !elements.isEmpty else { throw reader.fail("must list at least one device group") }
            guard elements.count <= Scenario.maximumGroups else { throw reader.fail("must list at most \(Scenario.maximumGroups) device groups") }
            var names = Set<String>()
            return try elements.map { element in
                var object = try element.object()
                let name = try object.required(DeviceGroup.Key.name) { try $0.nonEmptyString() }
                guard names.insert(name).inserted else {
                    throw ScenarioError(path: object.memberPath(DeviceGroup.Key.name), message: "group name \"\(name)\" is used twice")
                }
                let weight = try object.optional(DeviceGroup.Key.share) { reader -> Double in
                    let share = try reader.number(in: 0...1e9)
                    guard share > 0 else { throw reader.fail("must be above zero") }
                    return share
                } ?? 1
                let platformName = try object.required(DeviceGroup.Key.platform) { try $0.string() }
                let platformPath = object.memberPath(DeviceGroup.Key.platform)
                let platform = try configuration(platformName, at: platformPath)
                let os = try object.required(DeviceGroup.Key.os) { OperatingSystem(rawValue: try $0.choice(OperatingSystem.allCases.map(\.rawValue))) } ?? .android
                let client = try platform.clientProfile(object.reader(DeviceGroup.Key.client), os: os)
                let groupBehaviour = try object.optional(DeviceGroup.Key.behaviour) { try decodeBehaviour($0, base: behaviour) } ?? behaviour
                let workload = try object.optional(DeviceGroup.Key.workload) { try decodeWorkload($0, duration: duration) } ?? .lifecycle
                try object.finish()
                var group = DeviceGroup(name: name, weight: weight, platform: platformName, os: os, client: client, behaviour: groupBehaviour)
                group.workload = workload
                return group
            }
        }

        let campaigns = try root.optional(Scenario.Key.campaigns) { reader -> [Campaign] in
            try reader.array().map { element -> Campaign in
                var object = try element.object()
                let name = try object.required("name") { try $0.nonEmptyString() }
                let platformName = try object.optional("platform") { try $0.string() } ?? groups[0].platform
                _ = try configuration(platformName, at: object.memberPath("platform"))
                let at = try object.required("at") { reader in
                    let at = try reader.duration()
                    guard at <= duration else { throw reader.fail("is after the end of the run (\(duration))") }
                    return at
                }
                let audience = try object.optional("audience") { try $0.fraction() } ?? 1
                let delay = try object.optional("deliveryDelay") { try $0.durationDistribution() }
                let tapRate = try object.optional("tapRate") { try decodePerOS($0) { try $0.fraction() } }
                let timeToOpen = try object.optional("timeToOpen") { try decodePerOS($0) { try $0.durationDistribution() } }
                let ttl = try object.optional("ttl") { try $0.duration() }
                try object.finish()
                return Campaign(
                    name: name, platform: platformName, at: at, audience: audience,
                    deliveryDelay: delay ?? .logNormal(median: 2, sigma: 1), tapRate: tapRate, timeToOpen: timeToOpen,
                    timeToLive: ttl ?? .days(28)
                )
            }
        } ?? []
        let thresholds = try root.optional(Scenario.Key.thresholds) { reader in
            try reader.array().map { element -> Threshold in
                let text = try element.nonEmptyString()
                do { return try Threshold(parsing: text) } catch let error as Threshold.ParseError { throw element.fail(error.message) }
            }
        } ?? []
        try root.finish()

        var scenario = Scenario(
            name: name, description: description, seed: seed, clock: clock, duration: duration,
            startUnixSeconds: start, devices: devices, groups: groups, locales: locales, network: network,
            campaigns: campaigns, platforms: configured
        )
        scenario.thresholds = thresholds
        scenario.startIsExplicit = root.has(Scenario.Key.start)
        scenario.warmUp = warmUp
        return scenario
    }

    private func unknownPlatform(_ name: String, at path: String) -> ScenarioError {
        ScenarioError(path: path, message: "unknown platform \"\(name)\"; known: \(platforms.keys.sorted().joined(separator: ", "))")
    }

    private func decodeLocales(_ reader: JSONReader) throws -> [LocaleShare] {
        let elements = try reader.array()
        guard !elements.isEmpty else { throw reader.fail("must list at least one locale") }
        return try elements.map { element in
            var object = try element.object()
            let country = try object.required("country") { reader in
                let code = try reader.string()
                guard ISOCodes.isCountry(code) else { throw reader.fail("\"\(code)\" is not an ISO 3166-1 alpha-2 country code") }
                return code
            }
            let language = try object.required("language") { reader in
                let code = try reader.string()
                guard ISOCodes.isLanguage(code) else { throw reader.fail("\"\(code)\" is not an ISO 639-1 language code") }
                return code
            }
            let zone = try object.required("timezone") { reader in
                let zone = try reader.string()
                guard ZoneOffsets.isKnown(zone) else { throw reader.fail("\"\(zone)\" is not an IANA time zone") }
                return zone
            }
            let weight = try object.optional("share") { try $0.number(in: 0...1e9) } ?? 1
            try object.finish()
            return LocaleShare(country: country, language: language, timeZone: zone, weight: weight)
        }
    }

    private func decodeNetwork(_ reader: JSONReader) throws -> NetworkSettings {
        var object = try reader.object()
        var network = NetworkSettings()
        network.devicesPerSourceAddress = try object.optional("devicesPerSourceIP") { try $0.integer(minimum: 1, maximum: 10_000_000) } ?? 1
        network.connectionsPerSourceAddress = try object.optional("connectionsPerSourceIP") { try $0.integer(minimum: 1, maximum: 10_000) }
            ?? NetworkSettings.defaultConnectionsPerSourceAddress
        network.connections = try object.optional("connections") {
            ConnectionSharing(rawValue: try $0.choice(ConnectionSharing.allCases.map(\.rawValue))) ?? .perDevice
        } ?? .perDevice
        network.http2 = try object.optional("http2") {
            HTTPVersionPolicy(rawValue: try $0.choice(HTTPVersionPolicy.allCases.map(\.rawValue))) ?? .negotiate
        } ?? .negotiate
        network.errorRate = try object.optional("errorRate") { try $0.fraction() } ?? 0
        network.roundTrip = try object.optional("rtt") { try $0.durationDistribution() }
        let range = NetworkSettings.maxWebSocketMessageBytesRange
        if let bytes = try object.optional("maxWebSocketMessageBytes", { try $0.integer(minimum: range.lowerBound, maximum: range.upperBound) }) {
            network.maxWebSocketMessageBytes = bytes
        }
        try object.finish()
        return network
    }

    /// `{"enabled": true, "rate": "500/s", "maxDuration": "2m"}`.
    private func decodeWarmUp(_ reader: JSONReader) throws -> WarmUpSettings {
        var object = try reader.object()
        var warmUp = WarmUpSettings()
        warmUp.enabled = try object.optional("enabled") { try $0.bool() }
        warmUp.rate = try object.optional("rate") { reader in
            let rate = try reader.arrivalRate()
            guard rate > 0 else { throw reader.fail("must be more than 0 installs a second") }
            return rate
        } ?? warmUp.rate
        warmUp.maxDuration = try object.optional("maxDuration") { reader in
            let span = try reader.positiveDuration()
            guard span <= .days(1) else { throw reader.fail("must be at most 1 day") }
            return span
        } ?? warmUp.maxDuration
        warmUp.perAddressRate = try object.optional("perAddressRate") { reader in
            let rate = try reader.arrivalRate()
            guard rate > 0 else { throw reader.fail("must be more than 0 installs a second") }
            return rate
        }
        warmUp.settle = try object.optional("settle") { reader in
            let span = try reader.duration()
            guard span <= .minutes(10) else { throw reader.fail("must be at most 10 minutes") }
            return span
        } ?? warmUp.settle
        try object.finish()
        return warmUp
    }

    /// `{"model": "open", "rate": "100/s"}`; `"rate": {"from": "10/s", "to": "200/s", "over": "5m"}`
    /// (a ramp); `"steps": [{"rate": "50/s", "for": "1m"}, …]` (steps or phases, each constant or
    /// a ramp with `from`/`to`); `"arrivals": "constant"|"poisson"`; `"start"`. Or
    /// `{"model": "closed", "concurrency": 50, "thinkTime": "1s"}`. Or `{"model": "lifecycle"}`.
    public func decodeWorkload(_ reader: JSONReader, duration: TimeSpan) throws -> Workload {
        var object = try reader.object()
        let model = try object.required("model") { try $0.choice(["lifecycle", "open", "closed"]) }
        let start = try object.optional("start") { try $0.duration() } ?? .zero
        let workload: Workload
        switch model {
        case "open":
            var segments: [OpenWorkload.Segment] = []
            if let rate = object.reader("rate") {
                guard !object.has("steps") else { throw reader.fail("give \"rate\" or \"steps\", not both") }
                segments = [try decodeSegment(rate, length: duration)]
            } else {
                segments = try object.required("steps") { steps in
                    let list = try steps.array()
                    guard !list.isEmpty else { throw steps.fail("needs at least one step") }
                    return try list.map { step in
                        var stepObject = try step.object()
                        let length = try stepObject.required("for") { try $0.positiveDuration() }
                        let segment: OpenWorkload.Segment
                        if let rate = stepObject.reader("rate") {
                            segment = try decodeSegment(rate, length: length)
                        } else {
                            let from = try stepObject.required("from") { try $0.arrivalRate() }
                            let to = try stepObject.required("to") { try $0.arrivalRate() }
                            segment = OpenWorkload.Segment(length: length, fromRate: from, toRate: to)
                        }
                        try stepObject.finish()
                        return segment
                    }
                }
            }
            guard segments.contains(where: { $0.fromRate > 0 || $0.toRate > 0 }) else {
                throw (object.reader("rate") ?? object.reader("steps") ?? reader).fail("every rate is zero: this group would send nothing (a pause of 0/s belongs between steps)")
            }
            let arrivals = try object.optional("arrivals") { try $0.choice(["constant", "poisson"]) } ?? "constant"
            workload = .open(OpenWorkload(segments: segments, isPoisson: arrivals == "poisson", start: start))
        case "closed":
            let concurrency = try object.required("concurrency") { try $0.integer(minimum: 1, maximum: 10_000_000) }
            let think = try object.optional("thinkTime") { try $0.durationDistribution() } ?? .constant(0)
            workload = .closed(ClosedWorkload(concurrency: concurrency, thinkTime: think, start: start))
        default:
            workload = .lifecycle
        }
        try object.finish()
        return workload
    }

    /// A rate (constant over `length`) or `{"from", "to", "over"}` (a ramp, then the end rate).
    private func decodeSegment(_ reader: JSONReader, length: TimeSpan) throws -> OpenWorkload.Segment {
        guard case .object = reader.value else {
            let rate = try reader.arrivalRate()
            return OpenWorkload.Segment(length: length, fromRate: rate, toRate: rate)
        }
        var object = try reader.object()
        let from = try object.required("from") { try $0.arrivalRate() }
        let to = try object.required("to") { try $0.arrivalRate() }
        let over = try object.optional("over") { try $0.positiveDuration() } ?? length
        try object.finish()
        return OpenWorkload.Segment(length: over, fromRate: from, toRate: to)
    }

    /// Reads a `behaviour` object over `base`: only the keys present change.
    public func decodeBehaviour(_ reader: JSONReader, base: Behaviour) throws -> Behaviour {
        var object = try reader.object()
        var behaviour = base
        if let value = try object.optional("sessionsPerDay", { try $0.numberDistribution(in: 0...Behaviour.maximumSessionsPerDay) }) {
            behaviour.sessionsPerDay = value
        }
        if let value = try object.optional("sessionLength", { try $0.durationDistribution() }) { behaviour.sessionLength = value }
        if let value = try object.optional("eventsPerSession", { try $0.number(in: 0...10_000) }) { behaviour.eventsPerSession = value }
        if let value = try object.optional("eventMix", { try decodeEventMix($0) }) { behaviour.eventMix = value }
        if let value = try object.optional("activeHours", { reader -> [Double] in
            let hours = try reader.array()
            guard hours.count == 24 else { throw reader.fail("expected 24 weights, one per local hour, found \(hours.count)") }
            let weights = try hours.map { try $0.number(in: 0...1e9) }
            guard weights.contains(where: { $0 > 0 }) else { throw reader.fail("at least one hour must have a weight above zero") }
            return weights
        }) { behaviour.activeHours = value }
        if let value = try object.optional("backgroundToClosed", { try $0.durationDistribution() }) { behaviour.backgroundToClosed = value }
        if let value = try object.optional("newInstallShare", { try $0.fraction() }) { behaviour.newInstallShare = value }
        if let value = try object.optional("accountShare", { try $0.fraction() }) { behaviour.accountShare = value }
        if let value = try object.optional("loggedInAtStart", { try $0.fraction() }) { behaviour.loggedInAtStart = value }
        if let value = try object.optional("loginPerSession", { try $0.fraction() }) { behaviour.loginPerSession = value }
        if let value = try object.optional("logoutPerSession", { try $0.fraction() }) { behaviour.logoutPerSession = value }
        if let value = try object.optional("pushPermissionRate", { try decodePerOS($0) { try $0.fraction() } }) { behaviour.pushPermissionRate = value }
        if let value = try object.optional("permissionChangesPerDay", { try $0.number(in: 0...1_000) }) { behaviour.permissionChangesPerDay = value }
        if let value = try object.optional("tapRate", { try decodePerOS($0) { try $0.fraction() } }) { behaviour.tapRate = value }
        if let value = try object.optional("timeToOpen", { try decodePerOS($0) { try $0.durationDistribution() } }) { behaviour.timeToOpen = value }
        if let value = try object.optional("dismissRate", { try $0.fraction() }) { behaviour.dismissRate = value }
        if let value = try object.optional("timeToDismiss", { try $0.durationDistribution() }) { behaviour.timeToDismiss = value }
        if let value = try object.optional("tokenRotationsPerDay", { try $0.number(in: 0...1_000) }) { behaviour.tokenRotationsPerDay = value }
        if let value = try object.optional("unreachableShare", { try $0.fraction() }) { behaviour.unreachableShare = value }
        if let value = try object.optional("offlineDuration", { try $0.durationDistribution() }) { behaviour.offlineDuration = value }
        if let value = try object.optional("forceStopShare", { try decodePerOS($0) { try $0.fraction() } }) { behaviour.forceStopShare = value }
        if let value = try object.optional("appVersion", { try $0.nonEmptyString() }) { behaviour.appVersion = value }
        try object.finish()
        return behaviour
    }

    /// `{"screen_viewed": 30, "add_to_cart": {"weight": 5, "params": ["product_id"]}}`.
    private func decodeEventMix(_ reader: JSONReader) throws -> [WeightedEvent] {
        var object = try reader.object()
        let known = Dictionary(uniqueKeysWithValues: WeightedEvent.defaultMix.map { ($0.name, $0.parameters) })
        let mix = try object.allMembers().map { name, entry -> WeightedEvent in
            guard !name.isEmpty else { throw entry.fail("an event name must not be empty") }
            switch entry.value {
            case .number:
                return WeightedEvent(name: name, weight: try entry.number(in: 0...1e9), parameters: known[name] ?? [])
            default:
                var details = try entry.object()
                let weight = try details.required("weight") { try $0.number(in: 0...1e9) }
                let parameters = try details.optional("params") { try $0.array().map { try $0.nonEmptyString() } } ?? known[name] ?? []
                try details.finish()
                return WeightedEvent(name: name, weight: weight, parameters: parameters)
            }
        }
        guard mix.contains(where: { $0.weight > 0 }) else { throw reader.fail("at least one event must have a weight above zero") }
        try object.finish()
        return mix
    }

    /// One value for both OSes, or `{"android": …, "ios": …}` (both required).
    private func decodePerOS<Value>(_ reader: JSONReader, _ read: (JSONReader) throws -> Value) throws -> PerOS<Value> {
        if case .object(let object) = reader.value, object["android"] != nil || object["ios"] != nil {
            var perOS = try reader.object()
            let android = try perOS.required("android", read)
            let ios = try perOS.required("ios", read)
            try perOS.finish()
            return PerOS(android: android, ios: ios)
        }
        return PerOS(both: try read(reader))
    }
}
