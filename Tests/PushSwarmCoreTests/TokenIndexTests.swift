import Testing
@testable import PushSwarmCore

@Suite struct TokenIndexTests {
    /// The mock's token table answers as `[String: Int]` would through inserts, updates and
    /// removals (token refreshes): removals shift later entries of a probe run back, so a wrong
    /// shift loses a key or finds a removed one, which the model catches.
    @Test func answersAsADictionaryWouldThroughInsertsUpdatesAndRemovals() {
        var index = TokenIndex()
        var model: [String: Int] = [:]
        var random = SeededRandom(seed: 7, stream: .device)
        // Few distinct keys, so the table is crowded and removals land inside probe runs.
        let keys = (0..<3_000).map { number in "fcm-\(number):APA91b" + String(repeating: "x", count: number % 37) }
        for step in 0..<60_000 {
            let key = keys[random.nextIndex(below: keys.count)]
            switch random.nextIndex(below: 4) {
            case 0, 1:
                index[key] = step
                model[key] = step
            case 2:
                index[key] = nil
                model[key] = nil
            default:
                let found = index.value(utf8: key.utf8.span)
                #expect(found == model[key], "lookup by the UTF-8 of \(key)")
            }
            #expect(index.count == model.count)
        }
        for key in keys { #expect(index[key] == model[key], "\(key) at the end") }
    }

    /// Setting a known token again updates its value in place: the table holds each token once,
    /// with its latest value, and a prefix of a token is another key.
    @Test func aKnownTokenSetAgainKeepsOnePlaceWithItsLatestValue() {
        var index = TokenIndex(minimumCapacity: 4)
        for round in 0..<3 {
            for number in 0..<100 {
                index["token-\(number)-" + String(repeating: "a", count: 150)] = round
            }
        }
        #expect(index.count == 100)
        #expect(index["token-42-" + String(repeating: "a", count: 150)] == 2, "the latest value")
        #expect(index["token-42-"] == nil)
    }
}
