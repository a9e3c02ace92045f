import CPushSwarmShim
import PushSwarmMetrics

/// A SHA-256 digest (FIPS 180-4), as four big-endian 64-bit words.
public struct SHA256Digest: Sendable, Hashable {
    public var words: (UInt64, UInt64, UInt64, UInt64)

    public static func == (lhs: SHA256Digest, rhs: SHA256Digest) -> Bool {
        lhs.words == rhs.words
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
    }

    public var bytes: [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(32)
        for word in [words.0, words.1, words.2, words.3] {
            for shift in stride(from: 56, through: 0, by: -8) {
                result.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
            }
        }
        return result
    }

    /// The 64 hex digits, written straight into the string.
    public var hexString: String {
        String(unsafeUninitializedCapacity: 64) { buffer in
            writeHex(into: UnsafeMutableBufferPointer(rebasing: buffer[0..<64]))
            return 64
        }
    }

    /// Writes the 64 hex digits into `buffer`'s first 64 bytes (a JSON answer, say, without a
    /// `String` between).
    public func writeHex(into buffer: UnsafeMutableBufferPointer<UInt8>) {
        precondition(buffer.count >= 64)
        Self.writeHex(words.0, into: buffer.baseAddress!)
        Self.writeHex(words.1, into: buffer.baseAddress! + 16)
        Self.writeHex(words.2, into: buffer.baseAddress! + 32)
        Self.writeHex(words.3, into: buffer.baseAddress! + 48)
    }

    private static func writeHex(_ word: UInt64, into out: UnsafeMutablePointer<UInt8>) {
        Hex.writeSixteenDigits(word, to: UnsafeMutableRawPointer(out))
    }
}

/// SHA-256 for SmartAppPush's spec fingerprints ("Every event gets a SHA-256 fingerprint") and
/// the identifiers mocks derive from a seed. libcrypto does the work (`ps_sha256`, its low-level
/// calls): it uses the CPU's SHA instructions where there are some, several times faster than
/// portable code.
public enum SHA256 {
    public static func hash(_ text: String) -> SHA256Digest {
        return text.withContiguousUTF8 { hash(UnsafeRawBufferPointer($0)) }
    }

    public static func hash(_ message: [UInt8]) -> SHA256Digest {
        message.withUnsafeBytes { hash($0) }
    }

    public static func hash(_ message: UnsafeRawBufferPointer) -> SHA256Digest {
        var digest = InlineArray<32, UInt8>(repeating: 0)
        var bytes = digest.mutableSpan
        bytes.withUnsafeMutableBufferPointer { ps_sha256(message.baseAddress, message.count, $0.baseAddress!) }
        // The digest's bytes, read as big-endian words.
        return digest.span.withUnsafeBytes { raw in
            func word(_ offset: Int) -> UInt64 { UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
            return SHA256Digest(words: (word(0), word(8), word(16), word(24)))
        }
    }
}
