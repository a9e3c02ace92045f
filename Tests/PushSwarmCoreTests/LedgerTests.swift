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

    /// An item sent once (an event with its time in it) is held until its device confirms it and
    /// for `confirmedRetention` after: a retry in that time is a duplicate, and an unconfirmed
    /// item is held for as long as the run lasts. After that it is forgotten, so a day's ledger
    /// does not keep a key per request. A lasting key (a registration) is never forgotten.
    @Test func anItemSentOnceIsHeldUntilConfirmedAndARetentionLonger() {
        let source = SourceAddress(index: 0)
        let retention = Ledger.confirmedRetention
        var ledger = Ledger()
        let event = LedgerKey("event", "1").once
        let late = LedgerKey("event", "2").once
        let registration = LedgerKey("instance", "a")
        #expect(event.isOnce && !registration.isOnce && event != LedgerKey("event", "1"))
        let eventAccepted = ledger.record(event, operation: "e", source: source, at: .start)
        #expect(eventAccepted)
        let lateAccepted = ledger.record(late, operation: "e", source: source, at: .start)
        #expect(lateAccepted)
        let registrationAccepted = ledger.record(registration, operation: "r", source: source, at: .start)
        #expect(registrationAccepted)

        let confirmedAt = Instant.start + .seconds(10)
        let eventHeld = ledger.confirm(event, at: confirmedAt)
        #expect(eventHeld)
        let registrationHeld = ledger.confirm(registration, at: confirmedAt)
        #expect(registrationHeld)
        let retryAccepted = ledger.record(event, operation: "e", source: source, at: confirmedAt + .seconds(1))
        #expect(!retryAccepted, "a retry just after the confirmation")
        #expect(ledger.contains(event))

        // Two retention periods later the confirmed item is gone; the unconfirmed one and the
        // registration stay.
        let muchLater = confirmedAt + retention + retention
        let neverSentHeld = ledger.confirm(LedgerKey("event", "never sent").once, at: muchLater)
        #expect(!neverSentHeld, "an item the ledger never had was lost")
        #expect(!ledger.contains(event))
        #expect(ledger.contains(late))
        let lateRetryAccepted = ledger.record(late, operation: "e", source: source, at: muchLater)
        #expect(!lateRetryAccepted, "an unconfirmed item's retry, however late")
        let registrationAgainAccepted = ledger.record(registration, operation: "r", source: source, at: muchLater)
        #expect(!registrationAgainAccepted, "a registration again, however late")
        #expect(Set(ledger.keys) == [late, registration])
        #expect(ledger.duplicates == 3)
        #expect(ledger.accepted == 3)
    }
}
