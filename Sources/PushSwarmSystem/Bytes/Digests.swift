import CPushSwarmShim

/// SHA-256 (FIPS 180-4) of `message`, by libcrypto (its low-level calls: it uses the CPU's SHA
/// instructions where there are some, several times faster than portable code).
public func sha256Digest(_ message: Span<UInt8>) -> InlineArray<32, UInt8> {
    var digest = InlineArray<32, UInt8>(repeating: 0)
    var out = digest.mutableSpan
    message.withUnsafeBufferPointer { message in
        out.withUnsafeMutableBufferPointer { ps_sha256(message.baseAddress, message.count, $0.baseAddress!) }
    }
    return digest
}

/// SHA-1 (FIPS 180-4) of `message`, by libcrypto: for WebSocket's handshake (RFC 6455), not for
/// security.
public func sha1Digest(_ message: Span<UInt8>) -> [UInt8] {
    var digest = [UInt8](repeating: 0, count: 20)
    message.withUnsafeBufferPointer { message in
        digest.withUnsafeMutableBufferPointer { ps_sha1(message.baseAddress, message.count, $0.baseAddress!) }
    }
    return digest
}
