import Foundation
import Testing
@testable import PushSwarmCore

/// Open-model arrivals: exact instants (`ArrivalClock`), and streams that compute only the
/// arrivals of the devices they hold (`ArrivalStream`).
@Suite struct ArrivalTests {
    func workload(_ segments: [(seconds: Double, from: Double, to: Double)], poisson: Bool = false, start: Double = 0) -> OpenWorkload {
        OpenWorkload(segments: segments.map { .init(length: .seconds($0.seconds), fromRate: $0.from, toRate: $0.to) }, isPoisson: poisson, start: .seconds(start))
    }

    /// Every arrival of an evenly spaced stream holding `first..<first + count` of `members`
    /// positions, up to `seconds`: (arrival instant, position in the group).
    func evenArrivals(_ workload: OpenWorkload, members: Int, first: Int, count: Int, through seconds: Double) -> [(Double, Int)] {
        var stream = ArrivalStream(
            group: 0, devices: 0..<count, rank: EventRank(major: 0, minor: 0), clock: ArrivalClock(workload),
            pattern: .even(EvenTurns(members: members, first: first, count: count))
        )
        var arrivals: [(Double, Int)] = []
        while let time = stream.advance(), time <= seconds { arrivals.append((time, first + stream.due)) }
        return arrivals
    }

    @Test func theClocksInstantIsWhereTheRatesIntegralReachesTheArea() {
        // 2 s of nothing, a ramp from 0 to 1,000/s over 4 s, 3 s at 500/s, then 2,000/s on.
        let steps = workload([(2, 0, 0), (4, 0, 1_000), (3, 500, 500), (1, 2_000, 2_000)], start: 1)
        var clock = ArrivalClock(steps)
        var previous = 0.0
        for area in stride(from: 0.5, through: 9_000, by: 7.25) {
            let time = clock.time(atArea: area)!
            #expect(time >= previous, "instants never go back")
            previous = time
            #expect(abs(ArrivalClock(steps).area(at: time) - area) < 1e-6 * area, "area \(area) at \(time) s")
        }
        // The ramp's area is 2,000 by 7 s (1 s of start, 2 s of nothing, 4 s of ramp).
        var fresh = ArrivalClock(steps)
        #expect(abs(fresh.time(atArea: 2_000)! - 7) < 1e-9)
        // A rate that ends at zero has a last arrival.
        var ending = ArrivalClock(workload([(10, 100, 100), (5, 0, 0)]))
        #expect(ending.time(atArea: 1_000) != nil)
        #expect(ending.time(atArea: 1_000.5) == nil)
    }

    /// Issue 34: each arrival's instant comes from its number, not from the previous arrival's
    /// rounded instant, so a rate whose interval is not a whole microsecond is delivered.
    @Test(arguments: [1_234.0, 123_457, 777_777, 3_333_333])
    func evenArrivalsRoundedToTheMicrosecondKeepTheirCount(rate: Double) {
        let seconds = 40_000 / rate
        let arrivals = evenArrivals(workload([(seconds, rate, rate)]), members: 1, first: 0, count: 1, through: seconds)
        #expect(abs(Double(arrivals.count) - rate * seconds) <= 1)
        // Arrival k is due at (k + 1) / rate exactly, however many came before it.
        #expect(arrivals.enumerated().allSatisfy { abs($0.element.0 - Double($0.offset + 1) / rate) < 1e-9 })
    }

    @Test func streamsThatSplitTheGroupsPositionsGiveTheWholeGroupsArrivalsAndOnlyTheirOwn() {
        let ramp = workload([(2, 100, 1_300), (1, 700, 700)])
        let whole = evenArrivals(ramp, members: 10, first: 0, count: 10, through: 3)
        #expect(whole.count == 2_100)
        // Every position once a round, in the same turn order each round: the device at position
        // x takes arrivals k with k mod 10 = (x × spread) mod 10.
        let spread = EvenTurns.spread(members: 10)
        #expect(whole.enumerated().allSatisfy { $0.element.1 * spread % 10 == $0.offset % 10 })
        #expect(Set(whole.prefix(10).map(\.1)).count == 10)
        var parts: [(Double, Int)] = []
        for (first, count) in [(0, 3), (3, 4), (7, 1), (8, 2)] {
            let part = evenArrivals(ramp, members: 10, first: first, count: count, through: 3)
            #expect(part.allSatisfy { (first..<first + count).contains($0.1) }, "a stream computes only its own positions' arrivals")
            #expect(part.count == whole.filter { (first..<first + count).contains($0.1) }.count)
            parts += part
        }
        let sorted = parts.sorted { $0.0 < $1.0 || ($0.0 == $1.0 && $0.1 < $1.1) }
        #expect(sorted.count == whole.count)
        #expect(zip(sorted, whole).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }, "the same instants for the same positions")
    }

