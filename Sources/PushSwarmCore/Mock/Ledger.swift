import PushSwarmMetrics

/// What a mock service accepted: every item once, duplicates counted, and the most requests one
/// source had accepted within one calendar second (to check a rate limit from the outside).
///
/// The per-second count is kept for the open second only, and folded into a peak per operation
/// when the next second begins (requests reach a ledger in time order): its memory grows with
/// the addresses active within one second, not with all addresses or the run's length.
public struct Ledger: Sendable {
    /// The keys of accepted lasting items (registrations), 8 bytes each (`KeySet`).
    private var acceptedKeys = KeySet()
    /// The keys of accepted items sent once (`LedgerKey.once`) that no device has confirmed yet.
    private var unconfirmedOnce = KeyTableSet()
    /// Keys sent once and confirmed, kept for a retry already on its way: those confirmed in the
    /// current period of `confirmedRetention` and in the one before it.
    private var confirmedOnce = KeyTableSet()
    private var confirmedOnceBefore = KeyTableSet()
    private var confirmedPeriod: Int64 = .min

    /// How long a confirmed item's key is kept at least (twice that at most). In simulated time a
    /// request reaches the mock when it is sent, so no copy of an item can arrive after its
    /// confirmation; in wall time one still in a socket's buffer can, within seconds. Two items
    /// sent once with the same fields (the same event twice in the same second) are duplicates
    /// the service would drop: the second arrives long before the first's key goes.
    public static let confirmedRetention = TimeSpan.seconds(300)

    /// Every key the ledger holds now (for `GET /ledger?keys=1` and tests).
    public var keys: [LedgerKey] {
        (acceptedKeys.all + unconfirmedOnce.all + confirmedOnce.all + confirmedOnceBefore.all).map(LedgerKey.init(value:))
    }
    /// The operations recorded, in the order first seen: the counts below are kept by an
    /// operation's place here, so that a request's counts are found by comparing its operation's
    /// name with a handful of names (a string compared with itself is equal at once), not by
    /// hashing it three times.
    private var operations: [String] = []
    private var acceptedCounts: [UInt64] = []
    private var duplicateCounts: [UInt64] = []
    /// The highest count of a finished second, by operation; nil for one never recorded (the
    /// "merged" duplicates).
    private var peaks: [UInt32?] = []
    /// The second whose counts `openCounts` holds.
    private var openSecond: Int64 = .min
    /// Each (source, operation)'s count in `openSecond`, keyed by `openKey`.
    private var openCounts = KeyTable()

    /// Accepted items by operation (operations with none are left out).
    public var acceptedByOperation: [String: UInt64] { Self.byOperation(operations, acceptedCounts) }
    /// Duplicates by operation (operations with none are left out).
    public var duplicatesByOperation: [String: UInt64] { Self.byOperation(operations, duplicateCounts) }

    private static func byOperation(_ names: [String], _ counts: [UInt64]) -> [String: UInt64] {
        var table: [String: UInt64] = [:]
        for (name, count) in zip(names, counts) where count > 0 { table[name] = count }
        return table
    }

    /// `operation`'s place in `operations`, added when new.
    private mutating func slot(of operation: String) -> Int {
        if let slot = operations.firstIndex(of: operation) { return slot }
        operations.append(operation)
        acceptedCounts.append(0)
        duplicateCounts.append(0)
        peaks.append(nil)
        return operations.count - 1
    }

    private static func openKey(source: UInt32, slot: Int) -> UInt64 { UInt64(source) << 32 | UInt64(truncatingIfNeeded: slot) }

    public init() {}

    /// Records an accepted request; returns false when its item was already in the ledger.
    @discardableResult
    public mutating func record(_ key: LedgerKey, operation: String, source: SourceAddress, at now: Instant) -> Bool {
        let second = now.microseconds >= 0 ? now.microseconds / 1_000_000 : (now.microseconds + 1) / 1_000_000 - 1
        if second != openSecond {
            closeOpenSecond()
            openSecond = second
        }
        let slot = slot(of: operation)
        openCounts.add(1, to: Self.openKey(source: source.index, slot: slot))
        guard insert(key.value) else {
            duplicateCounts[slot] += 1
            return false
        }
        acceptedCounts[slot] += 1
        return true
    }

    /// Adds a key where its kind is kept; false when the ledger held it already.
    private mutating func insert(_ key: UInt64) -> Bool {
        guard LedgerKey(value: key).isOnce else { return acceptedKeys.insert(key) }
        guard !holdsConfirmed(key) else { return false }
        return unconfirmedOnce.insert(key)
    }

