/// Where each open-model group's devices stand in the group, for one partition: how many of the
/// group's devices come before the partition's first (in fleet order) and how many the fleet has.
/// Computed once per process from the devices' group draws (`GroupPositions.census`), so that a
/// partition knows its share of the load without holding the whole fleet.
struct GroupPositions: Sendable {
    /// By group: the fleet's devices of the group before the partition's first device.
    var before: [Int]
    /// By group: the fleet's devices of the group.
    var total: [Int]

    /// The positions of every range in `ranges` (contiguous, in fleet order): one pass over the
    /// fleet's group draws, none when the scenario has one group or no open or closed workload.
    static func census(_ scenario: Scenario, ranges: [Range<Int>]) -> [GroupPositions] {
        let groups = scenario.groups.count
        if groups == 1 || !scenario.groups.contains(where: { $0.workload != .lifecycle }) {
            return ranges.map { range in
                GroupPositions(before: [range.lowerBound] + Array(repeating: 0, count: groups - 1), total: [scenario.devices] + Array(repeating: 0, count: groups - 1))
            }
        }
        // Counts of each group before each range's first device, then the totals.
        let fleet = Fleet(scenario: scenario)
        let starts = ranges.map(\.lowerBound)
        var counts = Array(repeating: 0, count: groups)
        var before: [[Int]] = Array(repeating: counts, count: starts.count)
        var next = 0
        for index in 0..<scenario.devices {
            while next < starts.count && starts[next] == index {
                before[next] = counts
                next += 1
            }
            counts[fleet.groupIndex(at: index)] += 1
        }
        while next < starts.count {
            before[next] = counts
            next += 1
        }
        return before.map { GroupPositions(before: $0, total: counts) }
    }
}

/// One stream of an open-model group's arrivals, for devices of one partition.
///
/// Evenly spaced arrivals go round robin over the group's devices of the whole fleet, in fleet
/// order: arrival k (due where the rate's integral reaches k + 1) is for the device at position
/// k mod N. A partition holds a contiguous run of positions, so its stream computes only the
/// arrivals k whose position it holds, each from k alone: its work is its share of the load, and
/// any partition count or sharding gives each device the same arrivals at the same instants.
///
/// Poisson arrivals come from one stream per NAT address (the unit partitions and shards own):
/// the address's share of the rate (its devices of the group over the group's), drawn from its
/// own seeded stream, round robin over its devices. Independent Poisson streams whose rates add up
/// to the group's rate superpose to exactly the group's Poisson process, and how the run is cut
/// changes none of them.
struct ArrivalStream {
    enum Pattern {
        /// Positions `first..<first + count` of the group's `members`; `next` is the next arrival
        /// number k whose position this stream holds.
        case even(next: Int, members: Int, first: Int)
        /// The area (expected arrivals of the whole group) the last arrival fell at, and the
        /// group's over this stream's devices: each arrival adds an exponential draw times it.
        case poisson(area: Double, scale: Double, random: SeededRandom, turn: Int)
    }

    let group: Int
    /// This stream's devices, as positions in the partition's list of the group's devices.
    let devices: Range<Int>
    /// Its place among arrivals due at one instant (see `EventRank`).
    let rank: EventRank
    private var clock: ArrivalClock
    private var pattern: Pattern
    /// The device (a position in `devices`) of the arrival waiting in the queue.
    private(set) var due = 0

    init(group: Int, devices: Range<Int>, rank: EventRank, clock: ArrivalClock, pattern: Pattern) {
        self.group = group
        self.devices = devices
        self.rank = rank
        self.clock = clock
        self.pattern = pattern
    }

    /// The next arrival's instant, in exact seconds from the run's start (rounded only when
    /// scheduled), and makes it `due`; nil when the rate stays zero from here on.
    mutating func advance() -> Double? {
        let count = devices.count
        guard count > 0 else { return nil }
        switch pattern {
        case .even(let next, let members, let first):
            let position = next % members - first
            due = devices.lowerBound + position
            // The next arrival this stream holds: the next number, or the first of the next round.
            var following = next + 1
            if following % members - first >= count || following % members < first {
                let round = following / members + (following % members >= first ? 1 : 0)
                following = round * members + first
            }
            pattern = .even(next: following, members: members, first: first)
            return clock.time(atArea: Double(next) + 1)
        case .poisson(var area, let scale, var random, let turn):
            area += random.nextExponential(mean: 1) * scale
            due = devices.lowerBound + turn
            pattern = .poisson(area: area, scale: scale, random: random, turn: (turn + 1) % count)
            return clock.time(atArea: area)
        }
    }
}
