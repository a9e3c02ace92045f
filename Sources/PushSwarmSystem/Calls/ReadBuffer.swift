import Glibc

/// The buffer an event loop's connections read into, one read at a time: read(2) or a TLS read
/// fills it from the start, and the bytes read are lent out as a span for the one call that
/// handles them.
public final class ReadBuffer {
    @usableFromInline let storage: UnsafeMutableBufferPointer<UInt8>

    public var capacity: Int { storage.count }

    public init(capacity: Int) {
        precondition(capacity > 0)
        storage = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: capacity)
        storage.initialize(repeating: 0)
    }

    deinit { storage.deallocate() }

    /// read(2) from `fd` into the buffer: the count, 0 at the end, or -1 with `errno` set.
    public func read(from fd: Int32) -> Int {
        Glibc.read(fd, storage.baseAddress, storage.count)
    }

    /// A TLS read into the buffer: as `TLSSessionHandle.read`.
    public func read(from session: TLSSessionHandle) -> Int32 {
        session.read(into: UnsafeMutableRawBufferPointer(storage))
    }

    /// Calls `body` with the first `count` bytes (what the last read filled).
    @inlinable
    public func withBytes<Result>(count: Int, _ body: (Span<UInt8>) -> Result) -> Result {
        precondition(count >= 0 && count <= storage.count, "\(count) bytes of a \(storage.count)-byte buffer")
        return body(UnsafeBufferPointer(rebasing: storage[..<count]).span)
    }
}