    /// A device's confirmation that `key`'s item was accepted (it had a success answer); returns
    /// whether the ledger holds the item (if not, the item was lost). A key sent once is kept
    /// for `confirmedRetention` more, then forgotten.
    public mutating func confirm(_ key: LedgerKey, at now: Instant) -> Bool {
        guard key.isOnce else { return acceptedKeys.contains(key.value) }
        let period = now.microseconds / Self.confirmedRetention.microseconds
        if period != confirmedPeriod {
            confirmedOnceBefore = period == confirmedPeriod + 1 ? confirmedOnce : KeyTableSet()
            confirmedOnce = KeyTableSet()
            confirmedPeriod = period
        }
        if unconfirmedOnce.remove(key.value) {
            confirmedOnce.insert(key.value)
            return true
        }
        return holdsConfirmed(key.value)
    }

    /// Whether a key sent once is among the confirmed ones still kept.
    private func holdsConfirmed(_ key: UInt64) -> Bool {
        confirmedOnce.contains(key) || confirmedOnceBefore.contains(key)
    }

    /// How many keys the ledger holds.
    var keyCount: Int { acceptedKeys.count + unconfirmedOnce.count + confirmedOnce.count + confirmedOnceBefore.count }

    /// Calls `body` with every key the ledger holds.
    private func forEachKey(_ body: (UInt64) -> Void) {
        acceptedKeys.forEach(body)
        unconfirmedOnce.forEach(body)
        confirmedOnce.forEach(body)
        confirmedOnceBefore.forEach(body)
    }

    /// Adds `other` (another partition's ledger: other source addresses, other items) into this one.
    public mutating func merge(_ other: Ledger) {
        other.forEachKey { key in
            // The same item accepted in both: the second acceptance is a duplicate.
            if !insert(key) { duplicateCounts[slot(of: "merged")] += 1 }
        }
        mergeCounts(of: other)
    }

    /// Folds the open second's counts into the peaks and empties it (keeping its table).
    private mutating func closeOpenSecond() {
        Self.fold(openCounts, into: &peaks)
        openCounts.removeAll()
    }

    /// Raises each operation's peak to the highest of one second's per-address counts (keyed
    /// by `openKey`, with the slots of `peaks`).
    private static func fold(_ counts: KeyTable, into peaks: inout [UInt32?]) {
        counts.forEach { key, count in
            let slot = Int(truncatingIfNeeded: key & 0xFFFF_FFFF)
            peaks[slot] = max(peaks[slot] ?? 0, UInt32(clamping: count))
        }
    }

    /// Adds `other`'s counts and peaks (not its keys). Two open seconds that are the same second
    /// add up (one source's requests may have reached both); otherwise each is a finished second.
    private mutating func mergeCounts(of other: Ledger) {
        // Other's slots in this ledger's numbering.
        let slots = other.operations.map { slot(of: $0) }
        for (theirs, mine) in slots.enumerated() {
            acceptedCounts[mine] += other.acceptedCounts[theirs]
            duplicateCounts[mine] += other.duplicateCounts[theirs]
            if let peak = other.peaks[theirs] { peaks[mine] = max(peaks[mine] ?? 0, peak) }
        }
        other.openCounts.forEach { key, count in
            let mine = Self.openKey(source: UInt32(truncatingIfNeeded: key >> 32), slot: slots[Int(truncatingIfNeeded: key & 0xFFFF_FFFF)])
            if other.openSecond == openSecond {
                openCounts.add(count, to: mine)
            } else {
                let slot = Int(truncatingIfNeeded: mine & 0xFFFF_FFFF)
                peaks[slot] = max(peaks[slot] ?? 0, UInt32(clamping: count))
            }
        }
    }

    public var accepted: UInt64 { acceptedCounts.reduce(0, +) }
    public var duplicates: UInt64 { duplicateCounts.reduce(0, +) }

    /// What a run's summary needs of its ledgers: counts and peaks, no keys.
    public struct Totals: Sendable {
        public var acceptedByOperation: [String: UInt64] = [:]
        public var duplicatesByOperation: [String: UInt64] = [:]
        public var peakAcceptedPerSecondByOperation: [String: UInt32] = [:]

        public var accepted: UInt64 { acceptedByOperation.values.reduce(0, +) }
        public var duplicates: UInt64 { duplicatesByOperation.values.reduce(0, +) }
    }

    /// The totals of several partitions' ledgers (other source addresses) as if they were one, as
    /// `merge` adds them up: an item that two of them accepted is a duplicate ("merged"). Found
    /// by looking a key up in the ledgers before its own, so no set of all keys is built: a day of
    /// a large fleet's keys is held once, not twice, while a run ends. A bit per hash of every key
    /// seen (two bytes a key, `SeenFilter`) spares almost every key that lookup: only a key whose
    /// bit an earlier one set is looked up, so the work no longer grows with the partition count
    /// (at 16 partitions the lookups had been an eighth of an open workload's CPU).
    public static func totals(of ledgers: [Ledger]) -> Totals {
        var totals = Totals()
        var merged = Ledger()  // counts only
        var seen = SeenFilter(keys: ledgers.count > 1 ? ledgers.reduce(0) { $0 + $1.keyCount } : 0)
        for (position, ledger) in ledgers.enumerated() where ledgers.count > 1 {
            var repeats: UInt64 = 0
            ledger.forEachKey { key in
                if seen.insert(key), ledgers[..<position].contains(where: { $0.contains(LedgerKey(value: key)) }) { repeats += 1 }
            }
            if repeats > 0 { totals.duplicatesByOperation["merged", default: 0] += repeats }
        }
        for ledger in ledgers { merged.mergeCounts(of: ledger) }
        totals.acceptedByOperation = merged.acceptedByOperation
        totals.duplicatesByOperation.merge(merged.duplicatesByOperation, uniquingKeysWith: +)
        totals.peakAcceptedPerSecondByOperation = merged.peakAcceptedPerSecondByOperation
        return totals
    }

