public import PushSwarmMetrics
/// A validated scenario: who the devices are, how they behave, what they talk to, for how long.
/// Built only by `ScenarioDecoder`, so every instance has passed validation.
public struct Scenario: Sendable {
    /// The most device groups a scenario may have (a group's number ranks its arrivals: `EventRank`).
    public static let maximumGroups = 1_000

    public enum ClockKind: String, Sendable {
        case simulated
        case wall
    }

    public var name: String
    public var description: String
    public var seed: UInt64
    public var clock: ClockKind
    public var duration: TimeSpan
    /// The run's start on the calendar, Unix seconds (devices stamp events in their local time).
    public var startUnixSeconds: Int64
    /// Whether the scenario (or `--start`) set `start`: a wall run then keeps it; otherwise a wall
    /// run starts at the real time.
    public var startIsExplicit = false
    /// The real time minus the calendar's, seconds: 0 but in a wall run whose calendar was set
    /// explicitly. A peer's HTTP-date (`Retry-After`) is read against the real time.
    public var realClockOffsetSeconds: Int64 = 0
    /// Mixed into the identifiers devices make (`SeededRandom.identifierNonce`): 0 in simulated
    /// time, a fresh number for each wall run.
    public var identifierNonce: UInt64 = 0
    public var devices: Int
    public var groups: [DeviceGroup]
    public var locales: [LocaleShare]
    public var network: NetworkSettings
    /// Wall runs against a real target: the installs from before the run register first.
    public var warmUp = WarmUpSettings()
    /// The most requests (queued on devices or in flight) a process holds for its devices before
    /// open-model arrivals are shed and devices' oldest are dropped (`--max-waiting`); nil:
    /// `MemoryEstimate.waitingCeiling`'s default.
    public var maximumWaiting: Int?
    public var campaigns: [Campaign]
    /// The configured platforms, by name, for every platform a group or campaign uses.
    public var platforms: [String: any PlatformConfiguration]
    /// Conditions the run must meet (`p99(<platform>.events) < 200ms`); a failed one exits 99.
    public var thresholds: [Threshold] = []
}

extension Scenario {
    /// The scenario file's top-level keys, for its reader and writers (`ScenarioDecoder`,
    /// `ScenarioEncoder`, `fit`): each spelt here alone.
    public enum Key: String, CaseIterable, Sendable {
        case name, description, seed, clock, duration, start, devices, locales, network, warmUp, behaviour, groups, campaigns, thresholds, platforms
        /// What `fit` says of where a fitted scenario's numbers came from: for people, not read.
        case fit
    }
}

/// A share of the fleet with one platform, OS and client profile, and its own behaviour.
public struct DeviceGroup: Sendable {
    /// A group's keys in a scenario's `groups`, for its reader and writers.
    public enum Key: String, CaseIterable, Sendable {
        case name, share, platform, os, client, behaviour, workload
    }

    public var name: String
    public var weight: Double
    public var platform: String
    public var os: OperatingSystem
    /// Whether its devices follow their own day or a load shape the scenario sets.
    public var workload: Workload = .lifecycle
    public var client: any ClientProfile
    public var behaviour: Behaviour
}

extension Scenario {
    /// This scenario for one partition: equal in value, with storage of its own for everything
    /// (locales, groups' behaviours and client profiles, platforms' settings, campaigns, even
    /// its name), so that no partition retains what another does (see `String.partitionCopy`;
    /// `PartitionCopyTests` walks the whole value to check it).
    public func partitionCopy() -> Scenario {
        var copy = self
        copy.name = name.partitionCopy()
        copy.description = description.partitionCopy()
        copy.campaigns = campaigns.map { $0.partitionCopy() }
        copy.groups = groups.map { $0.partitionCopy() }
        copy.locales = locales.map { $0.partitionCopy() }
        copy.platforms = platforms.mapValues { $0.partitionCopy() }
        return copy
    }
}

extension DeviceGroup {
    public func partitionCopy() -> DeviceGroup {
        var copy = self
        copy.name = name.partitionCopy()
        copy.platform = platform.partitionCopy()
        copy.client = client.partitionCopy()
        copy.behaviour = behaviour.partitionCopy()
        return copy
    }
}
