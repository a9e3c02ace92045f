/// A hash table from 64-bit keys to 64-bit values, for keys that are already hashes (ledger keys) or
/// small packed integers: a key's position is one multiply of it, where `Set<UInt64>` and
/// `Dictionary` run SipHash over it. The ledger looks keys up six times a request
/// (Benchmarks/README.md, "Measured choices").
///
/// Open addressing with linear probing, at most three quarters full (as `Dictionary`), keys and
/// values in one array of entries. A key's position is the top bits of the key times an odd
/// multiplier drawn per table from the system's random source, so that a peer that knows how
/// ledger keys are made still cannot choose keys that pile up in one run of positions. Key 0
/// marks an empty position, so its value is kept beside the table. A removal shifts the entries
/// after it back (no tombstones), so a table that sees many removals stays as short to probe as a
/// new one.
struct KeyTable: Sendable {
    /// One position: key 0 marks it empty.
    private struct Entry: Sendable {
        var key: UInt64
        var value: UInt64
    }

    private var entries: [Entry]
    private var shift: UInt64
    private let multiplier: UInt64
    /// The value of key 0, which cannot be kept in `entries`.
    private var zero: UInt64?
    /// Entries in `entries` (the zero key's is not counted there).
    private var stored = 0

    init() {
        entries = Array(repeating: Entry(key: 0, value: 0), count: 16)
        shift = 64 - 4
        multiplier = UInt64.random(in: .min ... .max) | 1
    }

    var count: Int { stored + (zero == nil ? 0 : 1) }

    @inline(__always)
    private func home(_ key: UInt64) -> Int { Int(truncatingIfNeeded: (key &* multiplier) >> shift) }

    /// The position holding `key`, or the empty position where it would go (`key` not 0).
    @inline(__always)
    private func find(_ key: UInt64) -> Int {
        let mask = entries.count - 1
        var position = home(key)
        while true {
            let stored = entries[position].key
            if stored == key || stored == 0 { return position }
            position = (position + 1) & mask
        }
    }

    subscript(key: UInt64) -> UInt64? {
        if key == 0 { return zero }
        let position = find(key)
        return entries[position].key == 0 ? nil : entries[position].value
    }

    /// Adds `amount` to the value of `key` (0 when it has none); returns the value it had.
    @discardableResult
    mutating func add(_ amount: UInt64, to key: UInt64) -> UInt64? {
        if key == 0 {
            defer { zero = (zero ?? 0) &+ amount }
            return zero
        }
        let position = find(key)
        if entries[position].key != 0 {
            let old = entries[position].value
            entries[position].value = old &+ amount
            return old
        }
        entries[position] = Entry(key: key, value: amount)
        stored += 1
        if 4 * stored > 3 * entries.count { grow() }
        return nil
    }

    /// Removes `key`; its value, if it had one.
    @discardableResult
    mutating func removeValue(forKey key: UInt64) -> UInt64? {
        if key == 0 {
            defer { zero = nil }
            return zero
        }
        let position = find(key)
        guard entries[position].key != 0 else { return nil }
        let value = entries[position].value
        remove(at: position)
        return value
    }

    /// Empties the table. It keeps its size if it was at least an eighth full, so that a table
    /// emptied again and again (the ledger's counts of the open second) costs what it holds, not
    /// the size one busy moment once gave it.
    mutating func removeAll() {
        if entries.count > 16 && 8 * stored < entries.count {
            var size = 16
            while size < 4 * stored { size *= 2 }
            entries = Array(repeating: Entry(key: 0, value: 0), count: size)
            shift = UInt64(64 - size.trailingZeroBitCount)
        } else if stored > 0 {
            for position in entries.indices { entries[position].key = 0 }
        }
        stored = 0
        zero = nil
    }

    /// Calls `body` with every key and value, in no particular order.
    func forEach(_ body: (UInt64, UInt64) -> Void) {
        if let zero { body(0, zero) }
        for entry in entries where entry.key != 0 { body(entry.key, entry.value) }
    }

    /// Empties `position` and moves back each later entry of its probe run that may move.
    private mutating func remove(at position: Int) {
        let mask = entries.count - 1
        var hole = position
        var next = (position + 1) & mask
        while entries[next].key != 0 {
            let home = home(entries[next].key)
            // The entry at `next` may fill the hole if its home is not cyclically within (hole, next].
            if (hole - home) & mask < (next - home) & mask {
                entries[hole] = entries[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        entries[hole].key = 0
        stored -= 1
    }

    private mutating func grow() {
        let old = entries
        entries = Array(repeating: Entry(key: 0, value: 0), count: old.count * 2)
        shift -= 1
        let mask = entries.count - 1
        for entry in old where entry.key != 0 {
            var position = home(entry.key)
            while entries[position].key != 0 { position = (position + 1) & mask }
            entries[position] = entry
        }
    }
}

/// A set of 64-bit keys on `KeyTable`.
struct KeyTableSet: Sendable {
    private var table = KeyTable()

    init() {}

    var count: Int { table.count }

    func contains(_ key: UInt64) -> Bool { table[key] != nil }

    /// Adds `key`; false when it was there already.
    @discardableResult
    mutating func insert(_ key: UInt64) -> Bool { table.add(0, to: key) == nil }

    /// Removes `key`; false when it was not there.
    @discardableResult
    mutating func remove(_ key: UInt64) -> Bool { table.removeValue(forKey: key) != nil }

    func forEach(_ body: (UInt64) -> Void) { table.forEach { key, _ in body(key) } }

    var all: [UInt64] {
        var keys: [UInt64] = []
        keys.reserveCapacity(count)
        forEach { keys.append($0) }
        return keys
    }
}
