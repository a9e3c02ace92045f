public import PushSwarmSystem

/// Lower-case hexadecimal text for byte sequences.
public enum Hex {
    /// The lower-case digit of a nibble (0...15).
    @inlinable @inline(__always)
    public static func digit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x57 + nibble }

    /// The eight lower-case digits of `value`, most significant first, as a word to store
    /// little-endian: every nibble spread into a byte of its own and turned into its digit at
    /// once, not a digit at a time (a session id and a fingerprint are written into every
    /// event and answer of a platform that fingerprints its events).
    @inlinable @inline(__always)
    public static func eightDigits(_ value: UInt32) -> UInt64 {
        var x = UInt64(value)
        x = (x | x << 16) & 0x0000_FFFF_0000_FFFF
        x = (x | x << 8) & 0x00FF_00FF_00FF_00FF
        x = (x | x << 4) & 0x0F0F_0F0F_0F0F_0F0F
        // The most significant nibble is in the top byte: swapped, it is stored first.
        x = x.byteSwapped
        // 1 in each byte whose nibble is 10 or more (no byte carries into the next: each is at
        // most 0x0F + 0x06), which then takes 'a' - '0' - 10 = 0x27 more.
        let letters = ((x &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return x &+ 0x3030_3030_3030_3030 &+ letters &* 0x27
    }

    /// The sixteen digits of `value`, most significant first, stored at `offset` in `out`.
    @inlinable @inline(__always)
    public static func writeSixteenDigits(_ value: UInt64, into out: inout MutableSpan<UInt8>, at offset: Int) {
        out.storeLittleEndian(eightDigits(UInt32(truncatingIfNeeded: value >> 32)), at: offset)
        out.storeLittleEndian(eightDigits(UInt32(truncatingIfNeeded: value)), at: offset + 8)
    }

    /// A version 4 UUID's text (8-4-4-4-12, variant 10) made of the first 16 of `bytes` (a hash
    /// both sides can derive): the version and variant bits set over them, as RFC 9562 section 5.4
    /// lays out, so it reads as the UUIDv4 the specs ask for.
    public static func uuidV4(_ bytes: [UInt8]) -> String {
        var bytes = Array(bytes.prefix(16))
        bytes += Array(repeating: 0, count: 16 - bytes.count)
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        return string(bytes, dashesAfter: [4, 6, 8, 10])
    }

    /// `bytes` in hex, with a dash inserted before each byte index listed in `dashesAfter`
    /// (ascending), as in a UUID.
    public static func string(_ bytes: [UInt8], dashesAfter: [Int] = []) -> String {
        var text = [UInt8]()
        text.reserveCapacity(bytes.count * 2 + dashesAfter.count)
        var nextDash = 0
        for (index, byte) in bytes.enumerated() {
            if nextDash < dashesAfter.count, dashesAfter[nextDash] == index {
                text.append(UInt8(ascii: "-"))
                nextDash += 1
            }
            text.append(digit(byte >> 4))
            text.append(digit(byte & 0x0F))
        }
        return String(decoding: text, as: UTF8.self)
    }
}
