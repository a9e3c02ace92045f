/// What a mock service accepted: every item once, duplicates counted, and the most requests one
/// source had accepted within one calendar second (to check a rate limit from the outside).
///
/// The per-second count is kept for the open second only, and folded into a peak per operation
/// when the next second begins (requests reach a ledger in time order): its memory grows with
/// the addresses active within one second, not with all addresses or the run's length.
public struct Ledger: Sendable {
    private struct SourceOperation: Hashable {
        var source: UInt32
        var operation: String
    }

    /// The keys of accepted lasting items (registrations), 8 bytes each (`KeySet`).
    private var acceptedKeys = KeySet()
    /// The keys of accepted items sent once (`LedgerKey.once`) that no device has confirmed yet.
    private var unconfirmedOnce: Set<UInt64> = []
    /// Keys sent once and confirmed, kept for a retry already on its way: those confirmed in the
    /// current period of `confirmedRetention` and in the one before it.
    private var confirmedOnce: Set<UInt64> = []
    private var confirmedOnceBefore: Set<UInt64> = []
    private var confirmedPeriod: Int64 = .min

    /// How long a confirmed item's key is kept at least (twice that at most). In simulated time a
    /// request reaches the mock when it is sent, so no copy of an item can arrive after its
    /// confirmation; in wall time one still in a socket's buffer can, within seconds. Two items
    /// sent once with the same fields (the same event twice in the same second) are duplicates
    /// the service would drop: the second arrives long before the first's key goes.
    public static let confirmedRetention = TimeSpan.seconds(300)

    /// Every key the ledger holds now (for `GET /ledger?keys=1` and tests).
    public var keys: [LedgerKey] {
        (acceptedKeys.all + unconfirmedOnce + confirmedOnce + confirmedOnceBefore).map(LedgerKey.init(value:))
    }
    public private(set) var acceptedByOperation: [String: UInt64] = [:]
    public private(set) var duplicatesByOperation: [String: UInt64] = [:]
    /// The second whose counts `openCounts` holds.
    private var openSecond: Int64 = .min
    /// Each (source, operation)'s count in `openSecond`.
    private var openCounts: [SourceOperation: UInt32] = [:]
    /// The highest count of a finished second, by operation.
    private var peaks: [String: UInt32] = [:]

    public init() {}

    /// Records an accepted request; returns false when its item was already in the ledger.
    @discardableResult
    public mutating func record(_ key: LedgerKey, operation: String, source: SourceAddress, at now: Instant) -> Bool {
        let second = now.microseconds >= 0 ? now.microseconds / 1_000_000 : (now.microseconds + 1) / 1_000_000 - 1
        if second != openSecond {
            closeOpenSecond()
            openSecond = second
        }
        openCounts[SourceOperation(source: source.index, operation: operation), default: 0] += 1
        guard insert(key.value) else {
            duplicatesByOperation[operation, default: 0] += 1
            return false
        }
        acceptedByOperation[operation, default: 0] += 1
        return true
    }

    /// Adds a key where its kind is kept; false when the ledger held it already.
    private mutating func insert(_ key: UInt64) -> Bool {
        guard LedgerKey(value: key).isOnce else { return acceptedKeys.insert(key) }
        guard !holdsConfirmed(key) else { return false }
        return unconfirmedOnce.insert(key).inserted
    }

    /// A device's confirmation that `key`'s item was accepted (it had a success answer); returns
    /// whether the ledger holds the item (if not, the item was lost). A key sent once is kept
    /// for `confirmedRetention` more, then forgotten.
    public mutating func confirm(_ key: LedgerKey, at now: Instant) -> Bool {
        guard key.isOnce else { return acceptedKeys.contains(key.value) }
        let period = now.microseconds / Self.confirmedRetention.microseconds
        if period != confirmedPeriod {
            confirmedOnceBefore = period == confirmedPeriod + 1 ? confirmedOnce : []
            confirmedOnce = []
            confirmedPeriod = period
        }
        if unconfirmedOnce.remove(key.value) != nil {
            confirmedOnce.insert(key.value)
            return true
        }
        return holdsConfirmed(key.value)
    }

    /// Whether a key sent once is among the confirmed ones still kept.
    private func holdsConfirmed(_ key: UInt64) -> Bool {
        confirmedOnce.contains(key) || confirmedOnceBefore.contains(key)
    }

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
            if !insert(key) { duplicatesByOperation["merged", default: 0] += 1 }
        }
        mergeCounts(of: other)
    }

    /// Folds the open second's counts into the peaks and empties it (keeping its table).
    private mutating func closeOpenSecond() {
        Self.fold(openCounts, into: &peaks)
        openCounts.removeAll(keepingCapacity: true)
    }

    /// Raises each operation's peak to the highest of one second's per-address counts.
    private static func fold(_ counts: [SourceOperation: UInt32], into peaks: inout [String: UInt32]) {
        for (slot, count) in counts { peaks[slot.operation] = max(peaks[slot.operation] ?? 0, count) }
    }

    /// Adds `other`'s counts and peaks (not its keys). Two open seconds that are the same second
    /// add up (one source's requests may have reached both); otherwise each is a finished second.
    private mutating func mergeCounts(of other: Ledger) {
        acceptedByOperation.merge(other.acceptedByOperation, uniquingKeysWith: +)
        duplicatesByOperation.merge(other.duplicatesByOperation, uniquingKeysWith: +)
        peaks.merge(other.peaks, uniquingKeysWith: max)
        if other.openSecond == openSecond {
            openCounts.merge(other.openCounts, uniquingKeysWith: +)
        } else {
            Self.fold(other.openCounts, into: &peaks)
        }
    }

    public var accepted: UInt64 { acceptedByOperation.values.reduce(0, +) }
    public var duplicates: UInt64 { duplicatesByOperation.values.reduce(0, +) }

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
    /// by looking each key up in the ledgers before it, so no set of all keys is built: a day of
    /// a large fleet's keys is held once, not twice, while a run ends.
    public static func totals(of ledgers: [Ledger]) -> Totals {
        var totals = Totals()
        var merged = Ledger()  // counts only
        for (position, ledger) in ledgers.enumerated() {
            var repeats: UInt64 = 0
            ledger.forEachKey { key in
                if ledgers[..<position].contains(where: { $0.contains(LedgerKey(value: key)) }) { repeats += 1 }
            }
            if repeats > 0 { totals.duplicatesByOperation["merged", default: 0] += repeats }
            merged.mergeCounts(of: ledger)
        }
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
        return peaks
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
        var low = 0
        var high = keys.count
        while low < high {
            let middle = (low + high) / 2
            if keys[middle] < key { low = middle + 1 } else { high = middle }
        }
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
