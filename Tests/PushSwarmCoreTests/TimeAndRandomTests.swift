import Foundation
import Testing
import PushSwarmMetrics
@testable import PushSwarmCore

@Suite struct EventQueueTests {
    @Test func itemsComeOutInTimeOrderAndTiesInSchedulingOrder() {
        var queue = EventQueue<String>()
        queue.schedule("c", at: Instant(microseconds: 30))
        queue.schedule("a1", at: Instant(microseconds: 10))
        queue.schedule("b", at: Instant(microseconds: 20))
        queue.schedule("a2", at: Instant(microseconds: 10))
        queue.schedule("a3", at: Instant(microseconds: 10))
        var order: [String] = []
        while let (_, item) = queue.popNext() { order.append(item) }
        #expect(order == ["a1", "a2", "a3", "b", "c"])
    }

    @Test func manyRandomTimesComeOutSortedWhilePopsAndPushesInterleave() {
        var queue = EventQueue<Int>()
        var random = SeededRandom(seed: 5, stream: .device)
        var popped = 0
        for index in 0..<10_000 {
            queue.schedule(index, at: Instant(microseconds: Int64(random.nextIndex(below: 300))))
            if index % 3 == 0, queue.popNext() != nil { popped += 1 }
        }
        var last = (time: Int64.min, index: -1)
        while let (time, index) = queue.popNext() {
            #expect(time.microseconds >= last.time)
            // Of two items due at one instant, the one scheduled first comes out first.
            if time.microseconds == last.time { #expect(index > last.index, "\(index) after \(last.index) at \(time.microseconds)") }
            last = (time.microseconds, index)
            popped += 1
        }
        #expect(popped == 10_000, "every item comes out once")
    }

    /// `nextHint` is the hint of the item `popNext` will return, and reading it takes nothing.
    @Test func theNextItemsHintIsReadWithoutTakingIt() {
        var queue = EventQueue<Int>()
        #expect(queue.nextHint == nil)
        var random = SeededRandom(seed: 9, stream: .device)
        for index in 0..<500 { queue.schedule(index, at: Instant(microseconds: Int64(random.nextIndex(below: 50))), hint: Int32(index % 7 == 0 ? -1 : 1_000 + index)) }
        while let hint = queue.nextHint {
            let count = queue.count
            #expect(queue.nextHint == hint)
            guard let next = queue.popNext()?.item else { break }
            #expect(hint == Int32(next % 7 == 0 ? -1 : 1_000 + next))
            #expect(queue.count == count - 1)
        }
        #expect(queue.isEmpty)
    }
}

@Suite struct SHA256Tests {
    // FIPS 180-4 examples.
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func matchesTheStandardsTestVectors(message: String, digest: String) {
        #expect(SHA256.hash(message).hexString == digest)
    }

    @Test func hashesAMillionAs() {
        let message = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hash(message).hexString == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}

@Suite struct HexTests {
    /// Eight digits at once (`Hex.eightDigits`) are `String(radix: 16)`'s, zero-padded, for
    /// every nibble value in every place: each place's 0, 9, a and f among them.
    @Test func eightDigitsAtOnceAreTheDigitsOneByOne() {
        var values: [UInt32] = [0, 1, 9, 0xA, 0xF, 0x10, 0x9A, 0xFFFF_FFFF, 0x8000_0000, 0x0123_4567, 0x89AB_CDEF, 0xA0A0_A0A0, 0x0909_0909]
        for shift in stride(from: UInt32(0), to: 32, by: 4) {
            for nibble: UInt32 in [0x9, 0xA, 0xF] { values.append(nibble << shift) }
        }
        var random = SeededRandom(seed: 5, stream: .device, index: 1)
        for _ in 0..<1_000 { values.append(UInt32(truncatingIfNeeded: random.next())) }
        for value in values {
            let word = Hex.eightDigits(value).littleEndian
            let text = withUnsafeBytes(of: word) { String(decoding: $0, as: UTF8.self) }
            let expected = String(value, radix: 16)
            #expect(text == String(repeating: "0", count: 8 - expected.count) + expected, "\(value)")
        }
    }
}

@Suite struct LedgerKeyTests {
    @Test func fieldsAreKeptApartByTheirLengths() {
        #expect(LedgerKey("ab", "c") != LedgerKey("a", "bc"))
        #expect(LedgerKey("abc") != LedgerKey("ab", "c"))
        #expect(LedgerKey("a", "") != LedgerKey("a"))
    }

