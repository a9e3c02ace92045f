/// A growing buffer of bytes written at its end: the buffer `JSONWriter` writes documents into.
///
/// The bytes so far are `storage[..<count]`; the rest is room, whose bytes are never read. Each
/// call makes room once and stores through a pointer: one uniqueness check of the array a call,
/// where appending to an array checks once an append (five times for a JSON member's name:
/// comma, quote, text, quote, colon). Every store is within the room the call made, which each
/// call sizes from its arguments: no caller passes a length it could get wrong.
public struct ByteWriter: Sendable {
    @usableFromInline var storage: [UInt8]
    /// Bytes written.
    @usableFromInline var written = 0

    /// Bytes written.
    public var count: Int { written }

    /// - Parameter capacity: bytes reserved up front; more are made as needed, copying.
    public init(capacity: Int) {
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
        written = 0
        return taken
    }

    /// The bytes written, read in place.
    @inlinable
    public func withBytes<Result>(_ body: (Span<UInt8>) throws -> Result) rethrows -> Result {
        try body(storage.span.extracting(..<count))
    }

    /// Forgets the bytes written, keeping the room.
    public mutating func removeAll() {
        written = 0
    }

    @inlinable @inline(__always)
    public mutating func append(_ byte: UInt8) {
        write(upTo: 1) { out in
            out[0] = byte
            return 1
        }
    }

    @inlinable @inline(__always)
    public mutating func append(_ first: UInt8, _ second: UInt8) {
        write(upTo: 2) { out in
            out[0] = first
            out[1] = second
            return 2
        }
    }

    @inlinable @inline(__always)
    public mutating func append(_ bytes: Span<UInt8>) {
        bytes.withUnsafeBufferPointer { bytes in
            write(upTo: bytes.count) { out in
                Self.copy(bytes, to: out)
                return bytes.count
            }
        }
    }

    @inlinable
    public mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { bytes in
            write(upTo: bytes.count) { out in
                Self.copy(bytes, to: out)
                return bytes.count
            }
        }
    }

    @inlinable
    public mutating func append(repeating byte: UInt8, count: Int) {
        precondition(count >= 0)
        write(upTo: count) { out in
            out.initialize(repeating: byte, count: count)
            return count
        }
    }

    /// `bytes` between two quotes, in one write.
    @inlinable @inline(__always)
    public mutating func appendQuoted(_ bytes: Span<UInt8>) {
        bytes.withUnsafeBufferPointer { bytes in
            write(upTo: bytes.count + 2) { out in
                out[0] = UInt8(ascii: "\"")
                Self.copy(bytes, to: out + 1)
                out[bytes.count + 1] = UInt8(ascii: "\"")
                return bytes.count + 2
            }
        }
    }

    /// `leading` (when there is one), `bytes` between two quotes, then `trailing`, in one write.
    @inlinable @inline(__always)
    public mutating func appendQuoted(_ bytes: Span<UInt8>, leading: UInt8?, trailing: UInt8) {
        bytes.withUnsafeBufferPointer { bytes in
            write(upTo: bytes.count + 4) { out in
                var at = 0
                if let leading {
                    out[0] = leading
                    at = 1
                }
                out[at] = UInt8(ascii: "\"")
                Self.copy(bytes, to: out + at + 1)
                out[at + 1 + bytes.count] = UInt8(ascii: "\"")
                out[at + 2 + bytes.count] = trailing
                return at + 3 + bytes.count
            }
        }
    }

    /// The first `keeping` bytes of `head`, in one write: all of `head` is stored at once (six
    /// word stores for 48 bytes, where a call of memmove for a dozen cost more than the copy),
    /// and the count moves on by `keeping`.
    @inlinable @inline(__always)
    public mutating func append<let N: Int>(prefix keeping: Int, of head: InlineArray<N, UInt8>) {
        precondition(keeping >= 0 && keeping <= N)
        write(upTo: N) { out in
            UnsafeMutableRawPointer(out).storeBytes(of: head, as: InlineArray<N, UInt8>.self)
            return keeping
        }
    }

    /// `append(prefix:of:)` then `value` between quotes, in one write.
    @inlinable @inline(__always)
    public mutating func append<let N: Int>(prefix keeping: Int, of head: InlineArray<N, UInt8>, thenQuoted value: Span<UInt8>) {
        precondition(keeping >= 0 && keeping <= N)
        value.withUnsafeBufferPointer { value in
            write(upTo: N + value.count + 2) { out in
                UnsafeMutableRawPointer(out).storeBytes(of: head, as: InlineArray<N, UInt8>.self)
                out[keeping] = UInt8(ascii: "\"")
                Self.copy(value, to: out + keeping + 1)
                out[keeping + value.count + 1] = UInt8(ascii: "\"")
                return keeping + value.count + 2
            }
        }
    }

    /// `first`, then `value` between quotes, in one write.
    @inlinable @inline(__always)
    public mutating func append(_ first: Span<UInt8>, thenQuoted value: Span<UInt8>) {
        first.withUnsafeBufferPointer { first in
            value.withUnsafeBufferPointer { value in
                write(upTo: first.count + value.count + 2) { out in
                    Self.copy(first, to: out)
                    out[first.count] = UInt8(ascii: "\"")
                    Self.copy(value, to: out + first.count + 1)
                    out[first.count + value.count + 1] = UInt8(ascii: "\"")
                    return first.count + value.count + 2
                }
            }
        }
    }

    // MARK: - The room

    /// `capacity` bytes to write into (left uninitialised: only bytes written are read).
    @usableFromInline
    static func room(_ capacity: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: capacity) { _, initialized in initialized = capacity }
    }

    /// Makes room for `maximum` bytes, then `body` writes at most that many at the end and says
    /// how many. Not public: every caller above sizes `maximum` from what it writes.
    @inlinable @inline(__always)
    mutating func write(upTo maximum: Int, _ body: (UnsafeMutablePointer<UInt8>) -> Int) {
        if maximum > storage.count - count { grow(toHold: count + maximum) }
        let start = count
        written += storage.withUnsafeMutableBufferPointer { body($0.baseAddress! + start) }
    }

    @usableFromInline @inline(never)
    mutating func grow(toHold needed: Int) {
        var larger = Self.room(Swift.max(needed, storage.count * 2, 64))
        let kept = written
        if kept > 0 {
            storage.withUnsafeBufferPointer { old in
                larger.withUnsafeMutableBufferPointer { new in Self.copy(UnsafeBufferPointer(rebasing: old[..<kept]), to: new.baseAddress!) }
            }
        }
        storage = larger
    }

    /// Copies `bytes` to `destination`: 8 to 16 bytes as two words that may overlap (most of the
    /// strings an event holds; memmove's call cost more than such a copy), others by memmove.
    @inlinable @inline(__always)
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
}
