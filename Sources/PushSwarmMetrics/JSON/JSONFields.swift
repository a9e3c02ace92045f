import PushSwarmSystem

/// The top-level members of a JSON object, found in one validating pass over its bytes without
/// building a tree for them: a string member is the range of its bytes, turned into a `String`
/// only when asked. A nested object or array is checked and kept as its range too: a tree is
/// made of it only when asked (`value(_:)`), and its canonical form, when its bytes are that form
/// already, is those bytes (`writeCanonical`).
///
/// For mock services, which look at a dozen fields of every request body: the same checks as
/// `JSONParser` (it is the same cursor), a fraction of its allocations. Names are compared byte
/// for byte (RFC 8259 §8.3), and the first member of a name wins, as in `JSONObject`.
public struct JSONFields: Sendable {
    /// A string value: its content's byte range in `bytes`, and whether it has no escapes (then
    /// the range is the string's UTF-8 as it stands).
    public struct Text: Sendable {
        public var content: Range<Int>
        public var isPlain: Bool
    }

    /// A member's value.
    public enum Value: Sendable {
        case string(Text)
        case number(Double)
        case bool(Bool)
        case null
        case array(Nested)
        case object(Nested)
    }

    /// A nested object or array: its bytes' range, and whether they are in the canonical form of
    /// `JSONWriter.write(_:sortingKeys: true)` already (compact, members in byte order of names).
    public struct Nested: Sendable {
        public var range: Range<Int>
        public var isCanonical: Bool
    }

    /// A name's UTF-8 as two words and a length: its first eight bytes and its last eight
    /// (zeros past a short name's end). For names of up to 16 bytes, most of those requests carry,
    /// these are the whole name: two such names are equal exactly when their signatures are, and
    /// a lookup reads no name's bytes. Longer names compare their middle bytes as well.
    fileprivate struct Signature: Sendable, Equatable {
        var head: UInt64
        var tail: UInt64
        var count: Int

        @inline(__always)
        init(_ name: Span<UInt8>) {
            count = name.count
            if count >= 8 {
                head = name.littleEndianWord(at: 0)
                tail = name.littleEndianWord(at: count - 8)
            } else {
                head = name.shortLittleEndianWord()
                tail = 0
            }
        }

        /// One of 64 bits, for the parse's look for repeated names.
        var bit: UInt64 {
            let mixed = (head &* 0x9E37_79B9_7F4A_7C15) ^ (tail &* 0xC2B2_AE3D_27D4_EB4F) ^ UInt64(truncatingIfNeeded: count)
            return 1 << (mixed >> 58)
        }

        /// Whether the signature is the whole name: then equal signatures are equal names.
        var isWhole: Bool { count <= 16 }
    }

    fileprivate struct Member: Sendable {
        var name: Range<Int>
        var isPlainName: Bool
        /// The name's signature (of its text once unescaped). A lookup compares these and reads
        /// a name's bytes only past 16 bytes: a mock looks up a dozen names in a dozen members
        /// for every request, and checks each new name against those before it.
        var signature: Signature
        var value: Value
    }

    public private(set) var bytes: [UInt8]
    private var members: [Member] = []
    /// The `Signature.bit`s of the members' names: a name whose bit is clear is not there, found
    /// so without a look at any member (a mock asks for optional members that most bodies lack).
    private var nameBits: UInt64 = 0

    /// No members, no bytes: a value to `parse` into.
    public init() { bytes = [] }

    /// The members of `bytes` when it is one JSON object; nil when it is valid JSON of another
    /// kind. Throws the parser's error, with line and column, when it is not valid JSON.
    public static func parse(_ bytes: [UInt8]) throws(JSONParser.SyntaxError) -> JSONFields? {
        var fields = JSONFields()
        return try fields.parse(bytes) ? fields : nil
    }