    /// Consecutive arrivals of an evenly spaced group fall on other NAT addresses: 6,000 devices
    /// of 30 to an address at 1,800/s (the nightly's SmartAppPush) give no address more than 2
    /// arrivals in any 100 ms, where walking the fleet in order gave one address 30 in 17 ms, and
    /// the spec's 10 requests/s per IP refused half.
    @Test func evenArrivalsSpreadOverAddresses() {
        let arrivals = evenArrivals(workload([(10, 1_800, 1_800)]), members: 6_000, first: 0, count: 6_000, through: 10)
        #expect(arrivals.count == 18_000)
        var worst = 0
        var window: [(Double, Int)] = []
        var counts: [Int: Int] = [:]
        for arrival in arrivals {
            window.append(arrival)
            counts[arrival.1 / 30, default: 0] += 1
            while let oldest = window.first, oldest.0 <= arrival.0 - 0.1 {
                counts[oldest.1 / 30, default: 0] -= 1
                window.removeFirst()
            }
            worst = max(worst, counts[arrival.1 / 30] ?? 0)
        }
        #expect(worst <= 2, "an address got \(worst) arrivals within 100 ms")
    }

    @Test func poissonStreamsPerAddressAddUpToTheGroupsRate() {
        // 40 addresses of 1 to 5 devices; each stream carries its devices' share of 2,000/s.
        let open = workload([(30, 2_000, 2_000)], poisson: true)
        let sizes = (0..<40).map { 1 + $0 % 5 }
        let total = sizes.reduce(0, +)
        var counts: [Int] = []
        for (address, size) in sizes.enumerated() {
            var stream = ArrivalStream(
                group: 0, devices: 0..<size, rank: EventRank(major: 0, minor: UInt32(address)), clock: ArrivalClock(open),
                pattern: .poisson(area: 0, scale: Double(total) / Double(size), random: SeededRandom(seed: 9, stream: .arrivals, index: UInt64(address)), turn: 0)
            )
            var count = 0
            var turns: [Int] = []
            while let time = stream.advance(), time <= 30 {
                count += 1
                if turns.count < 2 * size { turns.append(stream.due) }
            }
            // Round robin over the address's devices.
            #expect(turns == Array(0..<size) + Array(0..<size))
            counts.append(count)
        }
        // 60,000 expected in all (σ ≈ 245); each address in proportion to its devices.
        let sum = counts.reduce(0, +)
        #expect(abs(sum - 60_000) < 1_000, "\(sum)")
        let fives = zip(sizes, counts).filter { $0.0 == 5 }.map(\.1).reduce(0, +)
        let ones = zip(sizes, counts).filter { $0.0 == 1 }.map(\.1).reduce(0, +)
        #expect(Double(fives) / Double(ones) > 4 && Double(fives) / Double(ones) < 6)
    }

    @Test func rankedItemsComeBeforeUnrankedOnesAtTheirInstantInRankOrder() {
        var queue = EventQueue<String>()
        queue.schedule("plain", at: Instant(microseconds: 10))
        queue.schedule("g1", at: Instant(microseconds: 10), rank: EventRank(major: 1, minor: 0))
        queue.schedule("g0-a7", at: Instant(microseconds: 10), rank: EventRank(major: 0, minor: 7))
        queue.schedule("early", at: Instant(microseconds: 9))
        queue.schedule("g0-a2", at: Instant(microseconds: 10), rank: EventRank(major: 0, minor: 2))
        var order: [String] = []
        while let (_, item) = queue.popNext() { order.append(item) }
        #expect(order == ["early", "g0-a2", "g0-a7", "g1", "plain"])
    }
}
