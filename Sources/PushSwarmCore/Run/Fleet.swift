public import PushSwarmSystem

/// The device population of a scenario. Each device is derived from (seed, index) alone, so any
/// subset of indices (a shard) is built exactly as the full run builds it.
public struct Fleet: Sendable {
    public let scenario: Scenario
    public let calendar: RunCalendar
    private let groupWeights: [Double]
    private let groupWeightTotal: Double
    private let localeWeights: [Double]
    private let localeWeightTotal: Double
    /// Each group's behaviour, shared by its devices.
    private let groupBehaviours: [GroupBehaviour]

    static let androidVersions = WeightedChoice([("Android 11", 10), ("Android 12", 14), ("Android 13", 22), ("Android 14", 32), ("Android 15", 22)])
    static let iosVersions = WeightedChoice([("iOS 16.7", 12), ("iOS 17.6", 30), ("iOS 18.1", 58)])

    /// Strings drawn by weight, the weights and their total made once (not per device).
    struct WeightedChoice: Sendable {
        let values: [String]
        let weights: [Double]
        let total: Double

        init(_ choices: [(String, Double)]) {
            values = choices.map(\.0)
            weights = choices.map(\.1)
            total = weights.reduce(0, +)
        }

        func pick(using random: inout SeededRandom) -> String { values[random.pickIndex(weights: weights, total: total)] }
    }

    public init(scenario: Scenario) {
        self.scenario = scenario
        groupWeights = scenario.groups.map(\.weight)
        groupBehaviours = scenario.groups.map { GroupBehaviour($0.behaviour) }
        groupWeightTotal = groupWeights.reduce(0, +)
        localeWeights = scenario.locales.map(\.weight)
        localeWeightTotal = localeWeights.reduce(0, +)
        let end = scenario.startUnixSeconds + Int64(scenario.duration.seconds) + 86_400
        calendar = RunCalendar(
            startUnixSeconds: scenario.startUnixSeconds,
            zones: ZoneOffsets(zones: scenario.locales.map(\.timeZone), from: scenario.startUnixSeconds - 86_400, through: end),
            realOffsetSeconds: scenario.realClockOffsetSeconds
        )
    }

    public func group(of profile: DeviceProfile) -> DeviceGroup { scenario.groups[profile.groupIndex] }

    /// The group of device `index`: the first draw of its profile, without the rest.
    public func groupIndex(at index: Int) -> Int {
        var random = SeededRandom(seed: scenario.seed, stream: .deviceProfile, index: UInt64(index))
        return random.pickIndex(weights: groupWeights, total: groupWeightTotal)
    }

    public func profile(at index: Int) -> DeviceProfile {
        var random = SeededRandom(seed: scenario.seed, stream: .deviceProfile, index: UInt64(index))
        let groupIndex = random.pickIndex(weights: groupWeights, total: groupWeightTotal)
        let group = scenario.groups[groupIndex]
        let behaviour = group.behaviour
        let locale = scenario.locales[random.pickIndex(weights: localeWeights, total: localeWeightTotal)]
        let osVersion = group.os == .android ? Self.androidVersions.pick(using: &random) : Self.iosVersions.pick(using: &random)
        let isNewInstall = random.chance(behaviour.newInstallShare)
        let installAt = Instant(microseconds: Int64(random.nextUnit() * Double(scenario.duration.microseconds)))
        let hasAccount = random.chance(behaviour.accountShare)
        let isLoggedIn = random.chance(behaviour.loggedInAtStart)
        let grants = random.chance(behaviour.pushPermissionRate[group.os])
        let sessionsPerDay = min(Behaviour.maximumSessionsPerDay, max(0, behaviour.sessionsPerDay.sample(using: &random)))
        return DeviceProfile(
            index: index, groupIndex: groupIndex, platform: group.platform, os: group.os, osVersion: osVersion,
            appVersion: behaviour.appVersion, locale: locale,
            utcOffsetAtStart: calendar.zones.offsetSeconds(zone: locale.timeZone, atUnixSeconds: scenario.startUnixSeconds),
            source: SourceAddress(index: UInt32(index / scenario.network.devicesPerSourceAddress)),
            installAt: isNewInstall ? installAt : nil,
            accountID: hasAccount ? "user_\(index)" : nil,
            isLoggedInAtStart: hasAccount && isLoggedIn,
            grantsPushPermission: grants,
            sessionsPerDay: sessionsPerDay,
            pushTokenStyle: group.client.pushToken
        )
    }

    /// The device with `profile`, ready to start, its actor on `executor` (its partition's thread).
    public func makeDevice(_ profile: DeviceProfile, on executor: any PartitionExecutor) -> VirtualDevice {
        let index = profile.index
        let group = group(of: profile)
        var lifecycle = DeviceLifecycle(profile: profile, group: groupBehaviours[profile.groupIndex])
        if group.workload != .lifecycle { lifecycle.followsOwnDay = false }
        lifecycle.holdsOwnConnections = scenario.network.connections == .perDevice
        var random = SeededRandom(seed: scenario.seed, stream: .device, index: UInt64(index))
        random.identifierNonce = scenario.identifierNonce
        return VirtualDevice(
            lifecycle: lifecycle,
            client: group.client.makeClient(for: profile),
            random: random,
            calendar: calendar,
            executor: executor
        )
    }
}
