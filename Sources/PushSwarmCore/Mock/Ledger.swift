/// What a mock service accepted: every item once, duplicates counted, and the most requests one
/// source had accepted within one calendar second (to check a rate limit from the outside).
///
/// The per-second count is kept as a running peak per (source, operation), not per second: its
/// memory grows with the addresses, not with the run's length.
public struct Ledger: Sendable {
    private struct SourceOperation: Hashable {
        var source: UInt32
        var operation: String
    }

    private struct SecondCount {
        var second: Int64
        var count: UInt32
    }

    /// Every accepted item's key, in 256 sets by the key's top byte: each grows on its own, so the
    /// ledger never holds an old and a new table of all its keys at once while it grows (a
    /// single set doubling at 16 million keys would briefly take 384 MB).
    private var shards: [Set<LedgerKey>] = Array(repeating: [], count: 256)

    /// Every accepted item's key (for `GET /ledger?keys=1` and tests).
    public var keys: [LedgerKey] { shards.flatMap { $0 } }
    public private(set) var acceptedByOperation: [String: UInt64] = [:]
    public private(set) var duplicatesByOperation: [String: UInt64] = [:]
    /// Each (source, operation)'s current second and its count so far.
    private var currentSecond: [SourceOperation: SecondCount] = [:]
    /// The highest count of a finished second, by operation.
    private var peaks: [String: UInt32] = [:]

    public init() {}

    /// Records an accepted request; returns false when its item was already in the ledger.
    @discardableResult
    public mutating func record(_ key: LedgerKey, operation: String, source: SourceAddress, at now: Instant) -> Bool {
        let second = now.microseconds >= 0 ? now.microseconds / 1_000_000 : (now.microseconds + 1) / 1_000_000 - 1
        let slot = SourceOperation(source: source.index, operation: operation)
        var current = currentSecond[slot] ?? SecondCount(second: second, count: 0)
        if current.second != second {
            peaks[operation] = max(peaks[operation] ?? 0, current.count)
            current = SecondCount(second: second, count: 0)
        }
        current.count += 1
        currentSecond[slot] = current
        guard shards[Int(key.value >> 56)].insert(key).inserted else {
            duplicatesByOperation[operation, default: 0] += 1
            return false
        }
        acceptedByOperation[operation, default: 0] += 1
        return true
    }

    /// Adds `other` (another partition's ledger: other source addresses, other items) into this one.
    public mutating func merge(_ other: Ledger) {
        for key in other.shards.joined() where !shards[Int(key.value >> 56)].insert(key).inserted {
            // The same item accepted in both: the second acceptance is a duplicate.
            duplicatesByOperation["merged", default: 0] += 1
        }
        mergeCounts(of: other)
    }

    /// Adds `other`'s counts and peaks (not its keys).
    private mutating func mergeCounts(of other: Ledger) {
        acceptedByOperation.merge(other.acceptedByOperation, uniquingKeysWith: +)
        duplicatesByOperation.merge(other.duplicatesByOperation, uniquingKeysWith: +)
        peaks.merge(other.peaks, uniquingKeysWith: max)
        currentSecond.merge(other.currentSecond) { mine, theirs in
            mine.second == theirs.second ? SecondCount(second: mine.second, count: mine.count + theirs.count) : (mine.count >= theirs.count ? mine : theirs)
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
            for shard in 0..<256 {
                for key in ledger.shards[shard] where ledgers[..<position].contains(where: { $0.shards[shard].contains(key) }) {
                    repeats += 1
                }
            }
            if repeats > 0 { totals.duplicatesByOperation["merged", default: 0] += repeats }
            merged.mergeCounts(of: ledger)
        }
        totals.acceptedByOperation = merged.acceptedByOperation
        totals.duplicatesByOperation.merge(merged.duplicatesByOperation, uniquingKeysWith: +)
        totals.peakAcceptedPerSecondByOperation = merged.peakAcceptedPerSecondByOperation
        return totals
    }

    public func contains(_ key: LedgerKey) -> Bool { shards[Int(key.value >> 56)].contains(key) }

    /// For each operation with accepted requests (duplicates included), the most one source had
    /// accepted within one calendar second of the run.
    public var peakAcceptedPerSecondByOperation: [String: UInt32] {
        currentSecond.reduce(into: peaks) { peaks, entry in
            peaks[entry.key.operation] = max(peaks[entry.key.operation] ?? 0, entry.value.count)
        }
    }
}