    /// `parse` into this value, in the room its members took before: a mock keeps one and parses
    /// every request body into it (the members' array was an allocation a request). True when
    /// `bytes` is one JSON object; false (and no members) when it is valid JSON of another kind.
    public mutating func parse(_ bytes: [UInt8]) throws(JSONParser.SyntaxError) -> Bool {
        self.bytes = bytes
        members.removeAll(keepingCapacity: true)
        nameBits = 0
        var cursor = JSONParser.Cursor(bytes: bytes)
        cursor.skipWhitespace()
        guard cursor.index < bytes.count, bytes[cursor.index] == UInt8(ascii: "{") else {
            _ = try JSONParser.parse(bytes)
            return false
        }
        if try cursor.beginObject(depth: 1) {
            members.reserveCapacity(16)
            // One bit for each name read, chosen by its signature: a name whose bit is clear is
            // not a repeat and needs no search.
            repeat {
                let (name, isPlain) = try cursor.memberName()
                let signature = isPlain ? Signature(bytes.span.extracting(name)) : try Self.signature(ofEscaped: name, cursor)
                let bit = signature.bit
                if nameBits & bit != 0, hasMember(named: name, isPlain: isPlain, signature: signature) {
                    throw cursor.duplicateName(cursor.text(name, isPlain: isPlain), at: name)
                }
                nameBits |= bit
                let value: Value
                if bytes[cursor.index] == UInt8(ascii: "\"") {
                    let (content, isPlainValue) = try cursor.scanString()
                    value = .string(Text(content: content, isPlain: isPlainValue))
                } else if bytes[cursor.index] == UInt8(ascii: "{") || bytes[cursor.index] == UInt8(ascii: "[") {
                    // Checked without a tree when canonical; otherwise parsed, which checks it and
                    // reports what is wrong, and the tree is dropped.
                    let start = cursor.index
                    let isCanonical = cursor.skipCanonical(depth: 1)
                    if !isCanonical {
                        cursor.index = start
                        _ = try cursor.parseValue(depth: 1)
                    }
                    let nested = Nested(range: start..<cursor.index, isCanonical: isCanonical)
                    value = bytes[start] == UInt8(ascii: "{") ? .object(nested) : .array(nested)
                } else {
                    switch try cursor.parseValue(depth: 1) {
                    case .null: value = .null
                    case .bool(let flag): value = .bool(flag)
                    case .number(let number): value = .number(number)
                    case .string, .array, .object: throw cursor.error("unexpected value")  // not reached: handled above
                    }
                }
                members.append(Member(name: name, isPlainName: isPlain, signature: signature, value: value))
            } while try cursor.nextMember()
        }
        cursor.skipWhitespace()
        if cursor.index < bytes.count { throw cursor.error("unexpected text after the JSON value") }
        return true
    }

    /// The signature of a name with escapes, made of its text with them resolved (rare).
    private static func signature(ofEscaped name: Range<Int>, _ cursor: JSONParser.Cursor) throws(JSONParser.SyntaxError) -> Signature {
        let text = try cursor.unescape(name)
        return Signature(text.span)
    }

    /// Whether a member already read has the name at `content` (names repeated in one object are
    /// refused: `JSONParser.DuplicateNames`), whose signature the parse has made.
    private func hasMember(named content: Range<Int>, isPlain: Bool, signature: Signature) -> Bool {
        if isPlain {
            return firstMember(named: bytes.span.extracting(content), signature: signature) != nil
        }
        return firstMember(named: unescaped(content).span, signature: signature) != nil
    }

    /// The place of the member whose name's UTF-8 is `wanted` (its signature `signature`), looked
    /// for from `start` on and then around from the first (names are unique: a repeated one
    /// fails the parse, so the one found is the first of that name).
    private func firstMember(named wanted: Span<UInt8>, signature: Signature, from start: Int = 0) -> Int? {
        guard nameBits & signature.bit != 0 else { return nil }
        let members = self.members.span
        let count = members.count
        var place = start < count ? start : 0
        for _ in 0..<count {
            if members[place].signature == signature, signature.isWhole || hasName(wanted, at: place) {
                return place
            }
            place = place + 1 == count ? 0 : place + 1
        }
        return nil
    }

    /// Whether the member at `place` is named `wanted`, byte for byte, escapes resolved (read
    /// only for names longer than 16 bytes).
    private func hasName(_ wanted: Span<UInt8>, at place: Int) -> Bool {
        let member = members[place]
        if member.isPlainName { return bytes.span.extracting(member.name).bytesEqual(wanted) }
        return unescaped(member.name).span.bytesEqual(wanted)
    }

    /// The value of the first member named `name`, or nil when there is none.
    public subscript(name: String) -> Value? {
        return name.withUTF8Span { firstMember(named: $0, signature: Signature($0)) }.map { members[$0].value }
    }

    /// The value of the member named `name`, looked for first at `next` and then around: a
    /// caller that asks for the members in the order a client writes them finds each at its
    /// first look. `next` becomes the place after the member found. (Names are unique: a
    /// repeated one fails the parse.)
    public func value(named name: String, next: inout Int) -> Value? {
        name.withUTF8Span { value(named: $0, signature: Signature($0), next: &next) }
    }

