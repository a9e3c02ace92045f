public import PushSwarmSystem

/// Writes JSON text into a byte buffer, with deterministic output: members in the order given,
/// integral numbers without a fraction, other numbers in Swift's shortest round-trip form.
///
/// Used two ways: streaming (`beginObject`, `key`, `string`…) on hot paths where building a tree
/// would allocate, and `write(_:)` for a whole `JSONValue`.
public struct JSONWriter: Sendable {
    /// The document so far.
    @usableFromInline var buffer: ByteWriter
    /// Bytes written.
    public var count: Int { buffer.count }
    private let indentUnit: Int
    private var depth = 0
    /// Whether each open container has a member or element already (for commas), one bit per
    /// level, innermost in bit 0; levels deeper than 64 spill into `deeperHasItems`.
    private var hasItems: UInt64 = 0
    private var deeperHasItems: [Bool] = []
    private var afterKey = false

    /// - Parameters:
    ///   - indent: spaces per level for pretty output; 0 writes compact JSON.
    ///   - capacity: bytes reserved up front; a document that outgrows them is copied as it grows.
    public init(indent: Int = 0, capacity: Int = 512) {
        self.indentUnit = indent
        buffer = ByteWriter(capacity: capacity)
    }

    /// The bytes written (a copy when there is room left over; `takeBytes` hands them over).
    public var bytes: [UInt8] { buffer.bytes }

    /// The bytes written, handed over without a copy; the writer is left empty, with no room.
    public mutating func takeBytes() -> [UInt8] {
        let taken = buffer.takeBytes()
        removeAll()
        return taken
    }

    /// The bytes written, read in place.
    @inlinable
    public func withBytes<Result>(_ body: (Span<UInt8>) throws -> Result) rethrows -> Result {
        try buffer.withBytes(body)
    }

    public var text: String { withBytes { String(decodingUTF8: $0) } }

    public mutating func beginObject() {
        prepareForValue()
        append(UInt8(ascii: "{"))
        pushLevel()
    }

    public mutating func endObject() {
        if popLevel() { newline() }
        append(UInt8(ascii: "}"))
    }

    public mutating func beginArray() {
        prepareForValue()
        append(UInt8(ascii: "["))
        pushLevel()
    }

    public mutating func endArray() {
        if popLevel() { newline() }
        append(UInt8(ascii: "]"))
    }

    public mutating func key(_ name: String) {
        name.withUTF8Span { key(utf8: $0) }
    }

    private mutating func key(utf8: Span<UInt8>) {
        // Compact output and a name without escapes (all of them, in practice): the comma,
        // the quoted name and the colon in one write.
        guard indentUnit == 0, depth > 0, Self.firstEscape(in: utf8) == nil else {
            separate()
            appendQuoted(utf8)
            endName()
            return
        }
        let needsComma = hasItems & 1 != 0
        hasItems |= 1
        buffer.appendQuoted(utf8, leading: needsComma ? UInt8(ascii: ",") : nil, trailing: UInt8(ascii: ":"))
        afterKey = true
    }

    /// A string's JSON form (quotes and escapes included), made once for a name or value that a
    /// hot path writes again and again: written by copying its bytes, with no escaping scan.
    public struct Quoted: Sendable {
        public let bytes: [UInt8]

        public init(_ text: String) {
            var writer = JSONWriter()
            writer.string(text)
            bytes = writer.takeBytes()
        }
    }

    /// A member's name made once with the comma before it and the colon after it (`,"name":`):
    /// in compact output it is written by one copy, where `key(_: String)` appends several times.
    ///
    /// The text is held in place, not in an array: a `Name` is copied with no reference to count
    /// (a hot path reads its names out of a table, and each read of an array-backed name was a
    /// retain and a release). That bounds it: `,"name":` fits in `capacity` bytes, which member
    /// names written in code do.
    public struct Name: Sendable {
        public static let capacity = 48
        /// Bytes as bytes (`InlineArray`): read as `UInt8`, as they are bound, never by a cast of
        /// wider words (which the standard library's rules leave undefined).
        private var storage = InlineArray<48, UInt8>(repeating: 0)
        private let count: Int