    @Test func equalFieldsGiveEqualKeysAndAnyChangedByteAnotherKey() {
        let token = "fcm:" + String(repeating: "x", count: 150)
        #expect(LedgerKey("events", token) == LedgerKey("events", token))
        var seen: Set<LedgerKey> = [LedgerKey("events", token)]
        var bytes = Array(token.utf8)
        for index in bytes.indices {
            let original = bytes[index]
            bytes[index] ^= 1
            #expect(seen.insert(LedgerKey("events", String(decoding: bytes, as: UTF8.self))).inserted, "byte \(index)")
            bytes[index] = original
        }
    }

    /// Every length's last bytes count, whatever is left after the 16- and 8-byte steps (the
    /// tail goes into the hash by one copy).
    @Test func everyByteOfEveryLengthChangesTheKey() {
        for length in 1...40 {
            var bytes = (0..<length).map { UInt8(97 + $0 % 26) }
            var seen: Set<LedgerKey> = [LedgerKey(String(decoding: bytes, as: UTF8.self))]
            for index in bytes.indices {
                let original = bytes[index]
                bytes[index] ^= 1
                #expect(seen.insert(LedgerKey(String(decoding: bytes, as: UTF8.self))).inserted, "length \(length), byte \(index)")
                bytes[index] = original
            }
        }
    }

    @Test func jsonObjectsAreHashedWithTheirMembersSortedAndNumbersByValue() {
        func key(_ value: JSONValue) -> LedgerKey {
            var builder = LedgerKey.Builder()
            builder.add(value)
            return builder.key
        }
        #expect(key(["a": 1, "b": ["c": true]]) == key(["b": ["c": true], "a": 1.0]))
        #expect(key(["a": 1]) != key(["a": "1"]))
        #expect(key(["a": .null]) != key([:]))
        #expect(key([1, 2]) != key([2, 1]))
    }
}

@Suite struct RFC3339Tests {
    @Test func formatsLocalTimeWithMillisecondsAndOffset() {
        // 2026-03-02T00:00:00Z plus 123 ms.
        let micros: Int64 = 1_772_409_600_123_000
        #expect(RFC3339.format(unixMicroseconds: micros, offsetSeconds: 10_800) == "2026-03-02T03:00:00.123+03:00")
        #expect(RFC3339.format(unixMicroseconds: micros, offsetSeconds: -18_000) == "2026-03-01T19:00:00.123-05:00")
        #expect(RFC3339.format(unixMicroseconds: micros, offsetSeconds: 19_800) == "2026-03-02T05:30:00.123+05:30")
        #expect(RFC3339.format(unixMicroseconds: micros, offsetSeconds: 0, utcAsZ: true) == "2026-03-02T00:00:00.123Z")
    }

    // Times are written into a fixed layout; a year with five digits must still come out whole.
    @Test func aYearBeyondFourDigitsIsWrittenWhole() {
        // 10000-01-01T00:00:00Z.
        let micros: Int64 = 253_402_300_800_000_000
        #expect(RFC3339.format(unixMicroseconds: micros, offsetSeconds: 0, utcAsZ: true) == "10000-01-01T00:00:00.000Z")
        #expect(RFC3339.format(unixMicroseconds: micros, offsetSeconds: 3_600) == "10000-01-01T01:00:00.000+01:00")
    }

