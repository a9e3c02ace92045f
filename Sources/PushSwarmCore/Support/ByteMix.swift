import PushSwarmSystem

/// The multiply-and-fold step of wyhash, and bytes absorbed with it: the one fast non-cryptographic
/// hash PushSwarm uses (`LedgerKey.Builder` for ledger keys, `TokenIndex` for token tables).
/// Every input bit reaches every output bit within two words.
enum ByteMix {
    @inline(__always)
    static func mix(_ word: UInt64, into state: inout UInt64) {
        let product = (state ^ word ^ 0xE703_7ED1_A0B4_28DB).multipliedFullWidth(by: 0xA076_1D64_78BD_642F)
        state = product.high ^ product.low
    }

    /// MurmurHash3's 64-bit finaliser: spreads the state's bits over the whole word, so that its
    /// low bits (a table's mask) and its top bits alike depend on every input bit.
    @inline(__always)
    static func finalised(_ state: UInt64) -> UInt64 {
        var h = state
        h ^= h >> 33
        h = h &* 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 33
        h = h &* 0xC4CE_B9FE_1A85_EC53
        h ^= h >> 33
        return h
    }

    /// Mixes `bytes` into `state`: 16 bytes a multiply, as wyhash does, then a word, then the
    /// tail. A two-word product is zero only when a word equals the constant it is xored with;
    /// both constants are invalid UTF-8, so no text can zero the state.
    ///
    /// The state is worked on in a local and stored once at the end: through the `inout` it was
    /// stored after every multiply (the bytes read might have been it, for all the compiler knew).
    @inline(__always)
    static func absorb(_ bytes: Span<UInt8>, into stored: inout UInt64) {
        var state = stored
        defer { stored = state }
        var offset = 0
        while offset + 16 <= bytes.count {
            let first = bytes.littleEndianWord(at: offset)
            let second = bytes.littleEndianWord(at: offset + 8)
            let product = (state ^ first ^ 0xE703_7ED1_A0B4_28DB).multipliedFullWidth(by: second ^ 0x8EBC_6AF0_9C88_C6E3)
            state = product.high ^ product.low
            offset += 16
        }
        if offset + 8 <= bytes.count {
            mix(bytes.littleEndianWord(at: offset), into: &state)
            offset += 8
        }
        if offset < bytes.count {
            // The last 1 to 7 bytes as the low bytes of a word (little-endian). With eight bytes
            // or more in all: the last eight, loaded at once and shifted down past those already
            // mixed. (Copying them into a word in memory and loading it stalls on the store.)
            let remaining = bytes.count - offset
            var tail: UInt64 = 0
            if bytes.count >= 8 {
                tail = bytes.littleEndianWord(at: bytes.count - 8) >> (8 * UInt64(8 - remaining))
            } else {
                for index in 0..<remaining { tail |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
            }
            mix(tail, into: &state)
        }
    }
}
