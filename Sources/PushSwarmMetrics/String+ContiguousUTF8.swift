extension String {
    /// Calls `body` with the string's UTF-8, in place when it is stored contiguously (every
    /// native string: its own buffer, or its inline bytes for a short one). `String.withUTF8` is
    /// `mutating` (it may have to make a bridged string contiguous), so calling it on a
    /// parameter meant copying the string into a `var` first: a retain and a release per call,
    /// dozens per simulated request on the JSON hot paths.
    @inlinable @inline(__always)
    public func withContiguousUTF8<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return copy.withUTF8(body)
    }
}
