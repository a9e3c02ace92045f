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

    /// The writer and the string scanner look at eight bytes at a time and jump to the first
    /// byte that needs a look: a quote, a backslash, a control character or a non-ASCII byte at
    /// any place in strings of any length, the last few bytes included, must be escaped when
    /// written and found when read back (a jump one byte short or long would lose or corrupt it).
    @Test func specialCharactersAtEveryPlaceSurviveWritingAndReading() throws {
        for length in 0...20 {
            for place in 0..<max(length, 1) {
                for special in ["\"", "\\", "\n", "\u{01}", "é", "😀"] {
                    var characters = Array(repeating: "a", count: length)
                    if length > 0 { characters[place] = special }
                    let text = characters.joined()
                    let written = JSONWriter.bytes(of: .object(JSONObject([(key: "k\(text)", value: .string(text))])))
                    let parsed = try JSONParser.parse(written)
                    #expect(parsed == .object(JSONObject([(key: "k\(text)", value: .string(text))])), "\(text.debugDescription)")
                    guard let fields = try JSONFields.parse(written), case .string(let found)? = fields["k\(text)"] else {
                        Issue.record("\(text.debugDescription): no member found")
                        continue
                    }
                    #expect(fields.text(found) == text)
                }
            }
        }
    }

    /// A lookup that starts where the last one left off finds every member in any order, and
    /// nothing for a name that is not there, whatever place it starts from.
    @Test func lookupsFromAnyPlaceFindWhatTheSubscriptFinds() throws {
        let bytes = Array(#"{"a": 1, "b\u0062": 2, "c": 3, "dd": 4, "e": 5}"#.utf8)
        let fields = try #require(try JSONFields.parse(bytes))
        let names = ["a", "bb", "c", "dd", "e"]
        for order in [names, names.reversed(), ["c", "a", "e", "bb", "dd"]] {
            for start in 0...6 {
                var next = start
                for name in order {
                    guard case .number(let found)? = fields.value(named: name, next: &next) else {
                        Issue.record("\(name) not found from \(start)")
                        continue
                    }
                    #expect(found == Double(names.firstIndex(of: name)! + 1))
                }
                var from = start
                #expect(fields.value(named: "b", next: &from) == nil && from == start)
            }
        }
    }

    /// A name written with its comma and colon in one copy gives the same text as one written
    /// in three steps, first member or not, nested or not, compact or indented.
    @Test func namesMadeOnceWriteWhatKeysWrite() {
        for indent in [0, 2] {
            var quick = JSONWriter(indent: indent)
            var plain = JSONWriter(indent: indent)
            quick.beginObject()
            plain.beginObject()
            // The longest name a `Name` holds (`,"` + 44 bytes + `":` = its capacity), and escapes.
            let longest = String(repeating: "n", count: JSONWriter.Name.capacity - 4)
            for name in ["a", "b\"c", "d", longest, "tab\tand \"quote\""] {
                quick.key(JSONWriter.Name(name))
                plain.key(name)
                quick.beginObject()
                plain.beginObject()
                quick.key(JSONWriter.Name("x"))
                plain.key("x")
                quick.string(name)
                plain.string(name)
                quick.key(JSONWriter.Name("y"))
                plain.key("y")
                quick.integer(1)
                plain.integer(1)
                quick.endObject()
                plain.endObject()
            }
            quick.endObject()
            plain.endObject()
            #expect(quick.text == plain.text)
        }
    }

    /// Member names are keyed by their first and last bytes, read as words (two that may overlap
    /// for a short name): every length from 1 to 20, names that differ only inside, and each one
    /// repeated (refused as a duplicate) must still be told apart.
    @Test func namesOfEveryLengthAreFoundAndTheirRepeatsRefused() throws {
        var names: [String] = []
        let letters = Array("abcdefghijklmnopqrst")
        for length in 1...20 {
            names.append(String(letters[..<length]))
            if length >= 3 {
                var inside = Array(letters[..<length])
                inside[length / 2] = "Z"
                names.append(String(inside))
            }
        }
        let document = "{" + names.enumerated().map { "\"\($0.element)\": \($0.offset)" }.joined(separator: ", ") + "}"
        let fields = try #require(try JSONFields.parse(Array(document.utf8)))
        for (index, name) in names.enumerated() {
            guard case .number(let number)? = fields[name] else {
                Issue.record("\(name) not found")
                continue
            }
            #expect(number == Double(index), "\(name)")
            var next = 0
            guard case .number(let again)? = fields.value(named: name, next: &next) else {
                Issue.record("\(name) not found by place")
                continue
            }
            #expect(again == Double(index))
            let repeated = "{\"\(name)\": 1, \"other\": 2, \"\(name)\": 3}"
            #expect(throws: JSONParser.SyntaxError.self) { _ = try JSONFields.parse(Array(repeated.utf8)) }
        }
        #expect(fields["abcdefghijklmnopqrstu"] == nil && fields["b"] == nil && fields["abZ"] == nil)
        // A name written with an escape is the same name (RFC 8259 §8.3 compares them unescaped):
        // a repeat however it is written, and found by its text.
        for repeated in [#"{"ab": 1, "a\u0062": 2}"#, #"{"a\u0062": 1, "ab": 2}"#, #"{"abcdefghijklmnopq": 1, "abcdefgh\u0069jklmnopq": 2}"#] {
            #expect(throws: JSONParser.SyntaxError.self, "\(repeated)") { _ = try JSONFields.parse(Array(repeated.utf8)) }
        }
        let escaped = try #require(try JSONFields.parse(Array(#"{"x": 0, "abcdefgh\u0069jklmnopq": 1}"#.utf8)))
        guard case .number(1)? = escaped["abcdefghijklmnopq"] else {
            Issue.record("a name written with an escape is found by its text")
            return
        }
    }

    /// `JSONFields` reads an object's members without a tree; what it finds must be what the parser
    /// finds: each member's value (escapes resolved, the first of a repeated name), and for a
    /// document that is not valid JSON the parser's error, line and column.
    @Test func fieldsFindWhatTheParserFinds() throws {
        let documents = [
            #"{"a": "x", "b": 1.5, "c": true, "d": null, "e": [1, "2"], "f": {"g": "h"}}"#,
            #"{"tenant\u005fid": "t\u00e9\"1\\", "plain": "caf\u00e9", "utf8": "é😀", "a": 1, "b": 2}"#,
            "  {\n \"spaced\" :\t\"out\" , \"empty\": \"\", \"nested\": {\"deep\": [[{}]]} }  ",
            "{}",
        ]
        for document in documents {
            let bytes = Array(document.utf8)
            guard case .object(let tree) = try JSONParser.parse(bytes), let fields = try JSONFields.parse(bytes) else {
                Issue.record("\(document) is an object")
                continue
            }
            for name in tree.keys + ["missing"] {
                let found: JSONValue? =
                    switch fields[name] {
                    case nil: nil
                    case .string(let text)?: .string(fields.text(text))
                    case .number(let number)?: .number(number)
                    case .bool(let flag)?: .bool(flag)
                    case .null?: .null
                    case .array(let nested)?: fields.value(nested)
                    case .object(let nested)?: fields.value(nested)
                    }
                #expect(found == tree[name], "\(name) in \(document)")
            }
        }
        #expect(try JSONFields.parse(Array("[1, 2]".utf8)) == nil, "valid JSON, not an object")
        for bad in ["{\"a\": 1,}", "{\"a\" 1}", "{\"a\": \"\\x\"}", "{\"a\": \"\\ud800\"}", "{\"a\": 1} x", "{\"a\": tru}", "{\"\u{01}\": 1}", "{\"a\": 1, \"a\": 2}"] {
            var expected: JSONParser.SyntaxError?
            do { _ = try JSONParser.parse(bad) } catch { expected = error }
            guard let expected else {
                Issue.record("\(bad) is not JSON")
                continue
            }
            #expect(throws: expected) { _ = try JSONFields.parse(Array(bad.utf8)) }
        }
    }

    /// A nested object or array is kept as its bytes, and those bytes are its canonical form
    /// (what `write(_:sortingKeys: true)` gives, which fingerprints and ledger keys hash) only when
    /// they are exactly that form, with no escape; any difference (space, member order, an escape,
    /// a number written another way) goes through a tree. Either way `writeCanonical` gives the canonical text.
    @Test func aNestedValueIsCanonicalExactlyWhenItsBytesAreItsCanonicalForm() throws {
        let nested = [
            #"{}"#, #"[]"#, #"{"a":1,"b":2}"#, #"{"b":2,"a":1}"#, #"{"a":1,"ab":2}"#, #"{"ab":1,"a":2}"#, #"{"a": 1}"#, #"[1, 2]"#,
            #"{"a":"x\"y"}"#, #"{"a":"\u0041"}"#, #"{"a":"\/"}"#, #"{"a":"é😀"}"#, #"{"\u0061":1}"#,
            #"[0]"#, #"[-0]"#, #"[-5]"#, #"[1.0]"#, #"[1.5]"#, #"[12.34]"#, #"[12.340]"#, #"[1e2]"#, #"[1E2]"#, #"[0.1]"#,
            #"[0.00001]"#, #"[1e-05]"#, #"[123456789012345]"#, #"[1234567890123456]"#, #"[9007199254740993]"#, #"[-123456789012345]"#,
            #"[true,false,null]"#, #"[true, false]"#, #"{"a":{"c":[{"e":1,"d":2}],"b":null}}"#, #"{"a":{"b":null,"c":[{"d":2,"e":1}]}}"#,
            #"[[[[]]]]"#, #"{"z":[],"y":{}}"#,
        ]
        for text in nested {
            let bytes = Array(#"{"n":\#(text),"after":"x"}"#.utf8)
            let fields = try #require(try JSONFields.parse(bytes), "\(text)")
            let value: JSONFields.Nested
            switch fields["n"] {
            case .object(let found)?, .array(let found)?: value = found
            default:
                Issue.record("\(text) is nested")
                continue
            }
            let canonical = JSONWriter.bytes(of: try JSONParser.parse(text), sortingKeys: true)
            // A string with an escape always goes through a tree, even where the writer would
            // write the same escape.
            #expect(value.isCanonical == (canonical == Array(text.utf8) && !text.contains("\\")), "\(text)")
            var writer = JSONWriter()
            fields.writeCanonical(value, into: &writer)
            #expect(writer.text == String(decoding: canonical, as: UTF8.self), "\(text)")
            #expect(fields.value(value) == (try JSONParser.parse(text)), "\(text)")
            guard case .string(let after)? = fields["after"] else {
                Issue.record("the member after \(text) is read")
                continue
            }
            #expect(fields.text(after) == "x")
        }
        // What the parser refuses inside a nested value is refused, with its error, whether or
        // not the rest of it looked canonical.
        for bad in [#"{"n":{"a":1,"a":2}}"#, #"{"n":{"b":1,"a":1,"b":2}}"#, #"{"n":[1,]}"#, #"{"n":{"a":01}}"#, #"{"n":[tru]}"#, #"{"n":{"a":"\x"}}"#] {
            var expected: JSONParser.SyntaxError?
            do { _ = try JSONParser.parse(bad) } catch { expected = error }
            let error = try #require(expected, "\(bad) is not JSON")
            #expect(throws: error) { _ = try JSONFields.parse(Array(bad.utf8)) }
        }
        let deep = #"{"n":"# + String(repeating: "[", count: 200) + String(repeating: "]", count: 200) + "}"
        #expect(throws: JSONParser.SyntaxError.self) { try JSONFields.parse(Array(deep.utf8)) }
    }

    /// Strings are scanned eight bytes at a time while they are plain ASCII; an escape, a
    /// non-ASCII byte or a forbidden control character must be seen wherever it falls in a word.
    @Test func findsWhatEndsAPlainRunAtEveryPlaceInAWord() throws {
        for position in 0..<20 {
            let before = String(repeating: "a", count: position)
            for (written, meant) in [(#"\""#, "\""), (#"\\"#, "\\"), (#"\n"#, "\n"), ("é", "é"), ("😀", "😀"), (#"\u00e9"#, "é")] {
                let text = #"{"k": ""# + before + written + #"bcdefghijk"}"#
                #expect(try JSONParser.parse(text) == ["k": .string(before + meant + "bcdefghijk")], "\(text)")
            }
            #expect(throws: JSONParser.SyntaxError.self, "a raw control character at \(position)") {
                try JSONParser.parse(#"{"k": ""# + before + "\u{01}bcdefghijk\"}")
            }
            #expect(throws: JSONParser.SyntaxError.self, "invalid UTF-8 at \(position)") {
                try JSONParser.parse(Array(#"{"k": ""#.utf8) + Array(before.utf8) + [0xC3, 0x28] + Array(#"bcdefghijk"}"#.utf8))
            }
        }
    }

    /// RFC 8259 section 4: "The names within an object SHOULD be unique"; when they are not, "the
    /// behavior of software that receives such an object is unpredictable". One policy in every
    /// parser use: refused, wherever the repeat is, however the name is written.
    @Test(arguments: [
        #"{"a": 1, "a": 2}"#, #"{"a": 1, "b": 2, "a": 1}"#, #"{"tenant_id": "x", "tenant\u005fid": "y"}"#,
        #"{"tenant\u005fid": "x", "tenant_id": "y"}"#, #"{"k\u00e9": 1, "k\u00E9": 2}"#, #"{"o": {"x": 1, "x": 1}}"#,
        #"{"l": [{"x": 1}, {"y": 2, "y": 3}]}"#,
    ])
    func anObjectWithARepeatedNameIsRefusedByEveryParser(text: String) throws {
        let bytes = Array(text.utf8)
        #expect(throws: JSONParser.SyntaxError.self) { try JSONParser.parse(bytes) }
        #expect(throws: JSONParser.SyntaxError.self) { try JSONFields.parse(bytes) }
        do {
            _ = try JSONParser.parse(bytes)
        } catch {
            #expect(error.message.contains("appears twice in one object"), "\(error)")
        }
        // Kept for a caller that reports repeats itself (the scenario loader, with a JSON path).
        _ = try JSONParser.parse(bytes, duplicateNames: .keep)
    }

    /// `JSONFields.parse` searches for a repeat only when a name's bit (of 64) was seen before:
    /// with more names than bits, every bit is taken, and a repeat anywhere is still found while
    /// distinct names still pass.
    @Test func repeatsAmongMoreNamesThanTheParserHasBitsAreFound() throws {
        let names = (0..<150).map { "field_\($0)" }
        func object(_ names: [String]) -> [UInt8] { Array(("{" + names.map { "\"\($0)\": 1" }.joined(separator: ", ") + "}").utf8) }
        let fields = try #require(try JSONFields.parse(object(names)))
        #expect(fields["field_149"] != nil)
        for repeated in [0, 63, 64, 100, 149] {
            #expect(throws: JSONParser.SyntaxError.self) { try JSONFields.parse(object(names + [names[repeated]])) }
            #expect(throws: JSONParser.SyntaxError.self) { try JSONFields.parse(object([names[repeated]] + names)) }
        }
    }

    @Test func namesThatDifferOnlyInLengthOrAByteAreNotRepeats() throws {
        let text = #"{"a": 1, "ab": 2, "b": 3, "ba": 4, "\u0061b\u0063": 5}"#
        let fields = try #require(try JSONFields.parse(Array(text.utf8)))
        for (name, number) in [("abc", 5.0), ("ab", 2.0)] {
            guard case .number(let value)? = fields[name] else { Issue.record("\(name) missing"); continue }
            #expect(value == number)
        }
        #expect(try JSONParser.parse(text)["ba"] == .number(4))
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

    /// Integers are written as digits straight into the buffer, not through a `String`: the
    /// text must still be `String(value)`'s, at the extremes and for integral doubles (whose
    /// text is the integer's while it is exact), with other doubles in Swift's shortest form.
    @Test func integersAreWrittenAsStringWouldWriteThem() {
        var integers: [Int] = [0, 1, -1, 9, 10, -10, 99, 100, 12_345, -98_765, Int.max, Int.min, Int(Int32.max), 9_007_199_254_740_991]
        var tens = 1
        for power in 0...18 {
            integers += [tens, tens - 1, -tens, -(tens - 1)]
            if power < 18 { tens *= 10 }
        }
        for value in integers {
            var writer = JSONWriter()
            writer.integer(value)
            #expect(writer.text == String(value))
        }
        for value: UInt64 in [0, 7, UInt64(Int64.max), UInt64(Int64.max) + 1, UInt64.max] {
            var writer = JSONWriter()
            writer.integer(value)
            #expect(writer.text == String(value))
        }
        for value: Double in [0, -0.0, 1, -1, 86_400, 9_007_199_254_740_991, -9_007_199_254_740_991, 9_007_199_254_740_992, 0.5, -2.25, 1e300, .infinity] {
            var writer = JSONWriter()
            writer.number(value)
            let expected = !value.isFinite ? "null" : value == value.rounded() && abs(value) < 9_007_199_254_740_992 ? String(Int64(value)) : String(value)
            #expect(writer.text == expected, "\(value)")
        }
    }

    /// Hundredths (a price, an amount) are written from their digits, not by Swift's search for
    /// the shortest form: the text must still be `String(value)`'s, for every k/100 tried, and
    /// a number's canonical check decides from the text alone what reading it and writing it
    /// again decides.
    @Test func hundredthsAreWrittenAsStringWouldWriteThemAndReadAsCanonical() throws {
        var values: [Double] = [0.01, 0.05, 0.1, 0.5, 0.99, 1.01, 35.27, 99.9, 1e13 - 0.01, 9_999_999_999_999.99, 0.3 + 0.6, 0.1 + 0.2, 1e-3, 0.015, 2.675]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<20_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let k = Int64(truncatingIfNeeded: state >> 20) % 10_000_000_000_000_00
            values.append(Double(k) / 100)
            values.append(Double(k % 100_000) / 100)
            values.append(Double(bitPattern: state >> 2) )  // anything at all
        }
        for value in values + values.map(-) where value.isFinite {
            var writer = JSONWriter()
            writer.number(value)
            let expected = value == value.rounded() && abs(value) < 9_007_199_254_740_992 ? String(Int64(value)) : String(value)
            #expect(writer.text == expected, "\(value)")
            // Canonical: its own text is; with a trailing zero or a third decimal added, not.
            let text = Array(writer.text.utf8)
            for variant in [text, text + Array("0".utf8), text + Array("1".utf8)] {
                var cursor = JSONParser.Cursor(bytes: variant)
                let canonical = cursor.skipCanonical(depth: 0) && cursor.index == variant.count
                let parsed = try? JSONParser.parse(variant)
                let rewritten = parsed.map { JSONWriter.text(of: $0) }
                #expect(canonical == (rewritten.map { Array($0.utf8) } == variant), "\(String(decoding: variant, as: UTF8.self))")
            }
        }
    }

    /// `member(_:utf8:)` writes a name and a string in one go where it can: its text must be that
    /// of `key` then `string`, first member or not, with escapes, nested, and pretty-printed.
    @Test func aMemberWrittenAtOnceIsItsNameThenItsString() {
        let name = JSONWriter.Name("app_version")
        let values = ["1.2.3", "", "with \"quotes\" and \\", "tab\tnewline\n", "ünïcödé and a long value past sixteen bytes", "1234567"]
        for indent in [0, 2] {
            for value in values {
                var together = JSONWriter(indent: indent)
                var apart = JSONWriter(indent: indent)
                together.beginObject(); apart.beginObject()
                together.member(name, string: value); apart.key(name); apart.string(value)
                together.key("n"); apart.key("n")
                together.beginObject(); apart.beginObject()
                together.member(name, string: value); apart.key(name); apart.string(value)
                together.member(name, string: value); apart.key(name); apart.string(value)
                together.endObject(); apart.endObject()
                together.member(name, string: value); apart.key(name); apart.string(value)
                together.endObject(); apart.endObject()
                #expect(together.text == apart.text)
            }
        }
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

    // The mock keeps one writer for every event's canonical form: after `removeAll` it must write
    // as a new one would, whatever the last document left (an item in an open container, a key).
    @Test func aWriterEmptiedForReuseWritesAsANewOne() {
        var reused = JSONWriter()
        reused.beginArray()
        reused.beginObject()
        reused.key("left open")
        reused.removeAll()
        reused.string(utf8: "tab\there".utf8.span)
        #expect(reused.text == JSONWriter.text(of: .string("tab\there")))
        reused.removeAll()
        reused.write(["a": [1, "b"]])
        #expect(reused.text == JSONWriter.text(of: ["a": [1, "b"]]))
    }

    // The writer writes into room it made beforehand and grows it by copying what it holds: a
    // document far larger than its first room must come out as from a writer with room enough,
    // whichever call made it grow, and `takeBytes` hands over exactly what was written.
    @Test func aWriterThatOutgrowsItsRoomWritesWhatALargeOneWrites() {
        var value = JSONObject()
        for index in 0..<200 {
            value["name \(index) with \"quotes\""] = index % 3 == 0 ? .string(String(repeating: "x\n", count: index)) : .array([.number(Double(index)), .bool(true), .null])
        }
        var roomy = JSONWriter(capacity: 1 << 20)
        roomy.write(.object(value))
        for capacity in [0, 1, 7, 64] {
            var small = JSONWriter(capacity: capacity)
            small.write(.object(value))
            #expect(small.count == roomy.count)
            // Compared, not shown: a failure would print 100 kB of bytes.
            let sameBytes = small.bytes == roomy.bytes
            #expect(sameBytes, "first room \(capacity)")
            let taken = small.takeBytes()
            let sameTaken = taken == roomy.bytes
            #expect(sameTaken, "first room \(capacity), taken")
            #expect(small.count == 0)
            small.string("again")
            #expect(small.text == "\"again\"")
        }
    }

    @Test func prettyOutputIndentsNestedContainers() {
        let text = JSONWriter.text(of: ["a": [1, 2], "b": [:]], indent: 2)
        #expect(text == "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}")
    }
}