    /// A timestamp held in place (`RFC3339.Text`, what devices stamp events with, and what
    /// `format` makes its string from) reads back as the instant it was made from, at every
    /// offset, from the first year to the last of four digits (0000 and 9999 written out); its count is its text's length.
    @Test func textHeldInPlaceReadsBackAsItsInstant() {
        for micros: Int64 in [1_772_409_600_123_000, 0, -62_135_596_800_000_000, 253_402_171_200_000_000] {
            for (offset, utcAsZ) in [(0, true), (0, false), (19_800, false), (-18_000, false)] {
                let text = RFC3339.text(unixMicroseconds: micros, offsetSeconds: offset, utcAsZ: utcAsZ)
                #expect(RFC3339.parse(text.string) == micros, "\(text.string)")
                #expect(text.count == text.string.utf8.count)
            }
        }
    }

    @Test(arguments: ["2026-03-29T14:30:00+03:00", "2026-03-29T11:30:00Z", "2026-03-29T11:30:00.5z", "2024-02-29T00:00:00-00:30"])
    func acceptsValidTimestamps(text: String) {
        #expect(RFC3339.parse(text) != nil)
    }

    @Test(arguments: ["2026-03-29T14:30:00", "2026-03-29 14:30:00Z", "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z",
                      "2026-03-29T24:00:00Z", "2026-03-29T14:30:00+3:00", "2026-03-29T14:30:00.Z", "29/03/2026", ""])
    func rejectsInvalidTimestamps(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }

    /// The head of a timestamp (`YYYY-MM-DDTHH:MM:SS`) is read as words at once: every byte of it
    /// changed to digits, separators, letters and bytes past ASCII must give what reading the
    /// head byte by byte (the reading this replaced, `headByteByByte`) with the same tail gives.
    @Test func theHeadReadAtOnceAgreesWithReadingItByteByByte() throws {
        let bases = ["2026-03-29T14:30:00.123+03:00", "2024-02-29t23:59:60Z", "0000-01-01T00:00:00-23:59", "9999-12-31T23:59:59.999999Z"]
        let replacements: [UInt8] = Array("0123456789-:Tt/ aZ.+".utf8) + [0x00, 0x2F, 0x3A, 0x7F, 0x80, 0x8A, 0xB0, 0xFF]
        var checked = 0
        for base in bases {
            let bytes = Array(base.utf8)
            // What the tail (fraction and offset) adds to the head's seconds.
            let whole = try #require(RFC3339.parse(base))
            let head = try #require(Self.headByteByByte(bytes))
            let tail = whole - head * 1_000_000
            for position in 0..<19 {
                for replacement in replacements {
                    var mutated = bytes
                    mutated[position] = replacement
                    let expected = Self.headByteByByte(mutated).map { $0 * 1_000_000 + tail }
                    let parsed = RFC3339.parse(utf8: mutated.span)
                    #expect(parsed == expected, "\(String(decoding: mutated, as: UTF8.self))")
                    checked += 1
                }
            }
            // Cut short anywhere, it lacks its offset (or part of it): nil.
            for length in 0..<bytes.count {
                let parsed = RFC3339.parse(utf8: bytes.span.extracting(..<length))
                #expect(parsed == nil)
            }
        }
        #expect(checked == bases.count * 19 * replacements.count)
    }

