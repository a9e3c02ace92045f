import CPushSwarmShim
import Glibc

/// A file read in chunks: gzip-compressed (an access log rotated as `access.log.2.gz`) or plain,
/// told apart by its first two bytes. A compressed file is inflated member by member (gzip allows
/// several, as `cat a.gz b.gz` makes); what follows the last member must be nothing: zlib's
/// `gzread` once skipped trailing bytes without a word, and a log with something appended lost
/// its rest silently.
public final class CompressedFile {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    private let file: UnsafeMutablePointer<FILE>
    /// nil for a plain file.
    private let inflater: OpaquePointer?
    private var input: [UInt8]
    /// The unread part of `input`.
    private var inputStart = 0
    private var inputEnd = 0
    private var output: [UInt8]
    /// Between two members: the last one ended, and the next has not begun.
    private var betweenMembers = false
    private var finished = false

    /// Opens `path`; throws with the system's reason when it cannot be read.
    public init(path: String, chunkSize: Int = 1 << 18) throws(Failure) {
        precondition(chunkSize > 0 && chunkSize <= Int(Int32.max))
        guard let opened = fopen(path, "rb") else {
            throw Failure(description: "cannot open \(path): \(String(cString: strerror(errno)))")
        }
        file = opened
        input = Array(repeating: 0, count: chunkSize)
        output = Array(repeating: 0, count: chunkSize)
        let read = input.withUnsafeMutableBytes { fread($0.baseAddress, 1, 2, opened) }
        inputEnd = read
        if read == 2, input[0] == 0x1F, input[1] == 0x8B {
            guard let stream = ps_inflate_open() else {
                fclose(opened)
                throw Failure(description: "cannot start zlib to read \(path)")
            }
            inflater = OpaquePointer(stream)
        } else {
            inflater = nil
        }
    }

    deinit {
        if let inflater { ps_inflate_close(UnsafeMutableRawPointer(inflater)) }
        fclose(file)
    }

    /// Calls `body` with the next chunk of content; false at the end. Throws when the stream is
    /// corrupt or truncated, or bytes that are not gzip follow it.
    public func next(_ body: (Span<UInt8>) throws(Failure) -> Void) throws(Failure) -> Bool {
        while !finished {
            if inputStart == inputEnd { try refill() }
            guard let inflater else {
                // Plain: hand over what was read.
                guard inputEnd > inputStart else {
                    finished = true
                    return false
                }
                let chunk = input
                let (start, end) = (inputStart, inputEnd)
                inputStart = inputEnd
                try body(chunk.span.extracting(start..<end))
                return true
            }
            if betweenMembers {
                guard inputEnd > inputStart else {
                    finished = true
                    return false
                }
                // Another member must start here; anything else is not gzip.
                if inputEnd - inputStart < 2 { try refill(keeping: true) }
                guard inputEnd - inputStart >= 2, input[inputStart] == 0x1F, input[inputStart + 1] == 0x8B else {
                    throw Failure(description: "\(try trailingCount()) bytes after the end of the compressed stream are not gzip: the file is damaged or has something appended")
                }
                guard ps_inflate_reset(UnsafeMutableRawPointer(inflater)) == Int32(PS_Z_OK) else { throw Failure(description: "zlib could not start the next gzip member") }
                betweenMembers = false
            }
            if inputStart == inputEnd {
                throw Failure(description: "the compressed stream ends early: the file is truncated")
            }
            var consumed: UInt32 = 0
            var produced: UInt32 = 0
            let status = withStep(inflater, &consumed, &produced)
            inputStart += Int(consumed)
            if status == Int32(PS_Z_STREAM_END) {
                betweenMembers = true
            } else if status != Int32(PS_Z_OK) && status != Int32(PS_Z_BUF_ERROR) {
                throw Failure(description: "the compressed stream is corrupt: \(String(cString: ps_inflate_error(UnsafeMutableRawPointer(inflater))))")
            }
            if produced > 0 {
                let chunk = output
                try body(chunk.span.extracting(..<Int(produced)))
                return true
            }
        }
        return false
    }

    private func withStep(_ inflater: OpaquePointer, _ consumed: inout UInt32, _ produced: inout UInt32) -> Int32 {
        let (start, end) = (inputStart, inputEnd)
        return input.withUnsafeBytes { source in
            output.withUnsafeMutableBytes { target in
                ps_inflate_step(
                    UnsafeMutableRawPointer(inflater), source.baseAddress!.assumingMemoryBound(to: UInt8.self) + start, UInt32(end - start),
                    target.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt32(target.count), &consumed, &produced
                )
            }
        }
    }

    /// Reads more of the file into `input`: in place of what was taken, or after what is left
    /// (`keeping`, for a two-byte look ahead across reads).
    private func refill(keeping: Bool = false) throws(Failure) {
        var kept: [UInt8] = []
        if keeping { kept = Array(input[inputStart..<inputEnd]) }
        for (index, byte) in kept.enumerated() { input[index] = byte }
        let room = input.count - kept.count
        let file = self.file
        let read = input.withUnsafeMutableBytes { fread($0.baseAddress! + kept.count, 1, room, file) }
        if read < room, ferror(file) != 0 { throw Failure(description: "cannot read: \(String(cString: strerror(errno)))") }
        inputStart = 0
        inputEnd = kept.count + read
    }

    /// The bytes from here to the end of the file.
    private func trailingCount() throws(Failure) -> Int {
        var count = inputEnd - inputStart
        while true {
            inputStart = inputEnd
            try refill()
            if inputEnd == 0 { return count }
            count += inputEnd
        }
    }
}
