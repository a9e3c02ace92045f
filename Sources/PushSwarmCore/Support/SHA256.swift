import PushSwarmMetrics
import PushSwarmSystem

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
        String(utf8Count: 64) { writeHex(into: &$0, at: 0) }
    }

    /// Writes the 64 hex digits into `out` from `offset` on (a JSON answer, say, without a
    /// `String` between).
    public func writeHex(into out: inout MutableSpan<UInt8>, at offset: Int) {
        Hex.writeSixteenDigits(words.0, into: &out, at: offset)
        Hex.writeSixteenDigits(words.1, into: &out, at: offset + 16)
        Hex.writeSixteenDigits(words.2, into: &out, at: offset + 32)
        Hex.writeSixteenDigits(words.3, into: &out, at: offset + 48)
    }
}

/// SHA-256 for the spec fingerprints of events ("Every event gets a SHA-256 fingerprint") and
/// the identifiers mocks derive from a seed. libcrypto does the work (`sha256Digest`).
public enum SHA256 {
    public static func hash(_ text: String) -> SHA256Digest {
        text.withUTF8Span { hash($0) }
    }

    public static func hash(_ message: [UInt8]) -> SHA256Digest {
        hash(message.span)
    }

    public static func hash(_ message: Span<UInt8>) -> SHA256Digest {
        let digest = sha256Digest(message)
        // The digest's bytes, read as big-endian words.
        let bytes = digest.span
        return SHA256Digest(words: (bytes.bigEndianWord(at: 0), bytes.bigEndianWord(at: 8), bytes.bigEndianWord(at: 16), bytes.bigEndianWord(at: 24)))
    }
}
