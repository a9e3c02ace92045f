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
}