    /// The seconds of a valid `YYYY-MM-DDTHH:MM:SS` head, read a digit and a separator at a time.
    static func headByteByByte(_ bytes: [UInt8]) -> Int64? {
        guard bytes.count >= 19 else { return nil }
        var index = 0
        func digits(_ count: Int) -> Int? {
            var value = 0
            for byte in bytes[index..<index + count] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += count
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = digits(4), expect("-"), let month = digits(2), expect("-"), let day = digits(2), expect("Tt"),
            let hour = digits(2), expect(":"), let minute = digits(2), expect(":"), let second = digits(2),
            (1...12).contains(month), day >= 1, day <= RFC3339.daysIn(month: month, year: year), hour <= 23, minute <= 59, second <= 60
        else { return nil }
        return RFC3339.days(fromCivil: year, month, day) * 86_400 + Int64(hour * 3_600 + minute * 60 + second)
    }

    @Test func parsingInvertsFormatting() {
        for micros: Int64 in [0, 951_782_400_000_000, 1_772_409_600_123_000, 4_102_444_799_999_000] {
            for offset in [-36_000, -18_000, 0, 19_800, 50_400] {
                #expect(RFC3339.parse(RFC3339.format(unixMicroseconds: micros, offsetSeconds: offset)) == micros)
            }
        }
    }

    @Test func zoneOffsetsFollowDaylightSavingTransitions() {
        // New York moves to EDT on 2026-03-08 at 07:00 UTC.
        let zones = ZoneOffsets(zones: ["America/New_York", "Asia/Kolkata"], from: 1_772_409_600, through: 1_773_619_200)
        #expect(zones.offsetSeconds(zone: "America/New_York", atUnixSeconds: 1_772_409_600) == -18_000)
        #expect(zones.offsetSeconds(zone: "America/New_York", atUnixSeconds: 1_773_000_000) == -14_400)
        #expect(zones.offsetSeconds(zone: "Asia/Kolkata", atUnixSeconds: 1_773_000_000) == 19_800)
        // A zone left out of the table: not contained, offset 0.
        #expect(zones.contains("Asia/Kolkata") && !zones.contains("Europe/Paris"))
        #expect(zones.offsetSeconds(zone: "Europe/Paris", atUnixSeconds: 1_773_000_000) == 0)
        #expect(ZoneOffsets.isKnown("Asia/Kolkata"), "a tz link name Foundation does not list on Linux")
        #expect(!ZoneOffsets.isKnown("Mars/Olympus_Mons"))
    }
}

@Suite struct TimeSpanTests {
    @Test(arguments: [("250ms", 250_000), ("90s", 90_000_000), ("7m", 420_000_000), ("24h", 86_400_000_000),
                      ("1h30m", 5_400_000_000), ("1.5s", 1_500_000), ("2d", 172_800_000_000), ("3600", 3_600_000_000)])
    func parsesDurationsWithUnits(text: String, microseconds: Int64) {
        #expect(TimeSpan(parsing: text)?.microseconds == microseconds)
    }

    @Test(arguments: ["", "ms", "5 minutes", "-3s", "5x", "1h-2m", "nan"])
    func rejectsWhatIsNotADuration(text: String) {
        #expect(TimeSpan(parsing: text) == nil)
    }
}

@Suite struct SeededRandomTests {
    @Test func aStreamIsTheSameForTheSameSeedAndIndexAndDiffersOtherwise() {
        var first = SeededRandom(seed: 9, stream: .device, index: 42)
        var again = SeededRandom(seed: 9, stream: .device, index: 42)
        var otherIndex = SeededRandom(seed: 9, stream: .device, index: 43)
        var otherStream = SeededRandom(seed: 9, stream: .mock, index: 42)
        let a = (0..<8).map { _ in first.next() }
        #expect(a == (0..<8).map { _ in again.next() })
        #expect(a != (0..<8).map { _ in otherIndex.next() })
        #expect(a != (0..<8).map { _ in otherStream.next() })
    }

    @Test func distributionsHaveTheirMeans() {
        var random = SeededRandom(seed: 3, stream: .device)
        let count = 200_000
        for distribution in [Distribution.exponential(mean: 5), .logNormal(median: 2, sigma: 0.8), .uniform(minimum: 1, maximum: 3)] {
            var sum = 0.0
            for _ in 0..<count { sum += distribution.sample(using: &random) }
            let mean = sum / Double(count)
            #expect(abs(mean - distribution.mean) / distribution.mean < 0.02, "\(distribution): \(mean)")
        }
    }

    @Test func uuidsAreVersionFour() {
        var random = SeededRandom(seed: 1, stream: .device)
        let uuid = random.nextUUID()
        #expect(uuid.count == 36)
        let parts = uuid.split(separator: "-")
        #expect(parts.map(\.count) == [8, 4, 4, 4, 12])
        #expect(parts[2].first == "4")
        #expect("89ab".contains(parts[3].first ?? "x"))
    }

