import Testing
@testable import PushSwarmMetrics

@Suite struct JSONTests {
    @Test func parsesEveryKindOfValueKeepingMemberOrder() throws {
        let value = try JSONParser.parse(#"{"b": [1, -2.5e3, true, false, null], "a": {"x": "y"}, "s": "\u00e9\n\"\ud83d\ude00"}"#)
        guard case .object(let object) = value else {
            Issue.record("not an object")
            return
        }
        #expect(object.keys == ["b", "a", "s"])
        #expect(object["b"] == [1, -2500, true, false, nil])
        #expect(object["s"] == .string("é\n\"😀"))
    }

    @Test(arguments: [
        ("{\"a\": 1,}", 1, 9),
        ("[1, 2", 1, 6),
        ("{\"a\" 1}", 1, 6),
        ("\"abc", 1, 1),
        ("{\n  \"a\": tru\n}", 2, 8),
        ("[1] x", 1, 5),
        ("01", 1, 2),
    ])
    func reportsWhereASyntaxErrorIs(text: String, line: Int, column: Int) {
        #expect {
            _ = try JSONParser.parse(text)
        } throws: { error in
            guard let syntax = error as? JSONParser.SyntaxError else { return false }
            return syntax.line == line && syntax.column == column
        }
    }

    @Test func rejectsNestingBeyondTheLimitInsteadOfOverflowingTheStack() {
        let deep = String(repeating: "[", count: 100_000)
        #expect(throws: JSONParser.SyntaxError.self) { try JSONParser.parse(deep) }
    }

    @Test func rejectsInvalidUTF8AndLoneSurrogates() {
        #expect(throws: JSONParser.SyntaxError.self) { try JSONParser.parse([0x22, 0xFF, 0xFE, 0x22]) }
        #expect(throws: JSONParser.SyntaxError.self) { try JSONParser.parse(#""\ud800""#) }
    }

    @Test func writesIntegersWithoutAFractionAndRoundTrips() throws {
        let value: JSONValue = ["n": 3, "f": 49.99, "s": "tab\there \"q\" \u{01}", "a": [true, nil]]
        let text = JSONWriter.text(of: value)
        #expect(text == #"{"n":3,"f":49.99,"s":"tab\there \"q\" \u0001","a":[true,null]}"#)
        #expect(try JSONParser.parse(text) == value)
    }

    @Test func sortingKeysGivesOneCanonicalForm() {
        let first: JSONValue = ["b": 1, "a": ["d": 1, "c": 2]]
        let second: JSONValue = ["a": ["c": 2, "d": 1], "b": 1]
        #expect(JSONWriter.text(of: first, sortingKeys: true) == JSONWriter.text(of: second, sortingKeys: true))
        #expect(JSONWriter.text(of: first) != JSONWriter.text(of: second))
    }

    // The writer keeps "has this container an item yet" as bits, 64 levels to a word: commas must
    // come out right on both sides of that boundary.
    @Test func deeplyNestedValuesRoundTripWithTheirCommas() throws {
        var value: JSONValue = [1, 2]
        for depth in 0..<100 { value = depth % 2 == 0 ? [value, .number(Double(depth))] : ["x": value, "y": .number(Double(depth))] }
        let text = JSONWriter.text(of: value)
        #expect(try JSONParser.parse(text) == value)
    }

    // The writer scans eight bytes at a time for what must be escaped: a special byte anywhere
    // in a word, or in the tail after the last whole word, must still be escaped.
    @Test func everySpecialByteIsEscapedWhereverItFallsInAWord() throws {
        for special in ["\"", "\\", "\n", "\u{01}", "\u{1F}"] {
            for position in 0..<20 {
                let text = String(repeating: "a", count: position) + special + String(repeating: "é", count: 3) + "z"
                let written = JSONWriter.text(of: .string(text))
                #expect(try JSONParser.parse(written) == .string(text), "\(special.debugDescription) at \(position)")
            }
        }
        #expect(JSONWriter.text(of: .string("0123456789\u{7F}abc")) == "\"0123456789\u{7F}abc\"", "DEL and other bytes >= 0x20 are not escaped")
    }

    @Test func prettyOutputIndentsNestedContainers() {
        let text = JSONWriter.text(of: ["a": [1, 2], "b": [:]], indent: 2)
        #expect(text == "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}")
    }
}
