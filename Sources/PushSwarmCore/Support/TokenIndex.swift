import Glibc

/// A table from strings (push tokens, 150-odd bytes) to small integers, looked up by the string's
/// UTF-8 as a request body holds it: no `String` is made to find a key, and the key is hashed 16
/// bytes at a time (`ByteMix`), not by SipHash. A mock service looks the device token of every
/// event up here; with `[String: Int]`, that made a `String` of the token (an allocation) and
/// SipHashed it.
///
/// Open addressing with linear probing, at most three quarters full (as `Dictionary`), 24 bytes a
/// position (a 32-bit hash, a 32-bit value, the key): the memory of the `[String: Int]` it
/// replaces. A removal shifts the entries after it back (no tombstones), so a table that lives
/// through many token refreshes stays as short to probe as a new one.
public struct TokenIndex: Sendable {
    /// Each position's key hash (0: empty), value and key.
    private var hashes: [UInt32]
    private var values: [Int32]
    private var keys: [String]
    private var mask: Int
    public private(set) var count = 0

    public init(minimumCapacity: Int = 0) {
        var size = 16
        while size * 3 < 4 * minimumCapacity { size *= 2 }
        hashes = Array(repeating: 0, count: size)
        values = Array(repeating: 0, count: size)
        keys = Array(repeating: "", count: size)
        mask = size - 1
    }

    /// The value of the key whose UTF-8 is `utf8`.
    public func value(utf8: UnsafeBufferPointer<UInt8>) -> Int? {
        let position = find(utf8, hash: Self.hash(utf8))
        return hashes[position] == 0 ? nil : Int(values[position])
    }

    public subscript(key: String) -> Int? {
        get {
            var key = key
            return key.withUTF8 { value(utf8: $0) }
        }
        set {
            var utf8Key = key
            let (hash, position) = utf8Key.withUTF8 { utf8 in
                let hash = Self.hash(utf8)
                return (hash, find(utf8, hash: hash))
            }
            if hashes[position] != 0 {
                if let newValue { values[position] = Int32(newValue) } else { remove(at: position) }
            } else if let newValue {
                insert(key, value: newValue, hash: hash, at: position)
            }
        }
    }

    /// The position holding `utf8`, or the empty position where it would go.
    private func find(_ utf8: UnsafeBufferPointer<UInt8>, hash: UInt32) -> Int {
        var position = Int(truncatingIfNeeded: hash) & mask
        while true {
            let stored = hashes[position]
            if stored == 0 { return position }
            if stored == hash && Self.equals(keys[position], utf8) { return position }
            position = (position + 1) & mask
        }
    }

    private mutating func insert(_ key: String, value: Int, hash: UInt32, at position: Int) {
        hashes[position] = hash
        values[position] = Int32(value)
        keys[position] = key
        count += 1
        if 4 * count > 3 * hashes.count { grow() }
    }

    /// Empties `position` and moves back each later entry of its probe run that may move.
    private mutating func remove(at position: Int) {
        var hole = position
        var next = (position + 1) & mask
        while hashes[next] != 0 {
            let home = Int(truncatingIfNeeded: hashes[next]) & mask
            // The entry at `next` may fill the hole if its home is not cyclically within (hole, next].
            let distanceToNext = (next - home) & mask
            let distanceToHole = (hole - home) & mask
            if distanceToHole < distanceToNext {
                hashes[hole] = hashes[next]
                values[hole] = values[next]
                keys[hole] = keys[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        hashes[hole] = 0
        keys[hole] = ""
        count -= 1
    }

    private mutating func grow() {
        let old = (hashes, values, keys)
        let size = hashes.count * 2
        hashes = Array(repeating: 0, count: size)
        values = Array(repeating: 0, count: size)
        keys = Array(repeating: "", count: size)
        mask = size - 1
        for index in old.0.indices where old.0[index] != 0 {
            var position = Int(truncatingIfNeeded: old.0[index]) & mask
            while hashes[position] != 0 { position = (position + 1) & mask }
            hashes[position] = old.0[index]
            values[position] = old.1[index]
            keys[position] = old.2[index]
        }
    }

    private static func equals(_ key: String, _ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        key.utf8.withContiguousStorageIfAvailable { stored in
            stored.count == utf8.count && (stored.count == 0 || memcmp(stored.baseAddress!, utf8.baseAddress!, stored.count) == 0)
        } ?? key.utf8.elementsEqual(utf8)
    }

    /// `ByteMix` over the bytes, 32 bits of it, never 0 (0 marks an empty position).
    static func hash(_ utf8: UnsafeBufferPointer<UInt8>) -> UInt32 {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(utf8.count)
        ByteMix.absorb(utf8, into: &state)
        let hash = UInt32(truncatingIfNeeded: ByteMix.finalised(state))
        return hash == 0 ? 1 : hash
    }
}
