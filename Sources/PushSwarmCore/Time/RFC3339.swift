import PushSwarmMetrics
import PushSwarmSystem

/// RFC 3339 timestamps: written by devices for `event_time`, checked by mock services.
public enum RFC3339 {
    /// `unixMicroseconds` as local time at `offsetSeconds` east of UTC, with milliseconds:
    /// `2026-03-29T14:30:00.123+03:00` (or `Z` when the offset is zero and `utcAsZ` is set).
    public static func format(unixMicroseconds: Int64, offsetSeconds: Int, utcAsZ: Bool = false) -> String {
        text(unixMicroseconds: unixMicroseconds, offsetSeconds: offsetSeconds, utcAsZ: utcAsZ).string
    }

    /// `format`'s text held in place, in a value of 40 bytes: no `String` is made for it (a device
    /// stamps every event, and a timestamp is too long for a `String`'s inline storage).
    public struct Text: Sendable {
        @usableFromInline var storage = InlineArray<40, UInt8>(repeating: 0)
        public private(set) var count = 0

        init(unixMicroseconds: Int64, offsetSeconds: Int, utcAsZ: Bool) {
            // The widest year an Int64 of microseconds gives has 7 characters (a sign and 6
            // digits): 32 bytes at most.
            var bytes = storage.mutableSpan
            count = RFC3339.write(unixMicroseconds: unixMicroseconds, offsetSeconds: offsetSeconds, utcAsZ: utcAsZ, into: &bytes)
        }

        /// Inlinable (as `UUIDValue.withUTF8`): called unspecialized from another module, it went
        /// through generic code and its metadata every call.
        @inlinable
        public func withUTF8<Result>(_ body: (Span<UInt8>) -> Result) -> Result {
            body(storage.span.extracting(..<count))
        }

        public var string: String { withUTF8 { String(decodingUTF8: $0) } }
    }

    /// `format` as a `Text`.
    public static func text(unixMicroseconds: Int64, offsetSeconds: Int, utcAsZ: Bool = false) -> Text {
        Text(unixMicroseconds: unixMicroseconds, offsetSeconds: offsetSeconds, utcAsZ: utcAsZ)
    }

    /// Writes the text byte by byte into `buffer`, which has room for it; returns its length.
    private static func write(
        unixMicroseconds: Int64, offsetSeconds: Int, utcAsZ: Bool, into buffer: inout MutableSpan<UInt8>
    ) -> Int {
        let localMicros = unixMicroseconds + Int64(offsetSeconds) * 1_000_000
        let totalSeconds = floorDivide(localMicros, 1_000_000)
        let millis = Int((localMicros - totalSeconds * 1_000_000) / 1_000)
        let days = floorDivide(totalSeconds, 86_400)
        let secondOfDay = Int(totalSeconds - days * 86_400)
        let (year, month, day) = civil(fromDays: days)
        let isZ = offsetSeconds == 0 && utcAsZ
        let magnitude = abs(offsetSeconds)
        var at = 0
        func put(_ value: Int, _ width: Int) {
            var rest = value
            for place in stride(from: width - 1, through: 0, by: -1) {
                buffer[at + place] = UInt8(48 + rest % 10)
                rest /= 10
            }
            at += width
        }
        func put(_ ascii: Unicode.Scalar) {
            buffer[at] = UInt8(ascii: ascii)
            at += 1
        }
        if (0...9_999).contains(year) {
            put(year, 4)
        } else {
            for byte in pad(year, 4).utf8 { buffer[at] = byte; at += 1 }
        }
        put("-"); put(month, 2); put("-"); put(day, 2)
        put("T"); put(secondOfDay / 3_600, 2); put(":"); put(secondOfDay % 3_600 / 60, 2); put(":"); put(secondOfDay % 60, 2)
        put("."); put(millis, 3)
        if isZ {
            put("Z")
        } else {
            put(offsetSeconds < 0 ? "-" : "+"); put(magnitude / 3_600 % 100, 2); put(":"); put(magnitude % 3_600 / 60, 2)
        }
        return at
    }

    /// Parses a full RFC 3339 `date-time` (section 5.6) to microseconds since the Unix epoch.
    /// Nil when the text is not one: a missing offset, an impossible date, a stray character.
    public static func parse(_ text: String) -> Int64? {
        text.withUTF8Span { parse(utf8: $0) }
    }

