import Testing
@testable import PushSwarmCore

@Suite struct KeyTableTests {
    /// The ledger's key table answers as `[UInt64: UInt64]` would through additions, removals and
    /// emptyings. Few distinct keys, some of them 0 and some sharing their low or high bits, so
    /// the table is crowded and removals land inside probe runs: a wrong backward shift loses a
    /// key or finds a removed one, which the model catches.
    @Test func answersAsADictionaryWouldThroughAdditionsRemovalsAndEmptyings() {
        var table = KeyTable()
        var model: [UInt64: UInt64] = [:]
        var random = SeededRandom(seed: 11, stream: .device)
        let keys: [UInt64] = (0..<2_000).map { number in
            switch number % 4 {
            case 0: UInt64(number)  // small keys, 0 among them
            case 1: UInt64(number) << 48  // only the high bits differ
            case 2: random.next()
            default: random.next() | 1  // ledger keys of items sent once
            }
        }
        for step in 0..<80_000 {
            let key = keys[random.nextIndex(below: keys.count)]
            switch random.nextIndex(below: 8) {
            case 0, 1, 2:
                let amount = UInt64(random.nextIndex(below: 5))
                let before = table.add(amount, to: key)
                #expect(before == model[key], "the value before the addition")
                model[key, default: 0] += amount
            case 3, 4:
                let removed = table.removeValue(forKey: key)
                #expect(removed == model.removeValue(forKey: key))
            case 5 where step % 5_000 == 0:
                table.removeAll()
                model.removeAll()
            default:
                #expect(table[key] == model[key], "lookup of \(key)")
            }
            #expect(table.count == model.count)
        }
        for key in keys { #expect(table[key] == model[key], "\(key) at the end") }
        var visited: [UInt64: UInt64] = [:]
        table.forEach { key, value in visited[key] = value }
        #expect(visited == model, "forEach visits every key once")
    }

    /// Emptying a table that one busy moment made large gives it back a size fitting what it
    /// held: the ledger empties its per-second counts every second.
    @Test func aLargeTableEmptiedWithLittleInItShrinksAndStillWorks() {
        var table = KeyTable()
        for key in 1...10_000 as ClosedRange<UInt64> { table.add(1, to: key) }
        table.removeAll()
        table.add(7, to: 42)
        table.removeAll()  // an eighth full at most: shrinks
        #expect(table.count == 0)
        for key in 1...100 as ClosedRange<UInt64> { table.add(key, to: key * 1_000_003) }
        for key in 1...100 as ClosedRange<UInt64> { #expect(table[key * 1_000_003] == key) }
        #expect(table[42] == nil)
    }

    @Test func theSetInsertsOnceAndRemovesWhatItHolds() {
        var set = KeyTableSet()
        let first = set.insert(0), again = set.insert(0), other = set.insert(5)
        #expect(first && !again && other)
        #expect(set.contains(5) && set.contains(0) && !set.contains(6))
        let removed = set.remove(5), removedAgain = set.remove(5)
        #expect(removed && !removedAgain)
        #expect(set.all == [0])
    }
}