    /// A UUID kept as its two words writes the text of the same 16 bytes (checked against
    /// Foundation's formatting), and the text made from a stream is the bytes its next two words
    /// give, with the version and variant bits set.
    @Test func uuidWordsWriteTheTextOfTheirBytes() {
        var random = SeededRandom(seed: 3, stream: .device, index: 7)
        for _ in 0..<200 {
            var copy = random
            let value = random.nextUUIDValue()
            #expect(copy.nextUUID() == value.string)
            var bytes = [UInt8](repeating: 0, count: 16)
            for index in 0..<8 {
                bytes[index] = UInt8(truncatingIfNeeded: value.high >> (56 - 8 * UInt64(index)))
                bytes[8 + index] = UInt8(truncatingIfNeeded: value.low >> (56 - 8 * UInt64(index)))
            }
            #expect(bytes[6] >> 4 == 4 && bytes[8] >> 6 == 2)
            let foundation = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
            #expect(value.string == foundation.uuidString.lowercased())
        }
    }

    /// A wall run's nonce changes the ids a device makes and nothing else: the same draws, in the
    /// same order, so both clocks still agree on what happens; with no nonce, the seed's ids.
    @Test func aNonceChangesIdentifiersNotDraws() {
        func stream(_ nonce: UInt64) -> SeededRandom {
            var random = SeededRandom(seed: 5, stream: .device, index: 9)
            random.identifierNonce = nonce
            return random
        }
        var plain = stream(0), again = stream(0), first = stream(0xA5A5), second = stream(0x5A5A)
        let ids = (0..<4).map { _ in (plain.nextUUID(), again.nextUUID(), first.nextUUID(), second.nextUUID()) }
        #expect(ids.allSatisfy { $0.0 == $0.1 }, "no nonce: the seed's ids")
        #expect(ids.allSatisfy { $0.0 != $0.2 && $0.2 != $0.3 }, "each run its own")
        #expect(ids.allSatisfy { $0.2.split(separator: "-")[2].first == "4" }, "still version 4")
        let draws = [plain, first, second].map { random -> [UInt64] in
            var random = random
            return (0..<8).map { _ in random.next() }
        }
        #expect(draws[0] == draws[1] && draws[1] == draws[2])
    }
}

@Suite struct SlidingWindowLimiterTests {
    // A day's fleet touches every address; a key must not hold memory once nothing of it is left
    // in the window, and dropping it must not change any answer.
    @Test func keysWithNothingLeftInTheWindowAreDroppedWithoutChangingAdmissions() {
        var limiter = SlidingWindowLimiter<Int>(limit: 2, window: .seconds(1))
        let keys = SlidingWindowLimiter<Int>.minimumLogsToSweep + 1_000  // enough for a sweep
        for key in 0..<keys { _ = limiter.admit(key, at: Instant(microseconds: Int64(key))) }
        #expect(limiter.trackedKeys == keys)
        // Key 7 stays busy across the sweep; the others fall silent.
        var now = Instant.start
        for step in 1...130 {
            now = Instant(microseconds: Int64(step) * 600_000)
            let admission = limiter.admit(7, at: now)
            #expect(admission == .admitted, "one admit each 0.6 s is within 2 per second")
        }
        #expect(limiter.trackedKeys == 1, "only the busy key is still tracked")
        #expect(limiter.admit(7, at: now + .milliseconds(1)) != .admitted, "the busy key's log survived the sweep: a third in one second is refused")
        #expect(limiter.admit(3, at: now) == .admitted, "a dropped key starts afresh, as it would have")
        // New keys take the dropped keys' rings: each starts empty, whatever the ring held before.
        for key in 100_000..<100_900 {
            #expect(limiter.admit(key, at: now) == .admitted)
            #expect(limiter.admit(key, at: now) == .admitted)
            #expect(limiter.admit(key, at: now) != .admitted, "key \(key): a third in one second is refused")
        }
        #expect(limiter.allocatedSlots == keys * 2, "the rings of dropped keys were reused, none added")
    }

