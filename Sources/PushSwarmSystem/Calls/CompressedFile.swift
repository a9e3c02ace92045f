import CPushSwarmShim
import Glibc

/// A file read in chunks through zlib: gzip-compressed or plain alike (an access log rotated as
/// `access.log.2.gz` or not), told apart by its first bytes.
public final class CompressedFile {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    private let handle: OpaquePointer
    private var chunk: [UInt8]

    /// Opens `path`; throws with the system's reason when it cannot be read.
    public init(path: String, chunkSize: Int = 1 << 18) throws(Failure) {
        precondition(chunkSize > 0 && chunkSize <= Int(Int32.max))
        guard let opened = ps_gz_open(path) else {
            throw Failure(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        handle = OpaquePointer(opened)
        chunk = Array(repeating: 0, count: chunkSize)
    }

    deinit { ps_gz_close(UnsafeMutableRawPointer(handle)) }

    /// Calls `body` with the next chunk of content; false at the end. Throws when the stream is
    /// corrupt or truncated (zlib's reason).
    public func next(_ body: (Span<UInt8>) throws(Failure) -> Void) throws(Failure) -> Bool {
        let handle = self.handle
        let count = chunk.withUnsafeMutableBytes { bytes in
            ps_gz_read(UnsafeMutableRawPointer(handle), bytes.baseAddress, UInt32(bytes.count))
        }
        if count < 0 { throw Failure(description: String(cString: ps_gz_error(UnsafeMutableRawPointer(handle)))) }
        if count == 0 {
            if ps_gz_truncated(UnsafeMutableRawPointer(handle)) != 0 { throw Failure(description: "the compressed stream ends early: the file is truncated") }
            return false
        }
        let filled = chunk
        try body(filled.span.extracting(..<Int(count)))
        return true
    }
}