        public init(_ name: String) {
            let text = [UInt8(ascii: ",")] + Quoted(name).bytes + [UInt8(ascii: ":")]
            precondition(text.count <= Self.capacity, "JSONWriter.Name holds ,\"name\": in \(Self.capacity) bytes; \(name.debugDescription) takes \(text.count)")
            count = text.count
            for (index, byte) in text.enumerated() { storage[index] = byte }
        }

        /// `,"name":`
        public var bytes: [UInt8] { (0..<count).map { storage[$0] } }

        /// Appends the name's bytes from `start` on (0: with the comma; 1: without).
        @inline(__always)
        func append(from start: Int, to buffer: inout ByteWriter) {
            if start == 0 {
                buffer.append(prefix: count, of: storage)
            } else {
                buffer.append(storage.span.extracting(start..<count))
            }
        }

        /// Appends the name's bytes from `start` on and `value` quoted, in one write.
        @inline(__always)
        func append(from start: Int, thenQuoted value: Span<UInt8>, to buffer: inout ByteWriter) {
            if start == 0 {
                buffer.append(prefix: count, of: storage, thenQuoted: value)
            } else {
                buffer.append(storage.span.extracting(start..<count), thenQuoted: value)
            }
        }

        /// The name alone, without the comma and the colon.
        @inline(__always)
        func appendBare(to buffer: inout ByteWriter) {
            buffer.append(storage.span.extracting(1..<count - 1))
        }
    }

    public mutating func key(_ name: Name) {
        guard indentUnit == 0, depth > 0 else {
            separate()
            name.appendBare(to: &buffer)
            endName()
            return
        }
        let needsComma = hasItems & 1 != 0
        hasItems |= 1
        name.append(from: needsComma ? 0 : 1, to: &buffer)
        afterKey = true
    }

    /// A member whose value is a string given as its UTF-8 (valid, as for `string(utf8:)`):
    /// `key(name)` then `string(utf8:)`, but in compact output, with a value that needs no
    /// escaping (every one, in practice), the name and the quoted value in one write. An event
    /// body is a dozen such members: half its writes, each of which checked the buffer's
    /// uniqueness.
    public mutating func member(_ name: Name, utf8: Span<UInt8>) {
        guard Self.firstEscape(in: utf8) == nil else {
            key(name)
            string(utf8: utf8)
            return
        }
        member(name, plain: utf8)
    }

    /// `member(_:utf8:)` for a value `member(_:utf8:)` has just looked at and found nothing JSON
    /// escapes in: in compact output as `,"name":"value"` in one write. Private, so that no
    /// caller can promise a value plain without the look (a wrong promise wrote invalid JSON).
    private mutating func member(_ name: Name, plain utf8: Span<UInt8>) {
        guard indentUnit == 0, depth > 0, !afterKey else {
            key(name)
            prepareForValue()
            appendPlainQuoted(utf8)
            return
        }
        let needsComma = hasItems & 1 != 0
        hasItems |= 1
        name.append(from: needsComma ? 0 : 1, thenQuoted: utf8, to: &buffer)
    }

    /// `member(_:utf8:)` with the value as a `String`.
    public mutating func member(_ name: Name, string value: String) {
        value.withUTF8Span { member(name, utf8: $0) }
    }

    /// After a member's name: the colon, and the value comes next.
    private mutating func endName() {
        append(UInt8(ascii: ":"))
        if indentUnit > 0 { append(UInt8(ascii: " ")) }
        afterKey = true
    }

    public mutating func string(_ value: Quoted) {
        prepareForValue()
        buffer.append(value.bytes.span)
    }

    public mutating func string(_ value: String) {
        prepareForValue()
        value.withUTF8Span { appendQuoted($0) }
    }

    /// A string given as its UTF-8, which must be valid (as `JSONFields` gives it): written
    /// without making a `String` of it.
    public mutating func string(utf8: Span<UInt8>) {
        prepareForValue()
        appendQuoted(utf8)
    }

    /// Writes one value with `write` and returns where its own text is in `bytes`: after the
    /// comma or indentation that separates it from what came before. For a caller that hashes
    /// or keeps a value's text as written.
    public mutating func writeValue(_ write: (inout JSONWriter) -> Void) -> Range<Int> {
        let start = valueStart()
        write(&self)
        return start..<count
    }

    /// `writeValue` in two steps, without a closure: writes the separator before the next value
    /// and returns where the value's own text will start (it ends at `count` once written).
    public mutating func valueStart() -> Int {
        prepareForValue()
        // The separator is written: the value's own first call writes none.
        afterKey = true
        return count
    }