    /// `parse` over UTF-8 bytes, for callers that hold them (a request body) and no `String`.
    public static func parse(utf8 bytes: Span<UInt8>) -> Int64? {
        var index = 0
        func digits(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for offset in 0..<count {
                let byte = bytes[index + offset]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += count
            return value
        }
        // One character, or either case of a letter (`T`/`t`, `Z`/`z`): bytes, not a `String`
        // searched per call.
        func expect(_ character: UInt8, or other: UInt8? = nil) -> Bool {
            guard index < bytes.count, bytes[index] == character || bytes[index] == other else { return false }
            index += 1
            return true
        }
        // `YYYY-MM-DDTHH:MM:SS`, a fixed layout: read as three words (`head`), not a digit at a
        // time (the mock checks every event's time).
        guard bytes.count >= 19, let (year, month, day, hour, minute, second) = head(bytes) else { return nil }
        index = 19
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour <= 23,
            minute <= 59, second <= 60
        else { return nil }
        var micros: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale: Int64 = 100_000
            var count = 0
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                micros += Int64(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
                count += 1
            }
            guard count > 0 else { return nil }
        }
        var offset = 0
        if expect(UInt8(ascii: "Z"), or: UInt8(ascii: "z")) {
            offset = 0
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let negative = bytes[index] == UInt8(ascii: "-")
            index += 1
            guard let offsetHours = digits(2), expect(UInt8(ascii: ":")), let offsetMinutes = digits(2), offsetHours <= 23,
                offsetMinutes <= 59
            else { return nil }
            offset = (offsetHours * 3_600 + offsetMinutes * 60) * (negative ? -1 : 1)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = Self.days(fromCivil: year, month, day)
        let seconds = days * 86_400 + Int64(hour * 3_600 + minute * 60 + second) - Int64(offset)
        return seconds * 1_000_000 + micros
    }

    /// The first 19 bytes as `YYYY-MM-DDTHH:MM:SS` (`T` in either case), or nil: the digits
    /// and separators of the words at 0, 8 and 11 checked at once, the digits read from them.
    @inline(__always)
    private static func head(_ bytes: Span<UInt8>) -> (Int, Int, Int, Int, Int, Int)? {
        let first = bytes.littleEndianWord(at: 0)  // YYYY-MM-
        let second = bytes.littleEndianWord(at: 8)  // DDTHH:MM
        let third = bytes.littleEndianWord(at: 11)  // HH:MM:SS
        // Each byte's digit value where a digit belongs (0 elsewhere): valid when every one is
        // below 10, which adding 0x76 tells by the byte's top bit (a byte of 0x80 or more has it
        // already, and only such a byte can carry into the next).
        func digits(_ word: UInt64, at mask: UInt64) -> UInt64? {
            let values = (word ^ 0x3030_3030_3030_3030) & mask
            return (values | (values &+ 0x7676_7676_7676_7676)) & 0x8080_8080_8080_8080 == 0 ? values : nil
        }
        guard first & 0xFF00_00FF_0000_0000 == 0x2D00_002D_0000_0000,  // '-' at 4 and 7
            second & 0x0000_FF00_0000_0000 == 0x0000_3A00_0000_0000,  // ':' at 13
            (second >> 16 & 0xFF) | 0x20 == 0x74,  // 'T' or 't' at 10
            third & 0x0000_FF00_0000_0000 == 0x0000_3A00_0000_0000,  // ':' at 16
            let a = digits(first, at: 0x00FF_FF00_FFFF_FFFF),
            let b = digits(second, at: 0xFFFF_00FF_FF00_FFFF),
            let c = digits(third, at: 0xFFFF_0000_0000_0000)
        else { return nil }
        func digit(_ word: UInt64, _ place: UInt64) -> Int { Int(truncatingIfNeeded: word >> (8 * place) & 0xFF) }
        return (
            digit(a, 0) * 1_000 + digit(a, 1) * 100 + digit(a, 2) * 10 + digit(a, 3), digit(a, 5) * 10 + digit(a, 6),
            digit(b, 0) * 10 + digit(b, 1), digit(b, 3) * 10 + digit(b, 4), digit(b, 6) * 10 + digit(b, 7),
            digit(c, 6) * 10 + digit(c, 7)
        )
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
    public static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthIndex = Int64(month > 2 ? month - 3 : month + 9)
        let dayOfYear = (153 * monthIndex + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func civil(fromDays days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * monthIndex + 2) / 5 + 1)
        let month = Int(monthIndex < 10 ? monthIndex + 3 : monthIndex - 9)
        let year = Int(yearOfEra + era * 400) + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