    public func contains(_ key: LedgerKey) -> Bool {
        guard key.isOnce else { return acceptedKeys.contains(key.value) }
        return unconfirmedOnce.contains(key.value) || holdsConfirmed(key.value)
    }

    /// For each operation with accepted requests (duplicates included), the most one source had
    /// accepted within one calendar second of the run.
    public var peakAcceptedPerSecondByOperation: [String: UInt32] {
        var peaks = peaks
        Self.fold(openCounts, into: &peaks)
        var table: [String: UInt32] = [:]
        for (name, peak) in zip(operations, peaks) { if let peak { table[name] = peak } }
        return table
    }
}

/// A set of 64-bit keys at about 8 bytes a key, where a `Set` takes 11 to 21 (its table is at most
/// three quarters full and doubles as it grows): a day of a large fleet's ledger keys is the
/// largest thing a simulated run keeps. Each of 256 shards, by the key's top byte, is a sorted
/// array and a small `Set` of the keys added since, merged into the array once it holds a
/// sixteenth as many (at least 512): a key is copied about 16 times over its life, and a shard
/// grows on its own, so the keys are never all held twice while they grow.
struct KeySet: Sendable {
    private var sorted: [[UInt64]] = Array(repeating: [], count: 256)
    private var recent: [Set<UInt64>] = Array(repeating: [], count: 256)

    /// Adds `key`; false when it was there already.
    mutating func insert(_ key: UInt64) -> Bool {
        let shard = Int(key >> 56)
        guard !Self.search(sorted[shard], key), recent[shard].insert(key).inserted else { return false }
        if recent[shard].count >= max(512, sorted[shard].count / 16) { mergeRecent(of: shard) }
        return true
    }

    func contains(_ key: UInt64) -> Bool {
        let shard = Int(key >> 56)
        return recent[shard].contains(key) || Self.search(sorted[shard], key)
    }

    var count: Int { sorted.reduce(0) { $0 + $1.count } + recent.reduce(0) { $0 + $1.count } }

    /// Calls `body` with every key, in no particular order.
    func forEach(_ body: (UInt64) -> Void) {
        for shard in 0..<256 {
            sorted[shard].forEach(body)
            recent[shard].forEach(body)
        }
    }

    var all: [UInt64] {
        var keys: [UInt64] = []
        keys.reserveCapacity(count)
        forEach { keys.append($0) }
        return keys
    }

    private static func search(_ keys: [UInt64], _ key: UInt64) -> Bool {
        let low = keys.partitioningIndex { $0 >= key }
        return low < keys.count && keys[low] == key
    }

    /// Merges a shard's recent keys into its sorted array, into a new array of exactly the size.
    private mutating func mergeRecent(of shard: Int) {
        let old = sorted[shard]
        let added = recent[shard].sorted()
        var merged: [UInt64] = []
        merged.reserveCapacity(old.count + added.count)
        var i = 0
        var j = 0
        while i < old.count && j < added.count {
            if old[i] < added[j] {
                merged.append(old[i])
                i += 1
            } else {
                merged.append(added[j])
                j += 1
            }
        }
        merged.append(contentsOf: old[i...])
        merged.append(contentsOf: added[j...])
        sorted[shard] = merged
        recent[shard].removeAll(keepingCapacity: true)
    }
}

/// One bit per hash of a 64-bit key, 16 bits for each key expected: `insert` says whether the
/// key's bit was set already (by this key or another). Used to skip exact lookups for keys
/// certainly not seen before; about one key in sixteen or fewer is a false alarm.
struct SeenFilter {
    private var words: [UInt64]
    private let shift: UInt64

    init(keys: Int) {
        var bits = 64
        while bits < keys * 16 { bits *= 2 }
        words = Array(repeating: 0, count: bits / 64)
        shift = UInt64(64 - bits.trailingZeroBitCount)
    }

    /// Sets `key`'s bit; true when it was set already.
    mutating func insert(_ key: UInt64) -> Bool {
        let bit = Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> shift)
        let mask: UInt64 = 1 << UInt64(bit & 63)
        let word = bit >> 6
        let wasSet = words[word] & mask != 0
        words[word] |= mask
        return wasSet
    }
}