    /// A member name a caller looks up in every body it parses, with its signature made once (a mock
    /// looks a dozen names up in every request).
    public struct Name: Sendable {
        public let text: StaticString
        /// The text's UTF-8, held in place (a closure over the static text captured the fields,
        /// and copying them retained their arrays; an array here would be an object that every
        /// partition's mock retains, as their tables of names are shared). Names a mock looks up
        /// fit `capacity` bytes.
        private var utf8 = InlineArray<40, UInt8>(repeating: 0)
        private let count: Int
        fileprivate let signature: Signature

        public static let capacity = 40

        public init(_ text: StaticString) {
            let bytes = text.withUTF8Span { Array(decodingSpan: $0) }
            precondition(bytes.count <= Self.capacity, "JSONFields.Name holds \(Self.capacity) bytes; \(text) has \(bytes.count)")
            self.text = text
            count = bytes.count
            signature = Signature(bytes.span)
            for (index, byte) in bytes.enumerated() { utf8[index] = byte }
        }

        /// Calls `body` with the name's UTF-8, in place.
        @inline(__always)
        fileprivate func withUTF8<Result>(_ body: (Span<UInt8>) -> Result) -> Result {
            body(utf8.span.extracting(..<count))
        }

        public var string: String { text.description }
    }

    /// `value(named:next:)` for a `Name`.
    public func value(named name: Name, next: inout Int) -> Value? {
        let signature = name.signature
        let found = name.withUTF8 { firstMember(named: $0, signature: signature, from: next) }
        guard let place = found else { return nil }
        next = place + 1
        return members[place].value
    }

    private func value(named wanted: Span<UInt8>, signature: Signature, next: inout Int) -> Value? {
        guard let place = firstMember(named: wanted, signature: signature, from: next) else { return nil }
        next = place + 1
        return members[place].value
    }

    /// A nested object or array as a tree. It was checked when the fields were parsed, so this
    /// cannot fail.
    public func value(_ nested: Nested) -> JSONValue {
        var cursor = JSONParser.Cursor(bytes: bytes)
        cursor.index = nested.range.lowerBound
        return (try? cursor.parseValue(depth: 1)) ?? .null
    }

    /// Writes a nested object or array in canonical form (`JSONWriter.write(_:sortingKeys: true)`):
    /// its bytes as they stand when they are that form already, else through a tree.
    public func writeCanonical(_ nested: Nested, into writer: inout JSONWriter) {
        if nested.isCanonical {
            writer.json(bytes.span.extracting(nested.range))
        } else {
            writer.write(value(nested), sortingKeys: true)
        }
    }

    /// The text of a string value.
    public func text(_ text: Text) -> String {
        JSONParser.Cursor(bytes: bytes).text(text.content, isPlain: text.isPlain)
    }

    /// The UTF-8 of a string value: a slice of `bytes` when it is plain (no copy), its escapes
    /// resolved otherwise.
    public func utf8(_ text: Text) -> ArraySlice<UInt8> {
        text.isPlain ? bytes[text.content] : unescaped(text.content)[...]
    }

    /// Calls `body` with the UTF-8 of a string value, without making a `String` when it is plain.
    /// Inlinable, so that the mocks in another module get it specialized for their `Result`: the
    /// unspecialized calls (generic metadata, a closure context, the body not inlined) of this,
    /// `RFC3339.Text.withUTF8` and `UUIDValue.withUTF8` were costly (Benchmarks/README.md, "Measured choices").
    @inlinable
    public func withUTF8<Result>(_ text: Text, _ body: (Span<UInt8>) -> Result) -> Result {
        if text.isPlain {
            return body(bytes.span.extracting(text.content))
        }
        return body(unescaped(text.content).span)
    }

    /// Whether a string value is `other`, byte for byte.
    public func text(_ text: Text, equals other: String) -> Bool {
        return other.withUTF8Span { wanted in withUTF8(text) { $0.bytesEqual(wanted) } }
    }

    /// Escapes resolved; the string was checked when the fields were parsed, so this cannot fail.
    @usableFromInline
    func unescaped(_ content: Range<Int>) -> [UInt8] {
        (try? JSONParser.Cursor(bytes: bytes).unescape(content)) ?? []
    }
}