    /// A value already in JSON form (compact, as this writer would write it), copied as it stands.
    public mutating func json(_ text: Span<UInt8>) {
        prepareForValue()
        buffer.append(text)
    }

    /// Empties the writer for another document, keeping its buffer's capacity.
    public mutating func removeAll() {
        buffer.removeAll()
        depth = 0
        hasItems = 0
        deeperHasItems.removeAll()
        afterKey = false
    }

    /// Hands the bytes written so far to `output` and empties the buffer, keeping its capacity
    /// and the document's state: a large document goes to a file in pieces.
    public mutating func flush(to output: ([UInt8]) throws -> Void) rethrows {
        try output(bytes)
        buffer.removeAll()
    }

    /// Ends a finished document with a newline, as a file of it ends.
    public mutating func newlineAtEnd() {
        append(UInt8(ascii: "\n"))
    }

    public mutating func number(_ value: Double) {
        prepareForValue()
        appendNumber(value)
    }

    public mutating func integer(_ value: Int) {
        prepareForValue()
        appendInteger(Int64(value))
    }

    /// A count, as `integer` writes it (no `Double` on the way: every `UInt64` is exact).
    public mutating func integer(_ value: UInt64) {
        prepareForValue()
        if value <= UInt64(Int64.max) {
            appendInteger(Int64(value))
        } else {
            String(value).withUTF8Span { buffer.append($0) }
        }
    }

    public mutating func bool(_ value: Bool) {
        prepareForValue()
        buffer.append(value ? "true" : "false")
    }

    public mutating func null() {
        prepareForValue()
        buffer.append("null")
    }

    /// Writes a whole value; with `sortingKeys`, object members in byte order of their names
    /// (the canonical form used for fingerprints).
    public mutating func write(_ value: JSONValue, sortingKeys: Bool = false) {
        switch value {
        case .null: null()
        case .bool(let flag): bool(flag)
        case .number(let number): self.number(number)
        case .string(let text): string(text)
        case .array(let elements):
            beginArray()
            for element in elements { write(element, sortingKeys: sortingKeys) }
            endArray()
        case .object(let object):
            beginObject()
            let members = sortingKeys ? object.sortedMembers : object.members
            for member in members {
                key(member.key)
                write(member.value, sortingKeys: sortingKeys)
            }
            endObject()
        }
    }

    /// A whole value as text.
    public static func text(of value: JSONValue, indent: Int = 0, sortingKeys: Bool = false) -> String {
        var writer = JSONWriter(indent: indent)
        writer.write(value, sortingKeys: sortingKeys)
        return writer.text
    }

    /// A whole value as UTF-8 bytes.
    public static func bytes(of value: JSONValue, indent: Int = 0, sortingKeys: Bool = false) -> [UInt8] {
        var writer = JSONWriter(indent: indent)
        writer.write(value, sortingKeys: sortingKeys)
        return writer.takeBytes()
    }

    private mutating func prepareForValue() {
        if afterKey {
            afterKey = false
            return
        }
        separate()
    }

    private mutating func pushLevel() {
        if depth >= 64 { deeperHasItems.append(hasItems >> 63 != 0) }
        hasItems <<= 1
        depth += 1
    }

    /// Closes the innermost level; returns whether it had items.
    private mutating func popLevel() -> Bool {
        let had = hasItems & 1 != 0
        hasItems >>= 1
        depth -= 1
        if depth >= 64, deeperHasItems.removeLast() { hasItems |= 1 << 63 }
        return had
    }

    private mutating func separate() {
        guard depth > 0 else { return }
        if hasItems & 1 != 0 { append(UInt8(ascii: ",")) }
        hasItems |= 1
        newline()
    }

    private mutating func newline() {
        guard indentUnit > 0 else { return }
        append(UInt8(ascii: "\n"))
        buffer.append(repeating: UInt8(ascii: " "), count: depth * indentUnit)
    }

    // MARK: - The buffer

    @inline(__always)
    mutating func append(_ byte: UInt8) { buffer.append(byte) }

    @inline(__always)
    mutating func append(_ first: UInt8, _ second: UInt8) { buffer.append(first, second) }

    @inline(__always)
    mutating func append(_ bytes: Span<UInt8>) { buffer.append(bytes) }
}
