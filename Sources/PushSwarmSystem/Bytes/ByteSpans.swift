import Glibc

/// Reads and writes of a few bytes at a time over spans: the word loads and stores the fast
/// paths above make, each bounds-checked (in release builds too) before it touches memory.
/// What they replace: `loadUnaligned` through a raw pointer the caller had to keep in range.

extension Span where Element == UInt8 {
    /// The eight bytes at `offset` as a little-endian word. Traps unless they lie in the span.
    @inlinable @inline(__always)
    public func littleEndianWord(at offset: Int) -> UInt64 {
        precondition(offset >= 0 && offset <= count - 8, "eight bytes at \(offset) of \(count)")
        return UInt64(littleEndian: bytes.unsafeLoadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// The eight bytes at `offset` as a big-endian word. Traps unless they lie in the span.
    @inlinable @inline(__always)
    public func bigEndianWord(at offset: Int) -> UInt64 {
        precondition(offset >= 0 && offset <= count - 8, "eight bytes at \(offset) of \(count)")
        return UInt64(bigEndian: bytes.unsafeLoadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// A span of at most eight bytes as the low bytes of a word (little-endian; 0 when empty),
    /// from two loads that may overlap: copying the bytes into a word in memory and loading that
    /// stalls on the store. Traps on a span of more than eight bytes.
    @inlinable @inline(__always)
    public func shortLittleEndianWord() -> UInt64 {
        let count = self.count
        precondition(count <= 8, "a short word of \(count) bytes")
        let raw = bytes
        if count == 8 { return UInt64(littleEndian: raw.unsafeLoadUnaligned(as: UInt64.self)) }
        if count >= 4 {
            let low = UInt64(UInt32(littleEndian: raw.unsafeLoadUnaligned(as: UInt32.self)))
            let high = UInt64(UInt32(littleEndian: raw.unsafeLoadUnaligned(fromByteOffset: count - 4, as: UInt32.self)))
            return low | high << (8 * UInt64(count - 4))
        }
        if count >= 2 {
            let low = UInt64(UInt16(littleEndian: raw.unsafeLoadUnaligned(as: UInt16.self)))
            let high = UInt64(UInt16(littleEndian: raw.unsafeLoadUnaligned(fromByteOffset: count - 2, as: UInt16.self)))
            return low | high << (8 * UInt64(count - 2))
        }
        return count == 1 ? UInt64(self[0]) : 0
    }

    /// The first place of `byte`, or nil.
    @inlinable
    public func firstIndex(of byte: UInt8) -> Int? {
        for index in indices where self[index] == byte { return index }
        return nil
    }

    /// Whether both spans hold the same bytes: up to 32 compared in place, eight at a time (a
    /// call of `memcmp` for a dozen bytes cost more than the comparison), longer ones by `memcmp`.
    @inlinable
    public func bytesEqual(_ other: Span<UInt8>) -> Bool {
        let count = self.count
        guard count == other.count else { return false }
        guard count > 32 else {
            var offset = 0
            while offset + 8 <= count {
                if littleEndianWord(at: offset) != other.littleEndianWord(at: offset) { return false }
                offset += 8
            }
            while offset < count {
                if self[offset] != other[offset] { return false }
                offset += 1
            }
            return true
        }
        return longBytesEqual(other)
    }

    @usableFromInline
    func longBytesEqual(_ other: Span<UInt8>) -> Bool {
        withUnsafeBufferPointer { left in
            other.withUnsafeBufferPointer { right in memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0 }
        }
    }
}

extension MutableSpan where Element == UInt8 {
    /// Stores `value` little-endian in the bytes at `offset` (as many as it has). Traps unless
    /// they lie in the span.
    @inlinable @inline(__always)
    public mutating func storeLittleEndian<Value: FixedWidthInteger & BitwiseCopyable>(_ value: Value, at offset: Int) {
        let size = MemoryLayout<Value>.size
        precondition(offset >= 0 && offset <= count - size, "\(size) bytes at \(offset) of \(count)")
        var raw = mutableBytes
        raw.storeBytes(of: value.littleEndian, toByteOffset: offset, as: Value.self)
    }

    /// Copies `source` over the bytes from `offset` on. Traps unless they lie in the span.
    @inlinable @inline(__always)
    public mutating func copy(_ source: Span<UInt8>, to offset: Int) {
        let length = source.count
        precondition(offset >= 0 && offset <= count - length, "\(length) bytes at \(offset) of \(count)")
        guard length > 0 else { return }
        withUnsafeMutableBufferPointer { target in
            source.withUnsafeBufferPointer { source in
                (target.baseAddress! + offset).update(from: source.baseAddress!, count: length)
            }
        }
    }
}

extension String {
    /// The text whose UTF-8 `utf8` is (invalid UTF-8 repaired, as `String(decoding:as:)` does).
    @inlinable
    public init(decodingUTF8 utf8: Span<UInt8>) {
        self = utf8.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
    }

    /// A string of `count` UTF-8 bytes that `fill` writes (every one of them: the span starts as
    /// zeros). Invalid UTF-8 is repaired, as `String(decoding:as:)` does.
    @inlinable
    public init(utf8Count count: Int, filling fill: (inout MutableSpan<UInt8>) -> Void) {
        self.init(unsafeUninitializedCapacity: count) { buffer in
            let room = buffer.extracting(..<count)
            room.initialize(repeating: 0)
            var span = room.mutableSpan
            fill(&span)
            return count
        }
    }
}

extension StaticString {
    /// Calls `body` with the text's UTF-8.
    @inlinable
    public func withUTF8Span<Result>(_ body: (Span<UInt8>) -> Result) -> Result {
        withUTF8Buffer { body($0.span) }
    }
}

extension String {
    /// Calls `body` with the string's UTF-8, in place: a native string's own buffer, or its inline
    /// bytes for a short one. Inlinable and closure-shaped, where `utf8.span` is a call into the
    /// standard library for every string (and `String.withUTF8` is `mutating`: calling it on a
    /// parameter copied the string into a `var`, a retain and a release each time).
    @inlinable @inline(__always)
    public func withUTF8Span<Result>(_ body: (Span<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable({ try body($0.span) }) { return result }
        var copy = self
        return try copy.withUTF8 { try body($0.span) }
    }
}

extension Array where Element == UInt8 {
    /// The bytes of `span`, copied.
    @inlinable
    public init(decodingSpan span: Span<UInt8>) {
        self = span.withUnsafeBufferPointer { Array($0) }
    }

    /// The eight bytes at `offset` as a little-endian word, read in place (no span made). Traps
    /// unless they lie in the array.
    @inlinable @inline(__always)
    public func littleEndianWord(at offset: Int) -> UInt64 {
        precondition(offset >= 0 && offset <= count - 8, "eight bytes at \(offset) of \(count)")
        return withUnsafeBufferPointer { UInt64(littleEndian: UnsafeRawPointer($0.baseAddress! + offset).loadUnaligned(as: UInt64.self)) }
    }

    /// Appends the bytes of `span`.
    @inlinable
    public mutating func append(_ span: Span<UInt8>) {
        span.withUnsafeBufferPointer { append(contentsOf: $0) }
    }
}
