import PushSwarmSystem
import PushSwarmMetrics

/// A table from strings (push tokens, 150-odd bytes) to small integers, looked up by the string's
/// UTF-8 as a request body holds it: no `String` is made to find a key, and the key is hashed 16
/// bytes at a time (`ByteMix`), not by SipHash. A mock service looks the device token of every
/// event up here; with `[String: Int]`, that made a `String` of the token (an allocation) and
/// SipHashed it.
///
/// Open addressing with linear probing, at most seven eighths full, 24 bytes a position (a
/// 32-bit hash, a 32-bit value, the key). A mock's table holds a token per device, so its size is
/// memory per device: at three quarters (as `Dictionary`), 100,000 devices took 262,144 positions
/// (6 MiB, and 9 MiB while it grew); at seven eighths they fit in 131,072. A lookup compares the
/// 32-bit hashes of the run before it reads a key. A removal shifts the entries after it back
/// (no tombstones), so a table that lives through many token refreshes stays as short to probe
/// as a new one.
public struct TokenIndex: Sendable {
    /// One position: its key's hash (0: empty), its value and its key, side by side, so that a
    /// lookup reads one line of the table and then the key's bytes (three parallel arrays were
    /// three lines apart, each a miss at a million devices).
    private struct Entry {
        var hash: UInt32
        var value: Int32
        var key: String

        static let empty = Entry(hash: 0, value: 0, key: "")
    }

    private var entries: [Entry]
    private var mask: Int
    public private(set) var count = 0

    public init(minimumCapacity: Int = 0) {
        var size = 16
        while size * 7 < 8 * minimumCapacity { size *= 2 }
        entries = Array(repeating: .empty, count: size)
        mask = size - 1
    }

    /// The value of the key whose UTF-8 is `utf8`.
    public func value(utf8: Span<UInt8>) -> Int? {
        let position = find(utf8, hash: Self.hash(utf8))
        return entries[position].hash == 0 ? nil : Int(entries[position].value)
    }

    public subscript(key: String) -> Int? {
        get {
            key.withUTF8Span { value(utf8: $0) }
        }
        set {
            let (hash, position) = key.withUTF8Span { utf8 in
                let hash = Self.hash(utf8)
                return (hash, find(utf8, hash: hash))
            }
            if entries[position].hash != 0 {
                if let newValue { entries[position].value = Int32(newValue) } else { remove(at: position) }
            } else if let newValue {
                insert(key, value: newValue, hash: hash, at: position)
            }
        }
    }

    /// The position holding `utf8`, or the empty position where it would go.
    private func find(_ utf8: Span<UInt8>, hash: UInt32) -> Int {
        var position = Int(truncatingIfNeeded: hash) & mask
        while true {
            let stored = entries[position].hash
            if stored == 0 { return position }
            if stored == hash && Self.equals(entries[position].key, utf8) { return position }
            position = (position + 1) & mask
        }
    }

    private mutating func insert(_ key: String, value: Int, hash: UInt32, at position: Int) {
        entries[position] = Entry(hash: hash, value: Int32(value), key: key)
        count += 1
        if 8 * count > 7 * entries.count { grow() }
    }

    /// Empties `position` and moves back each later entry of its probe run that may move.
    private mutating func remove(at position: Int) {
        var hole = position
        var next = (position + 1) & mask
        while entries[next].hash != 0 {
            let home = Int(truncatingIfNeeded: entries[next].hash) & mask
            // The entry at `next` may fill the hole if its home is not cyclically within (hole, next].
            let distanceToNext = (next - home) & mask
            let distanceToHole = (hole - home) & mask
            if distanceToHole < distanceToNext {
                entries[hole] = entries[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        entries[hole] = .empty
        count -= 1
    }

    private mutating func grow() {
        let old = entries
        let size = entries.count * 2
        entries = Array(repeating: .empty, count: size)
        mask = size - 1
        for entry in old where entry.hash != 0 {
            var position = Int(truncatingIfNeeded: entry.hash) & mask
            while entries[position].hash != 0 { position = (position + 1) & mask }
            entries[position] = entry
        }
    }

    private static func equals(_ key: String, _ utf8: Span<UInt8>) -> Bool {
        key.withUTF8Span { $0.bytesEqual(utf8) }
    }

    /// `ByteMix` over the bytes, 32 bits of it, never 0 (0 marks an empty position).
    static func hash(_ utf8: Span<UInt8>) -> UInt32 {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(utf8.count)
        ByteMix.absorb(utf8, into: &state)
        let hash = UInt32(truncatingIfNeeded: ByteMix.finalised(state))
        return hash == 0 ? 1 : hash
    }
}
