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
        /// Positions `first..<first + count` of the group's `members`, visited in the group's
        /// turn order (`EvenTurns`).
        case even(EvenTurns)
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
        case .even(var turns):
            let (number, position) = turns.next()
            due = devices.lowerBound + position
            pattern = .even(turns)
            return clock.time(atArea: Double(number) + 1)
        case .poisson(var area, let scale, var random, let turn):
            area += random.nextExponential(mean: 1) * scale
            due = devices.lowerBound + turn
            pattern = .poisson(area: area, scale: scale, random: random, turn: (turn + 1) % count)
            return clock.time(atArea: area)
        }
    }
}

/// Which of an evenly spaced group's devices each arrival is for. The device at position x (in
/// fleet order) takes arrival numbers k with k mod members = (x × spread) mod members, `spread`
/// coprime with `members` and near members / φ: the devices of one NAT address, a run of
/// consecutive positions, take numbers spread evenly over each round (the three-distance theorem),
/// so each address gets its devices' share of the rate evenly, as phones whose users act
/// independently send. Arrival k was once for position k mod members: the devices of one address
/// in a row, 30 arrivals in 17 ms on one address in the nightly, and a spec's limit of
/// 10 requests/s per IP refused half of a load of 9/s per address.
///
/// A stream that holds positions `first..<first + count` (a partition's) gets exactly the
/// arrivals of its positions, in order of k, whatever the other partitions hold: results do not
/// depend on the partition count.
struct EvenTurns {
    let members: Int
    let first: Int
    /// What turns a residue (k mod members) back into its position: spread's inverse.
    private let inverse: UInt64
    /// k mod members of each position held, ascending.
    private let residues: [Int]
    /// Arrivals this stream has handed out.
    private var turn = 0

    init(members: Int, first: Int, count: Int) {
        let modulus = max(1, members)
        self.members = modulus
        self.first = first
        let spread = UInt64(Self.spread(members: modulus))
        inverse = UInt64(Self.inverse(of: Int(spread), modulo: modulus))
        // Positions and multipliers are under the fleet's size (at most 10^7): products fit.
        residues = (first..<first + count).map { position in Int(UInt64(position) &* spread % UInt64(modulus)) }.sorted()
    }

    /// The next arrival's number in the group and the position it is for, relative to `first`.
    mutating func next() -> (number: Int, position: Int) {
        let count = max(1, residues.count)
        let residue = residues[turn % count]
        let number = turn / count * members + residue
        turn += 1
        let position = Int(UInt64(residue) &* inverse % UInt64(members))
        return (number, position - first)
    }

    /// The smallest number from members / φ on that is coprime with `members`.
    static func spread(members: Int) -> Int {
        guard members > 2 else { return 1 }
        var candidate = max(1, Int(Double(members) * 0.618_033_988_749_895))
        while gcd(candidate, members) != 1 { candidate += 1 }
        return candidate
    }

    private static func gcd(_ a: Int, _ b: Int) -> Int {
        var (a, b) = (a, b)
        while b != 0 { (a, b) = (b, a % b) }
        return a
    }

    /// x with (value × x) mod modulus = 1 (extended Euclid; value and modulus coprime).
    private static func inverse(of value: Int, modulo modulus: Int) -> Int {
        guard modulus > 1 else { return 0 }
        var (oldR, r) = (value, modulus)
        var (oldS, s) = (1, 0)
        while r != 0 {
            let quotient = oldR / r
            (oldR, r) = (r, oldR - quotient * r)
            (oldS, s) = (s, oldS - quotient * s)
        }
        return ((oldS % modulus) + modulus) % modulus
    }
}