    /// A sweep walks every log, so it waits, past its minute, until the logs are many: a few
    /// quiet keys a minute do not pay a walk each minute.
    @Test func aSweepWaitsUntilTheLogsAreMany() {
        var limiter = SlidingWindowLimiter<Int>(limit: 2, window: .seconds(1))
        let few = SlidingWindowLimiter<Int>.minimumLogsToSweep / 2
        for key in 0..<few { _ = limiter.admit(key, at: Instant(microseconds: Int64(key))) }
        // Ten minutes later, still fewer logs than a sweep needs: none is dropped.
        _ = limiter.admit(-1, at: Instant(microseconds: 600_000_000))
        #expect(limiter.trackedKeys == few + 1)
        // As many new keys again, within the same second: once the logs are many enough, an
        // admission sweeps the quiet ones away; the keys of this second stay.
        for key in few..<(2 * few) { _ = limiter.admit(key, at: Instant(microseconds: 600_000_001)) }
        #expect(limiter.trackedKeys == few + 1, "the first keys, quiet for ten minutes, are dropped")
    }

    /// A limit set high to lift a spec's limit costs what the traffic puts in the window: rings
    /// of `limit` slots were 8 MB a key at a million a second, zeroed as each address first sent.
    @Test func aHighLimitsRingsGrowWithWhatTheWindowHolds() {
        var limiter = SlidingWindowLimiter<Int>(limit: 1_000_000, window: .seconds(1))
        for key in 0..<1_000 { #expect(limiter.admit(key, at: Instant(microseconds: Int64(key))) == .admitted) }
        #expect(limiter.allocatedSlots == 1_000 * 16, "a first ring of 16 admits a key")
        // One key busy: 5,000 admits within a second, then the limit still counts them all.
        var small = SlidingWindowLimiter<Int>(limit: 3_000, window: .seconds(1))
        var admitted = 0
        for step in 0..<5_000 where small.admit(7, at: Instant(microseconds: Int64(step) * 100)) == .admitted { admitted += 1 }
        #expect(admitted == 3_000, "exactly the limit within the window, across ring growths")
        #expect(small.allocatedSlots <= 3 * 3_000, "rings doubled up to the limit: \(small.allocatedSlots)")
        // The window slides: the first admit leaves after 1 s, and one more is admitted.
        #expect(small.admit(7, at: Instant(microseconds: 1_000_001)) == .admitted)
        #expect(small.admit(7, at: Instant(microseconds: 1_000_002)) != .admitted)
    }

    @Test func noWindowOfOneSecondAdmitsMoreThanTheLimit() {
        var limiter = SlidingWindowLimiter<Int>(limit: 10, window: .seconds(1))
        var admitted: [Int64] = []
        var random = SeededRandom(seed: 2, stream: .mock)
        var now: Int64 = 0
        for _ in 0..<5_000 {
            now += Int64(random.nextExponential(mean: 20_000))
            if limiter.admit(0, at: Instant(microseconds: now)) == .admitted { admitted.append(now) }
        }
        for (index, time) in admitted.enumerated() where index >= 10 {
            #expect(time - admitted[index - 10] > 1_000_000)
        }
        // At about 50 requests/s offered, the limit is what gets through: 10 per second.
        let seconds = Double(now) / 1_000_000
        #expect(abs(Double(admitted.count) / seconds - 10) < 0.5)
    }

    @Test func retryAfterSaysWhenTheOldestAdmissionLeavesTheWindow() {
        var limiter = SlidingWindowLimiter<String>(limit: 2, window: .seconds(1))
        #expect(limiter.admit("ip", at: Instant(microseconds: 0)) == .admitted)
        #expect(limiter.admit("ip", at: Instant(microseconds: 300_000)) == .admitted)
        #expect(limiter.admit("ip", at: Instant(microseconds: 400_000)) == .limited(retryAfter: TimeSpan(microseconds: 600_000)))
        #expect(limiter.admit("other", at: Instant(microseconds: 400_000)) == .admitted, "keys are limited separately")
        #expect(limiter.admit("ip", at: Instant(microseconds: 1_000_001)) == .admitted)
    }
}
