import Testing
@testable import PushSwarmCore

@Suite struct LedgerTests {
    /// A run's partitions keep their own ledgers; their totals must be what one ledger that saw
    /// everything would say, an item accepted by two partitions counting once, plus a duplicate.
    @Test func partitionTotalsCountAnItemTwoPartitionsAcceptedAsADuplicate() {
        let source = SourceAddress(index: 0)
        var first = Ledger()
        var second = Ledger()
        var third = Ledger()
        for number in 0..<1_000 { first.record(LedgerKey("item", String(number)), operation: "op", source: source, at: .start) }
        for number in 990..<2_000 { second.record(LedgerKey("item", String(number)), operation: "op", source: source, at: .start) }
        third.record(LedgerKey("item", "5"), operation: "other", source: source, at: .start)
        third.record(LedgerKey("item", "5"), operation: "other", source: source, at: .start)

        let totals = Ledger.totals(of: [first, second, third])
        var merged = Ledger()
        for ledger in [first, second, third] { merged.merge(ledger) }
        #expect(totals.duplicatesByOperation["merged"] == 11, "990…999 twice, and item 5 again in the third")
        #expect(totals.duplicatesByOperation["other"] == 1, "the third ledger's own repeat")
        #expect(totals.acceptedByOperation == merged.acceptedByOperation)
        #expect(totals.duplicatesByOperation == merged.duplicatesByOperation)
        #expect(totals.peakAcceptedPerSecondByOperation == merged.peakAcceptedPerSecondByOperation)
        #expect(totals.accepted == 2_011, "each partition's acceptances add up, as `merge` adds them")
    }

    /// The ledger's compact key set answers as a `Set` would, across its merges: keys crowded
    /// into one shard (so it merges many times), repeats, and keys on either side of each merge.
    @Test func theCompactKeySetAnswersAsASetWould() {
        var keys = KeySet()
        var reference = Set<UInt64>()
        var random = SeededRandom(seed: 7, stream: .mock)
        for step in 0..<40_000 {
            // Half the keys in shard 0x2A, a tenth of them repeats of earlier ones.
            var key = random.next()
            if step % 2 == 0 { key = 0x2A << 56 | key >> 8 }
            if step % 10 == 0, let earlier = reference.randomElement(using: &random) { key = earlier }
            #expect(keys.insert(key) == reference.insert(key).inserted)
        }
        #expect(keys.count == reference.count)
        #expect(Set(keys.all) == reference)
        for _ in 0..<1_000 {
            let absent = random.next()
            #expect(keys.contains(absent) == reference.contains(absent))
        }
        #expect(reference.allSatisfy(keys.contains))
    }
}
