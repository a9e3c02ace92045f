import Foundation
public import PushSwarmSystem

/// The one source of randomness in a run: xoshiro256** seeded through SplitMix64.
///
/// Every consumer gets its own stream, derived from (run seed, stream, index), so device 4711 draws
/// the same numbers whether the run has ten devices or a million, and whichever shard runs it.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: (UInt64, UInt64, UInt64, UInt64)
    /// Mixed into the identifiers the stream makes (`nextUUID`), never into its numbers: a wall
    /// run sets one per run, so two runs of one seed never send the same request ids, session ids
    /// or event bodies, while every draw (who does what, when) stays the seed's. 0 in simulated
    /// time: a run is byte-identical for its seed.
    public var identifierNonce: UInt64 = 0

    /// Named streams, so that adding draws to one consumer never shifts another's numbers.
    public enum Stream: UInt64, Sendable {
        case device = 1
        case deviceProfile = 2
        case mock = 3
        case campaign = 4
        case network = 5
        case delivery = 6
        /// A closed-model user's think times, per device.
        case workload = 7
        /// A push's delivery delay and reachability, per receiving device.
        case pushDelivery = 8
        /// What a user does with one push, from its `PushNotification.fate`.
        case notificationFate = 9
        /// An open workload's Poisson arrivals, per group and NAT address (`ArrivalStream`).
        case arrivals = 10
    }

    public init(seed: UInt64, stream: Stream, index: UInt64 = 0) {
        var mixer = seed ^ (stream.rawValue &* 0x9E37_79B9_7F4A_7C15) ^ (index &* 0xD1B5_4A32_D192_ED03)
        state = (Self.splitMix(&mixer), Self.splitMix(&mixer), Self.splitMix(&mixer), Self.splitMix(&mixer))
    }

    private static func splitMix(_ value: inout UInt64) -> UInt64 {
        value &+= 0x9E37_79B9_7F4A_7C15
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public mutating func next() -> UInt64 {
        let result = (state.1 &* 5).rotatedLeft(by: 7) &* 9
        let shifted = state.1 << 17
        state.2 ^= state.0
        state.3 ^= state.1
        state.1 ^= state.2
        state.0 ^= state.3
        state.2 ^= shifted
        state.3 = state.3.rotatedLeft(by: 45)
        return result
    }

    /// Uniform in [0, 1), 53 random bits.
    public mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// True with probability `probability`.
    public mutating func chance(_ probability: Double) -> Bool {
        probability >= 1 || (probability > 0 && nextUnit() < probability)
    }

    /// Uniform integer in 0..<bound.
    public mutating func nextIndex(below bound: Int) -> Int {
        precondition(bound > 0)
        return Int(next(upperBound: UInt64(bound)))
    }

    /// Standard normal variate (Box–Muller; one value per call keeps the stream simple).
    public mutating func nextGaussian() -> Double {
        var u1 = nextUnit()
        while u1 <= .leastNormalMagnitude { u1 = nextUnit() }
        let u2 = nextUnit()
        return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
    }

    /// Exponential variate with the given mean.
    public mutating func nextExponential(mean: Double) -> Double {
        var u = nextUnit()
        while u <= .leastNormalMagnitude { u = nextUnit() }
        return -mean * log(u)
    }

    /// Poisson variate with the given mean (inversion; means here are small).
    public mutating func nextPoisson(mean: Double) -> Int {
        guard mean > 0 else { return 0 }
        if mean > 30 {
            return max(0, Int((mean + mean.squareRoot() * nextGaussian()).rounded()))
        }
        let limit = exp(-mean)
        var product = nextUnit()
        var count = 0
        while product > limit {
            product *= nextUnit()
            count += 1
        }
        return count
    }

    /// Picks an index with probability proportional to its weight. Weights must not all be zero.
    public mutating func pickIndex(weights: [Double], total: Double) -> Int {
        var target = nextUnit() * total
        for (index, weight) in weights.enumerated() {
            target -= weight
            if target < 0 { return index }
        }
        return weights.lastIndex { $0 > 0 } ?? 0
    }

    /// 16 random bytes formatted as a version-4 UUID, lower case.
    public mutating func nextUUID() -> String { nextUUIDValue().string }

    /// `nextUUID` as its 16 bytes, for one kept long (a device's session id): 16 bytes in place
    /// where its text takes a string's allocation of 80.
    public mutating func nextUUIDValue() -> UUIDValue {
        let high = next() ^ identifierNonce
        let low = next() ^ (identifierNonce &* 0x9E37_79B9_7F4A_7C15)
        // Version 4 (byte 6's high nibble), variant 10 (byte 8's top bits).
        return UUIDValue(high: high & ~0x0000_0000_0000_F000 | 0x0000_0000_0000_4000, low: low & ~0xC000_0000_0000_0000 | 0x8000_0000_0000_0000)
    }
}

/// A UUID's 16 bytes, big-endian in two words; written as lower-case text (8-4-4-4-12) when asked.
public struct UUIDValue: Sendable, Equatable, Hashable {
    public var high: UInt64
    public var low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// Calls `body` with the 36 bytes of the text, written on the stack. Inlinable, so that a
    /// caller in another module gets it specialized: unspecialized, each call instantiated generic
    /// metadata.
    @inlinable
    public func withUTF8<Result>(_ body: (Span<UInt8>) -> Result) -> Result {
        // 8-4-4-4-12 digits: each half's sixteen made eight at a time (`Hex.eightDigits`) and
        // stored around the dashes, a word at a time.
        var bytes = InlineArray<40, UInt8>(repeating: UInt8(ascii: "-"))
        do {
            var text = bytes.mutableSpan
            let second = Hex.eightDigits(UInt32(truncatingIfNeeded: high))
            let third = Hex.eightDigits(UInt32(truncatingIfNeeded: low >> 32))
            text.storeLittleEndian(Hex.eightDigits(UInt32(truncatingIfNeeded: high >> 32)), at: 0)
            text.storeLittleEndian(UInt32(truncatingIfNeeded: second), at: 9)
            text.storeLittleEndian(UInt32(truncatingIfNeeded: second >> 32), at: 14)
            text.storeLittleEndian(UInt32(truncatingIfNeeded: third), at: 19)
            text.storeLittleEndian(UInt32(truncatingIfNeeded: third >> 32), at: 24)
            text.storeLittleEndian(Hex.eightDigits(UInt32(truncatingIfNeeded: low)), at: 28)
        }
        return body(bytes.span.extracting(..<36))
    }

    public var string: String { withUTF8 { String(decodingUTF8: $0) } }
}

extension UInt64 {
    @inline(__always)
    func rotatedLeft(by amount: UInt64) -> UInt64 {
        (self << amount) | (self >> (64 - amount))
    }
}
