/// Writes JSON text into a byte buffer, with deterministic output: members in the order given,
/// integral numbers without a fraction, other numbers in Swift's shortest round-trip form.
///
/// Used two ways: streaming (`beginObject`, `key`, `string`…) on hot paths where building a tree
/// would allocate, and `write(_:)` for a whole `JSONValue`.
public struct JSONWriter: Sendable {
    /// The document so far is `storage[..<count]`; the rest is room to write into, whose bytes
    /// are never read. A call makes room once and stores through a pointer: one uniqueness check
    /// of the array a call, where appending checks once an append (five times for a member's
    /// name: comma, quote, text, quote, colon).
    @usableFromInline private(set) var storage: [UInt8]
    /// Bytes written.
    public private(set) var count = 0
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
        storage = Self.room(capacity)
    }

    /// The bytes written (a copy when there is room left over; `takeBytes` hands them over).
    public var bytes: [UInt8] { count == storage.count ? storage : Array(storage[..<count]) }

    /// The bytes written, handed over without a copy; the writer is left empty, with no room.
    public mutating func takeBytes() -> [UInt8] {
        var taken: [UInt8] = []
        swap(&taken, &storage)
        // At the end of a unique array of bytes: the count shrinks, nothing moves.
        taken.removeSubrange(count...)
        removeAll()
        return taken
    }

    /// The bytes written, read in place.
    @inlinable
    public func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try storage.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[..<count])) }
    }

    public var text: String { withBytes { String(decoding: $0, as: UTF8.self) } }

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
        name.withContiguousUTF8 { utf8 in
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
            write(upTo: utf8.count + 4) { out in
                var at = 0
                if needsComma {
                    out[0] = UInt8(ascii: ",")
                    at = 1
                }
                out[at] = UInt8(ascii: "\"")
                Self.copy(utf8, to: out + at + 1)
                out[at + 1 + utf8.count] = UInt8(ascii: "\"")
                out[at + 2 + utf8.count] = UInt8(ascii: ":")
                return at + 3 + utf8.count
            }
            afterKey = true
        }
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
            text.withUnsafeBytes { text in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: text) } }
        }

        /// `,"name":`
        public var bytes: [UInt8] { withBytes { Array($0) } }

        func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
            storage.span.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[..<count])) }
        }

        /// Stores all `capacity` bytes at `out` (room the caller made) and says how many of them
        /// are the name's.
        @inline(__always)
        func store(to out: UnsafeMutablePointer<UInt8>) -> Int {
            storage.span.withUnsafeBufferPointer { out.update(from: $0.baseAddress!, count: Self.capacity) }
            return count
        }
    }

    public mutating func key(_ name: Name) {
        guard indentUnit == 0, depth > 0 else {
            separate()
            name.withBytes { append(UnsafeBufferPointer(rebasing: $0.dropFirst().dropLast())) }
            endName()
            return
        }
        let needsComma = hasItems & 1 != 0
        hasItems |= 1
        if needsComma {
            // All 48 bytes of room at once, as six word stores (a call of memmove for a dozen
            // bytes cost more than the copy); the count moves on by the name's own length.
            write(upTo: Name.capacity) { out in name.store(to: out) }
        } else {
            name.withBytes { all in append(UnsafeBufferPointer(rebasing: all.dropFirst())) }
        }
        afterKey = true
    }

    /// A member whose value is a string given as its UTF-8 (valid, as for `string(utf8:)`):
    /// `key(name)` then `string(utf8:)`, but in compact output, with a value that needs no
    /// escaping (every one, in practice), the name and the quoted value in one write. An event
    /// body is a dozen such members: half its writes, each of which checked the buffer's
    /// uniqueness.
    public mutating func member(_ name: Name, utf8: UnsafeBufferPointer<UInt8>) {
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
    private mutating func member(_ name: Name, plain utf8: UnsafeBufferPointer<UInt8>) {
        guard indentUnit == 0, depth > 0, !afterKey else {
            key(name)
            prepareForValue()
            appendPlainQuoted(utf8)
            return
        }
        let needsComma = hasItems & 1 != 0
        hasItems |= 1
        write(upTo: Name.capacity + utf8.count + 2) { out in
            var at: Int
            if needsComma {
                at = name.store(to: out)
            } else {
                at = name.withBytes { all in
                    out.update(from: all.baseAddress! + 1, count: all.count - 1)
                    return all.count - 1
                }
            }
            out[at] = UInt8(ascii: "\"")
            Self.copy(utf8, to: out + at + 1)
            at += utf8.count + 1
            out[at] = UInt8(ascii: "\"")
            return at + 1
        }
    }

    /// `member(_:utf8:)` with the value as a `String`.
    public mutating func member(_ name: Name, string value: String) {
        value.withContiguousUTF8 { member(name, utf8: $0) }
    }

    /// After a member's name: the colon, and the value comes next.
    private mutating func endName() {
        append(UInt8(ascii: ":"))
        if indentUnit > 0 { append(UInt8(ascii: " ")) }
        afterKey = true
    }

    public mutating func string(_ value: Quoted) {
        prepareForValue()
        value.bytes.withUnsafeBufferPointer { append($0) }
    }

    public mutating func string(_ value: String) {
        prepareForValue()
        value.withContiguousUTF8 { appendQuoted($0) }
    }

    /// A string given as its UTF-8, which must be valid (as `JSONFields` gives it): written
    /// without making a `String` of it.
    public mutating func string(utf8: UnsafeBufferPointer<UInt8>) {
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
    public mutating func json(_ text: UnsafeBufferPointer<UInt8>) {
        prepareForValue()
        append(text)
    }

    /// Empties the writer for another document, keeping its buffer's capacity.
    public mutating func removeAll() {
        count = 0
        depth = 0
        hasItems = 0
        deeperHasItems.removeAll()
        afterKey = false
    }

    /// Hands the bytes written so far to `output` and empties the buffer, keeping its capacity
    /// and the document's state: a large document goes to a file in pieces.
    public mutating func flush(to output: ([UInt8]) throws -> Void) rethrows {
        try output(bytes)
        count = 0
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
            String(value).withContiguousUTF8 { append($0) }
        }
    }

    public mutating func bool(_ value: Bool) {
        prepareForValue()
        value ? append(Self.trueText) : append(Self.falseText)
    }

    public mutating func null() {
        prepareForValue()
        append(Self.nullText)
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
        let spaces = depth * indentUnit
        write(upTo: spaces) { out in
            out.initialize(repeating: UInt8(ascii: " "), count: spaces)
            return spaces
        }
    }

    // MARK: - The buffer

    private static let trueText: StaticString = "true"
    private static let falseText: StaticString = "false"
    private static let nullText: StaticString = "null"

    /// `capacity` bytes to write into (left uninitialised: only bytes written are read).
    private static func room(_ capacity: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: capacity) { _, initialized in initialized = capacity }
    }

    /// Makes room for up to `maximum` bytes, then `body` writes them at the end and says how many.
    @inline(__always)
    mutating func write(upTo maximum: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
        if maximum > storage.count - count { grow(toHold: count + maximum) }
        let start = count
        count += storage.withUnsafeMutableBufferPointer { body($0.baseAddress! + start) }
    }

    @inline(never)
    private mutating func grow(toHold needed: Int) {
        var larger = Self.room(Swift.max(needed, storage.count * 2, 64))
        let written = count
        if written > 0 {
            storage.withUnsafeBufferPointer { old in
                larger.withUnsafeMutableBufferPointer { new in Self.copy(UnsafeBufferPointer(rebasing: old[..<written]), to: new.baseAddress!) }
            }
        }
        storage = larger
    }

    /// Copies `bytes` to `destination`: 8 to 16 bytes as two words that may overlap (most of the
    /// strings an event holds; memmove's call cost more than such a copy), others by memmove.
    @inline(__always)
    static func copy(_ bytes: UnsafeBufferPointer<UInt8>, to destination: UnsafeMutablePointer<UInt8>) {
        guard let base = bytes.baseAddress else { return }
        let count = bytes.count
        if count >= 8 && count <= 16 {
            let source = UnsafeRawPointer(base)
            let first = source.loadUnaligned(as: UInt64.self)
            let last = source.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
            let target = UnsafeMutableRawPointer(destination)
            target.storeBytes(of: first, as: UInt64.self)
            target.storeBytes(of: last, toByteOffset: count - 8, as: UInt64.self)
        } else {
            destination.update(from: base, count: count)
        }
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        write(upTo: 1) { out in
            out[0] = byte
            return 1
        }
    }

    @inline(__always)
    mutating func append(_ first: UInt8, _ second: UInt8) {
        write(upTo: 2) { out in
            out[0] = first
            out[1] = second
            return 2
        }
    }

    @inline(__always)
    mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        write(upTo: bytes.count) { out in
            Self.copy(bytes, to: out)
            return bytes.count
        }
    }

    private mutating func append(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }
}
