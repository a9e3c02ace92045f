import PushSwarmSystem

/// Parses JSON text (RFC 8259) into a `JSONValue`, reporting where a syntax error is.
///
/// Written for two callers with different needs: scenario files, where an error must say line and
/// column, and mock services, which parse every request body on the hot path and must never crash
/// on hostile input (nesting is bounded, invalid UTF-8 is an error).
public struct JSONParser {
    /// A syntax error with its 1-based line and column.
    public struct SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public var line: Int
        public var column: Int
        public var description: String { "line \(line), column \(column): \(message)" }
    }

    /// Nesting deeper than this is rejected, so a body of ten thousand `[` cannot exhaust the stack.
    public static let maximumDepth = 128

    /// What an object whose member names repeat is. RFC 8259 section 4: "The names within an
    /// object SHOULD be unique", and when they are not "the behavior of software that receives
    /// such an object is unpredictable": some take the first, some the last. PushSwarm takes
    /// neither: such an object is an error everywhere (a mock answers it with 400, a device counts
    /// the answer as unreadable), except where the caller reports it better itself (the scenario
    /// loader names the member's JSON path), which asks to `keep` them.
    public enum DuplicateNames: Sendable {
        case reject
        case keep
    }

    public static func parse(_ text: String, duplicateNames: DuplicateNames = .reject) throws(SyntaxError) -> JSONValue {
        try parse(Array(text.utf8), duplicateNames: duplicateNames)
    }

    public static func parse(_ bytes: [UInt8], duplicateNames: DuplicateNames = .reject) throws(SyntaxError) -> JSONValue {
        var parser = Cursor(bytes: bytes)
        parser.rejectsDuplicateNames = duplicateNames == .reject
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        if parser.index < bytes.count {
            throw parser.error("unexpected text after the JSON value")
        }
        return value
    }

    struct Cursor {
        let bytes: [UInt8]
        var index = 0
        var rejectsDuplicateNames = true

        init(bytes: [UInt8]) { self.bytes = bytes }

        func error(_ message: String, at position: Int? = nil) -> SyntaxError {
            let end = min(position ?? index, bytes.count)
            var line = 1
            var column = 1
            for byte in bytes[0..<end] {
                if byte == UInt8(ascii: "\n") {
                    line += 1
                    column = 1
                } else if byte & 0xC0 != 0x80 {
                    column += 1
                }
            }
            return SyntaxError(message: message, line: line, column: column)
        }

        @inline(__always)
        mutating func skipWhitespace() {
            // Compact JSON has none: one look, inline, and no call.
            if index < bytes.count, bytes[index] > 0x20 { return }
            skipWhitespaceRun()
        }

        private mutating func skipWhitespaceRun() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func parseValue(depth: Int) throws(SyntaxError) -> JSONValue {
            guard index < bytes.count else { throw error("unexpected end of input, expected a value") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
            case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
            case UInt8(ascii: "\""): return .string(try parseString())
            case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
            case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
            case UInt8(ascii: "n"): try expectWord("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
            default: throw error("unexpected character, expected a value")
            }
        }

        mutating func expectWord(_ word: StaticString) throws(SyntaxError) {
            let start = index
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw error("invalid literal", at: start) }
            let matches = word.withUTF8Span { expected in bytes.span.extracting(index..<index + count).bytesEqual(expected) }
            guard matches else { throw error("invalid literal", at: start) }
            index += count
        }

        mutating func parseObject(depth: Int) throws(SyntaxError) -> JSONValue {
            var members: [(key: String, value: JSONValue)] = []
            guard try beginObject(depth: depth) else { return .object(JSONObject(members)) }
            // Request bodies have a dozen or so members: one allocation, not five regrowths.
            members.reserveCapacity(16)
            repeat {
                let (name, isPlain) = try memberName()
                let key = text(name, isPlain: isPlain)
                if rejectsDuplicateNames, members.contains(where: { $0.key == key }) { throw duplicateName(key, at: name) }
                members.append((key: key, value: try parseValue(depth: depth)))
            } while try nextMember()
            return .object(JSONObject(members))
        }

        /// The error for a member name seen before in the same object (see `DuplicateNames`).
        func duplicateName(_ name: String, at content: Range<Int>) -> SyntaxError {
            error("the member name \"\(name)\" appears twice in one object", at: content.lowerBound - 1)
        }

        // An object is walked in three steps, shared by `parseObject` and `JSONFields`:
        // `beginObject`, then per member `memberName`, its value, and `nextMember`.

        /// Enters the object that starts at `index` (a brace); false when it is empty (and passed).
        mutating func beginObject(depth: Int) throws(SyntaxError) -> Bool {
            guard depth <= JSONParser.maximumDepth else { throw error("nesting deeper than \(JSONParser.maximumDepth)") }
            index += 1
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return false
            }
            return true
        }

        /// Reads a member's name and colon, leaving `index` at its value; returns the name's
        /// content range and plainness (see `scanString`).
        mutating func memberName() throws(SyntaxError) -> (content: Range<Int>, isPlain: Bool) {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw error("expected a member name in double quotes")
            }
            let (name, isPlain) = try scanString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
                throw error("expected ':' after member name \"\(text(name, isPlain: isPlain))\"")
            }
            index += 1
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input, expected a value") }
            return (name, isPlain)
        }

        /// After a member's value: true when another member follows, false at the closing brace.
        mutating func nextMember() throws(SyntaxError) -> Bool {
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input inside an object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                return true
            }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return false
            }
            throw error("expected ',' or '}' in an object")
        }

        mutating func parseArray(depth: Int) throws(SyntaxError) -> JSONValue {
            guard depth <= JSONParser.maximumDepth else { throw error("nesting deeper than \(JSONParser.maximumDepth)") }
            index += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                elements.append(try parseValue(depth: depth))
                skipWhitespace()
                guard index < bytes.count else { throw error("unexpected end of input inside an array") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(elements)
                }
                throw error("expected ',' or ']' in an array")
            }
        }

        mutating func parseString() throws(SyntaxError) -> String {
            let (content, isPlain) = try scanString()
            return text(content, isPlain: isPlain)
        }

        /// The text of a string's content that `scanString` checked (so unescaping cannot fail).
        func text(_ content: Range<Int>, isPlain: Bool) -> String {
            if isPlain {
                return String(decodingUTF8: bytes.span.extracting(content))
            }
            return String(decoding: (try? unescape(content)) ?? [], as: UTF8.self)
        }

        /// Checks the string that starts at `index` (a quote) and moves past it. Returns the range
        /// of its content and whether it is *plain*: without escapes, so that its content is its
        /// UTF-8 as it stands. The one place where a string's validity is decided: escapes, paired
        /// surrogates, no control characters, valid UTF-8.
        mutating func scanString() throws(SyntaxError) -> (content: Range<Int>, isPlain: Bool) {
            let start = index
            index += 1
            let contentStart = index
            // Most strings are ASCII without escapes: they need no UTF-8 validation.
            var isASCII = true
            var isPlain = true
            while true {
                // Eight bytes at a time to the next byte that is not plain ASCII (a quote, a
                // backslash, a control character, 0x80 and above): its place is the lowest
                // flagged byte of the word, so the bytes before it are not looked at one by one.
                while index + 8 <= bytes.count {
                    let flags = Self.notPlainASCII(bytes.littleEndianWord(at: index))
                    if flags != 0 {
                        index += flags.trailingZeroBitCount / 8
                        break
                    }
                    index += 8
                }
                guard index < bytes.count else { break }
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let content = contentStart..<index
                    index += 1
                    if isPlain {
                        if !isASCII, !Self.isValidUTF8(bytes[content]) { throw error("string is not valid UTF-8", at: start) }
                    } else {
                        let decoded = try unescape(content)
                        if !Self.isValidUTF8(decoded[...]) { throw error("string is not valid UTF-8", at: start) }
                    }
                    return (content, isPlain)
                }
                if byte == UInt8(ascii: "\\") {
                    isPlain = false
                    index += 2
                    continue
                }
                if byte < 0x20 { throw error("control character inside a string") }
                if byte >= 0x80 { isASCII = false }
                index += 1
            }
            throw error("unterminated string", at: start)
        }

        /// The high bit of each byte of `word` (little-endian) that may not be plain ASCII: the
        /// lowest flagged byte is exactly the first such byte (a flag above it may be a false one,
        /// from a borrow), so `trailingZeroBitCount / 8` is its place.
        @inline(__always)
        static func notPlainASCII(_ word: UInt64) -> UInt64 {
            JSONWriter.escapeFlags(word) | word & 0x8080_8080_8080_8080
        }

        static func isValidUTF8(_ slice: ArraySlice<UInt8>) -> Bool {
            !transcode(slice.makeIterator(), from: UTF8.self, to: UTF32.self, stoppingOnError: true, into: { _ in })
        }

        /// The UTF-8 of a string's content with its escapes resolved.
        func unescape(_ content: Range<Int>) throws(SyntaxError) -> [UInt8] {
            var scalars: [UInt8] = []
            scalars.reserveCapacity(content.count)
            var index = content.lowerBound
            func hex4() throws(SyntaxError) -> UInt32 {
                guard index + 4 <= content.upperBound else { throw error("incomplete \\u escape", at: index) }
                var value: UInt32 = 0
                for _ in 0..<4 {
                    let byte = bytes[index]
                    let digit: UInt32
                    switch byte {
                    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                    case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                    case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                    default: throw error("invalid hex digit in \\u escape", at: index)
                    }
                    value = value << 4 | digit
                    index += 1
                }
                return value
            }
            while index < content.upperBound {
                let byte = bytes[index]
                guard byte == UInt8(ascii: "\\") else {
                    scalars.append(byte)
                    index += 1
                    continue
                }
                index += 1
                guard index < content.upperBound else { throw error("invalid escape sequence", at: index - 1) }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append(0x22)
                case UInt8(ascii: "\\"): scalars.append(0x5C)
                case UInt8(ascii: "/"): scalars.append(0x2F)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800...0xDBFF).contains(code) {
                        guard index + 1 < content.upperBound, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                        else { throw error("unpaired UTF-16 surrogate in \\u escape", at: index) }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired UTF-16 surrogate in \\u escape", at: index) }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(code) {
                        throw error("unpaired UTF-16 surrogate in \\u escape", at: index)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("invalid \\u escape", at: index) }
                    UTF8.encode(scalar) { scalars.append($0) }
                default:
                    throw error("invalid escape sequence", at: index - 2)
                }
            }
            return scalars
        }

        /// Moves past the value at `index` when it is valid JSON already in canonical form, the
        /// form `JSONWriter.write(_:sortingKeys: true)` gives it: no whitespace, object members in
        /// strictly ascending byte order of their names (so none repeats), names and strings
        /// without escapes, numbers as the writer writes them. Returns false for anything else,
        /// valid or not, leaving `index` anywhere: the caller starts again at the value with
        /// `parseValue`, which decides and reports. `depth` is that of the container holding the
        /// value, as for `parseValue`.
        ///
        /// What a mock keeps of a nested object it only hashes: checked without building a tree,
        /// and its canonical form is its bytes as they stand.
        mutating func skipCanonical(depth: Int) -> Bool {
            guard index < bytes.count else { return false }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                guard depth + 1 <= JSONParser.maximumDepth else { return false }
                index += 1
                if passes(UInt8(ascii: "}")) { return true }
                var previous: Range<Int>?
                while true {
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\""),
                        let (name, isPlain) = try? scanString(), isPlain
                    else { return false }
                    if let previous, !namePrecedes(previous, name) { return false }
                    previous = name
                    guard passes(UInt8(ascii: ":")), skipCanonical(depth: depth + 1) else { return false }
                    if passes(UInt8(ascii: "}")) { return true }
                    guard passes(UInt8(ascii: ",")) else { return false }
                }
            case UInt8(ascii: "["):
                guard depth + 1 <= JSONParser.maximumDepth else { return false }
                index += 1
                if passes(UInt8(ascii: "]")) { return true }
                while true {
                    guard skipCanonical(depth: depth + 1) else { return false }
                    if passes(UInt8(ascii: "]")) { return true }
                    guard passes(UInt8(ascii: ",")) else { return false }
                }
            case UInt8(ascii: "\""):
                guard let (_, isPlain) = try? scanString() else { return false }
                return isPlain
            case UInt8(ascii: "t"): return (try? expectWord("true")) != nil
            case UInt8(ascii: "f"): return (try? expectWord("false")) != nil
            case UInt8(ascii: "n"): return (try? expectWord("null")) != nil
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return skipCanonicalNumber()
            default: return false
            }
        }

        /// Moves past `byte` when it is next; false when something else (or nothing) is.
        private mutating func passes(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        /// A number written as the writer writes it. An integer of up to 15 digits without a
        /// leading zero (nor `-0`) is decided from its digits; any other number is parsed and
        /// written again, and must come out the same.
        private mutating func skipCanonicalNumber() -> Bool {
            let start = index
            var digitsStart = index
            if bytes[index] == UInt8(ascii: "-") {
                index += 1
                digitsStart = index
            }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            let digits = index - digitsStart
            let isPlainInteger = digits > 0 && digits <= 15 && (bytes[digitsStart] != UInt8(ascii: "0") || digits == 1 && digitsStart == start)
            if isPlainInteger, index == bytes.count || !Self.continuesNumber(bytes[index]) { return true }
            // Hundredths (`JSONWriter.hundredths`): up to 13 digits without a leading zero (or a
            // lone 0), a point, one or two digits, the last not 0, is the writer's form of the
            // number it reads as, decided without reading it.
            let hasLeadingZero = digits > 1 && bytes[digitsStart] == UInt8(ascii: "0")
            if digits > 0, digits <= 13, !hasLeadingZero, index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                var end = index + 1
                while end < bytes.count, end - index <= 3, isDigit(bytes[end]) { end += 1 }
                let fraction = end - index - 1
                if fraction >= 1, fraction <= 2, bytes[end - 1] != UInt8(ascii: "0"), end == bytes.count || !Self.continuesNumber(bytes[end]) {
                    index = end
                    return true
                }
            }
            index = start
            guard let value = try? parseNumber() else { return false }
            return JSONWriter.numberText(value).utf8.elementsEqual(bytes[start..<index])
        }

        private static func continuesNumber(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
        }

        /// Whether the plain name at `a` comes before the one at `b` in byte order (a prefix first):
        /// `JSONObject.sortedMembers`'s order.
        private func namePrecedes(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
            bytes[a].lexicographicallyPrecedes(bytes[b])
        }

        mutating func parseNumber() throws(SyntaxError) -> Double {
            let start = index
            if bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number", at: start) }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number", at: start) }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    index += 1
                }
                guard index < bytes.count, isDigit(bytes[index]) else { throw error("invalid number", at: start) }
                while index < bytes.count, isDigit(bytes[index]) { index += 1 }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            guard let value = Double(text), value.isFinite else { throw error("number out of range", at: start) }
            return value
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
    }
}
