import PushSwarmSystem

/// How the writer writes numbers and strings: integers and hundredths as digits in place, other
/// numbers in Swift's shortest round-trip form, strings quoted with JSON's escapes (RFC 8259
/// section 7), looked for eight bytes at a time.
extension JSONWriter {
    mutating func appendNumber(_ value: Double) {
        // Integral ones (counts, most of a report's numbers) as digits written in place, the
        // same text `numberText` gives them without making a `String` of it.
        if let integer = Self.exactInteger(value) {
            appendInteger(integer)
        } else if let hundredths = Self.hundredths(value) {
            appendHundredths(hundredths)
        } else {
            Self.numberText(value).withUTF8Span { append($0) }
        }
    }

    /// `k` when `value` is the double nearest to k/100 for a whole `k` (a price or an amount, most
    /// of the fractions a run writes), between 0.01 and 10^13 in size; nil otherwise. Such a
    /// value's shortest round-trip form, `String(value)`'s, is k's digits with a point before the
    /// last two and a trailing zero dropped: no shorter decimal is that near it (doubles there
    /// lie far closer together than 0.01), and in that range Swift writes no exponent.
    @inline(__always)
    static func hundredths(_ value: Double) -> Int64? {
        let magnitude = abs(value)
        guard magnitude >= 0.01, magnitude < 1e13 else { return nil }
        let scaled = (value * 100).rounded()
        return scaled / 100 == value ? Int64(scaled) : nil
    }

    /// A non-integral number of hundredths (`hundredths`) as `String` writes k/100.
    private mutating func appendHundredths(_ hundredths: Int64) {
        let whole = hundredths / 100
        let fraction = Int(hundredths.magnitude % 100)
        if hundredths < 0 && whole == 0 { append(UInt8(ascii: "-")) }
        appendInteger(whole)
        append(UInt8(ascii: "."), UInt8(ascii: "0") + UInt8(fraction / 10))
        if fraction % 10 != 0 { append(UInt8(ascii: "0") + UInt8(fraction % 10)) }
    }

    /// `String(value)`'s digits, written straight into the buffer: a metrics archive is mostly
    /// integers, and making a `String` of each cost more than the rest of writing it.
    mutating func appendInteger(_ value: Int64) {
        var magnitude = value.magnitude
        // The digits from the last, into scratch bytes, then copied in order.
        var scratch = InlineArray<24, UInt8>(repeating: 0)
        var at = scratch.count
        repeat {
            at -= 1
            scratch[at] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: magnitude % 10)
            magnitude /= 10
        } while magnitude > 0
        if value < 0 {
            at -= 1
            scratch[at] = UInt8(ascii: "-")
        }
        append(scratch.span.extracting(at...))
    }

    /// A number as the writer writes it: integral ones without a fraction, others in Swift's
    /// shortest round-trip form, non-finite ones as null. (Most fit a `String`'s inline storage:
    /// no allocation.)
    static func numberText(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if let integer = exactInteger(value) { return String(integer) }
        return String(value)
    }

    /// The integer `value` is when it is integral and exact as a double (below 2^53 in size):
    /// such numbers are written without a fraction.
    @inline(__always)
    static func exactInteger(_ value: Double) -> Int64? {
        value == value.rounded() && abs(value) < 9_007_199_254_740_992 ? Int64(value) : nil
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Where the first byte of `utf8` that needs escaping is (a control character, a quote or a
    /// backslash), or nil: eight bytes at a time.
    @inline(__always)
    static func firstEscape(in utf8: Span<UInt8>) -> Int? {
        var index = 0
        while index < utf8.count {
            // The next eight bytes: past them when none needs escaping, else straight to the
            // first that may. Near the end, the last eight (the bytes before `index` need no
            // escaping, so reading them again flags nothing among them); a string shorter than
            // eight bytes is read byte by byte into a word padded with spaces. (Copying the tail
            // into a word in memory and loading that stalled on the store: a quarter of this
            // function's time.)
            if utf8.count - index < 8 {
                if utf8.count >= 8 {
                    index = utf8.count - 8
                } else {
                    var word: UInt64 = 0x2020_2020_2020_2020
                    for offset in 0..<utf8.count { word = word & ~(0xFF << (8 * UInt64(offset))) | UInt64(utf8[offset]) << (8 * UInt64(offset)) }
                    let flags = Self.escapeFlags(word)
                    return flags == 0 ? nil : Self.firstEscapeByte(in: utf8, from: flags.trailingZeroBitCount / 8)
                }
            }
            let word = utf8.littleEndianWord(at: index)
            let flags = Self.escapeFlags(word)
            if flags == 0 {
                index += 8
                continue
            }
            // The lowest flag is exact (`escapeFlags`): the byte-by-byte look ends at once.
            return Self.firstEscapeByte(in: utf8, from: index + flags.trailingZeroBitCount / 8)
        }
        return nil
    }

    /// The first byte from `start` on that needs escaping, one at a time: the word test's answer
    /// checked (and the whole answer, were that test ever to flag a byte wrongly).
    private static func firstEscapeByte(in utf8: Span<UInt8>, from start: Int) -> Int? {
        for index in start..<utf8.count {
            let byte = utf8[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return index }
        }
        return nil
    }

    /// Quotes and text in one write, for text that needs no escaping.
    @inline(__always)
    mutating func appendPlainQuoted(_ utf8: Span<UInt8>) {
        buffer.appendQuoted(utf8)
    }

    mutating func appendQuoted(_ utf8: Span<UInt8>) {
        // Most strings need no escaping: quotes and text in one write.
        guard var escape = Self.firstEscape(in: utf8) else { return appendPlainQuoted(utf8) }
        append(UInt8(ascii: "\""))
        var runStart = 0
        while true {
            append(utf8.extracting(runStart..<escape))
            let byte = utf8[escape]
            switch byte {
            case UInt8(ascii: "\""): append(0x5C, 0x22)
            case UInt8(ascii: "\\"): append(0x5C, 0x5C)
            case 0x0A: append(0x5C, UInt8(ascii: "n"))
            case 0x0D: append(0x5C, UInt8(ascii: "r"))
            case 0x09: append(0x5C, UInt8(ascii: "t"))
            default:
                append(0x5C, UInt8(ascii: "u"))
                append(0x30, 0x30)
                append(Self.hexDigits[Int(byte >> 4)], Self.hexDigits[Int(byte & 0xF)])
            }
            runStart = escape + 1
            guard let next = Self.firstEscape(in: utf8.extracting(runStart...)) else { break }
            escape = runStart + next
        }
        append(utf8.extracting(runStart...))
        append(UInt8(ascii: "\""))
    }

    /// The high bit of each byte of `word` that may need escaping: below 0x20, a quote or a
    /// backslash (the classic "has a zero byte" test, applied to the word and to it xor each
    /// special byte). The lowest flag is exact; a borrow can only flag bytes above a flagged one.
    @inline(__always)
    static func escapeFlags(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ value: UInt64) -> UInt64 { (value &- ones) & ~value & highs }
        let control = (word &- 0x2020_2020_2020_2020) & ~word & highs
        return control | hasZeroByte(word ^ 0x2222_2222_2222_2222) | hasZeroByte(word ^ 0x5C5C_5C5C_5C5C_5C5C)
    }
}
