/// Writes JSON text into a byte buffer, with deterministic output: members in the order given,
/// integral numbers without a fraction, other numbers in Swift's shortest round-trip form.
///
/// Used two ways: streaming (`beginObject`, `key`, `string`…) on hot paths where building a tree
/// would allocate, and `write(_:)` for a whole `JSONValue`.
public struct JSONWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
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
        bytes.reserveCapacity(capacity)
    }

    public var text: String { String(decoding: bytes, as: UTF8.self) }

    public mutating func beginObject() {
        prepareForValue()
        bytes.append(UInt8(ascii: "{"))
        pushLevel()
    }

    public mutating func endObject() {
        if popLevel() { newline() }
        bytes.append(UInt8(ascii: "}"))
    }

    public mutating func beginArray() {
        prepareForValue()
        bytes.append(UInt8(ascii: "["))
        pushLevel()
    }

    public mutating func endArray() {
        if popLevel() { newline() }
        bytes.append(UInt8(ascii: "]"))
    }

    public mutating func key(_ name: String) {
        separate()
        name.withContiguousUTF8 { appendQuoted($0) }
        endName()
    }

    /// A string's JSON form (quotes and escapes included), made once for a name or value that a
    /// hot path writes again and again: written by copying its bytes, with no escaping scan.
    public struct Quoted: Sendable {
        public let bytes: [UInt8]

        public init(_ text: String) {
            var writer = JSONWriter()
            writer.string(text)
            bytes = writer.bytes
        }
    }

    /// A member's name made once with the comma before it and the colon after it (`,"name":`):
    /// in compact output it is written by one copy, where `key(_: String)` appends several times.
    public struct Name: Sendable {
        /// `,"name":`
        public let bytes: [UInt8]

        public init(_ name: String) {
            bytes = [UInt8(ascii: ",")] + Quoted(name).bytes + [UInt8(ascii: ":")]
        }
    }

    public mutating func key(_ name: Name) {
        guard indentUnit == 0, depth > 0 else {
            separate()
            bytes.append(contentsOf: name.bytes[1..<(name.bytes.count - 1)])
            endName()
            return
        }
        let needsComma = hasItems & 1 != 0
        hasItems |= 1
        name.bytes.withUnsafeBufferPointer { all in
            bytes.append(contentsOf: needsComma ? all : UnsafeBufferPointer(rebasing: all.dropFirst()))
        }
        afterKey = true
    }

    /// After a member's name: the colon, and the value comes next.
    private mutating func endName() {
        bytes.append(UInt8(ascii: ":"))
        if indentUnit > 0 { bytes.append(UInt8(ascii: " ")) }
        afterKey = true
    }

    public mutating func string(_ value: Quoted) {
        prepareForValue()
        bytes.append(contentsOf: value.bytes)
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
        return start..<bytes.count
    }

    /// `writeValue` in two steps, without a closure: writes the separator before the next value
    /// and returns where the value's own text will start (it ends at `bytes.count` once written).
    public mutating func valueStart() -> Int {
        prepareForValue()
        // The separator is written: the value's own first call writes none.
        afterKey = true
        return bytes.count
    }

    /// A value already in JSON form (compact, as this writer would write it), copied as it stands.
    public mutating func json(_ text: UnsafeBufferPointer<UInt8>) {
        prepareForValue()
        bytes.append(contentsOf: text)
    }

    /// Empties the writer for another document, keeping its buffer's capacity.
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        depth = 0
        hasItems = 0
        deeperHasItems.removeAll()
        afterKey = false
    }

    /// Hands the bytes written so far to `output` and empties the buffer, keeping its capacity
    /// and the document's state: a large document goes to a file in pieces.
    public mutating func flush(to output: ([UInt8]) throws -> Void) rethrows {
        try output(bytes)
        bytes.removeAll(keepingCapacity: true)
    }

    /// Ends a finished document with a newline, as a file of it ends.
    public mutating func newlineAtEnd() {
        bytes.append(UInt8(ascii: "\n"))
    }

    public mutating func number(_ value: Double) {
        prepareForValue()
        appendNumber(value)
    }

    public mutating func integer(_ value: Int) {
        prepareForValue()
        bytes.append(contentsOf: String(value).utf8)
    }

    public mutating func bool(_ value: Bool) {
        prepareForValue()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    public mutating func null() {
        prepareForValue()
        bytes.append(contentsOf: "null".utf8)
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
        return writer.bytes
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
        if hasItems & 1 != 0 { bytes.append(UInt8(ascii: ",")) }
        hasItems |= 1
        newline()
    }

    private mutating func newline() {
        guard indentUnit > 0 else { return }
        bytes.append(UInt8(ascii: "\n"))
        for _ in 0..<(depth * indentUnit) { bytes.append(UInt8(ascii: " ")) }
    }

    private mutating func appendNumber(_ value: Double) { bytes.append(contentsOf: Self.numberText(value).utf8) }

    /// A number as the writer writes it: integral ones without a fraction, others in Swift's
    /// shortest round-trip form, non-finite ones as null. (Most fit a `String`'s inline storage:
    /// no allocation.)
    static func numberText(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 { return String(Int64(value)) }
        return String(value)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private mutating func appendQuoted(_ utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        // Copy runs that need no escaping in one go; most strings are a single run. The scan
        // looks at eight bytes at a time for a control character, a quote or a backslash.
        var runStart = 0
        var index = 0
        while index < utf8.count {
            // The next eight bytes (fewer at the end, padded with spaces): past them when none
            // needs escaping, else straight to the first that may.
            let available = min(8, utf8.count - index)
            var word: UInt64
            if available == 8 {
                word = UInt64(littleEndian: UnsafeRawPointer(utf8.baseAddress! + index).loadUnaligned(as: UInt64.self))
            } else {
                word = 0x2020_2020_2020_2020
                for offset in 0..<available { word = word & ~(0xFF << (8 * UInt64(offset))) | UInt64(utf8[index + offset]) << (8 * UInt64(offset)) }
            }
            let flags = Self.escapeFlags(word)
            if flags == 0 {
                index += available
                continue
            }
            index += flags.trailingZeroBitCount / 8
            let byte = utf8[index]
            index += 1
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<(index - 1)]))
            runStart = index
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            default:
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30])
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0xF)])
            }
        }
        bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count]))
        bytes.append(UInt8(ascii: "\""))
    }

    /// The high bit of each byte of `word` that may need escaping: below 0x20, a quote or a
    /// backslash (the classic "has a zero byte" test, applied to the word and to it xor each
    /// special byte). The lowest flag is exact; a borrow can only flag bytes above a flagged one.
    @inline(__always)
    static func escapeFlags(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ value: UInt64) -> UInt64 { (value &- ones) & ~value & highs }
        let control = (word &- 0x2020_2020_2020_2020) & ~word & highs
        return control | hasZeroByte(word ^ 0x2222_2222_2222_2222) | hasZeroByte(word ^ 0x5C5C_5C5C_5C5C_5C5C)
    }
}
