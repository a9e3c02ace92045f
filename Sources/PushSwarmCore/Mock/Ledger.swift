/// What a mock service accepted: every item once, duplicates counted, and how many requests each
/// source had accepted in each second (to check a rate limit from the outside).
public struct Ledger: Sendable {
    private struct SecondKey: Hashable {
        var source: UInt32
        var operation: String
        var second: Int64
    }

    public private(set) var keys: Set<LedgerKey> = []
    public private(set) var acceptedByOperation: [String: UInt64] = [:]
    public private(set) var duplicatesByOperation: [String: UInt64] = [:]
    private var perSecond: [SecondKey: UInt32] = [:]

    public init() {}

    /// Records an accepted request; returns false when its item was already in the ledger.
    @discardableResult
    public mutating func record(_ key: LedgerKey, operation: String, source: SourceAddress, at now: Instant) -> Bool {
        let second = now.microseconds >= 0 ? now.microseconds / 1_000_000 : (now.microseconds + 1) / 1_000_000 - 1
        perSecond[SecondKey(source: source.index, operation: operation, second: second), default: 0] += 1
        guard keys.insert(key).inserted else {
            duplicatesByOperation[operation, default: 0] += 1
            return false
        }
        acceptedByOperation[operation, default: 0] += 1
        return true
    }

    public var accepted: UInt64 { acceptedByOperation.values.reduce(0, +) }
    public var duplicates: UInt64 { duplicatesByOperation.values.reduce(0, +) }

    public func contains(_ key: LedgerKey) -> Bool { keys.contains(key) }

    /// For each operation with accepted requests (duplicates included), the most one source had
    /// accepted within one calendar second of the run.
    public var peakAcceptedPerSecondByOperation: [String: UInt32] {
        perSecond.reduce(into: [:]) { peaks, entry in
            peaks[entry.key.operation] = max(peaks[entry.key.operation] ?? 0, entry.value)
        }
    }
}
