/// Lower-case hexadecimal text for byte sequences.
public enum Hex {
    /// The lower-case digit of a nibble (0...15).
    @inlinable @inline(__always)
    public static func digit(_ nibble: UInt8) -> UInt8 { nibble < 10 ? 0x30 + nibble : 0x57 + nibble }

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
