public import CPushSwarmShim
import Glibc

/// Calls into C whose arguments are pointers, each behind a signature that takes none.
public enum SystemCalls {
    /// This process's address-space limit (`ulimit -v`, RLIMIT_AS) in bytes, or nil when unlimited.
    public static func addressSpaceLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_AS.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(Int.max) else { return nil }
        return Int(limit.rlim_cur)
    }

    /// Writes out what `print` has buffered: standard output to a pipe is block-buffered, and a
    /// line that says a server is ready must reach whoever waits for it when it is printed.
    public static func flushStandardOutput() {
        fflush(nil)  // every output stream: standard output among them, without naming its global
    }

    /// Where an object's storage starts, as a number: taken from the object and then only
    /// prefetched from (a hint, which never faults), so that the object need not be kept alive
    /// (and so retained) while the prefetches are issued.
    public struct ObjectAddress {
        @usableFromInline let bits: UInt

        @inlinable @inline(__always)
        public init<Object: AnyObject>(of object: Object) {
            bits = UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque())
        }
    }

    /// Asks for the first `lines` cache lines from `address` (a hint: nothing is read, and what
    /// runs does not change). Inlinable, as every hint here: called across modules, the call
    /// cost more than the prefetch saved.
    @inlinable @inline(__always)
    public static func prefetch(_ address: ObjectAddress, lines: Int) {
        guard let start = UnsafeRawPointer(bitPattern: address.bits) else { return }
        for line in 0..<lines { ps_prefetch(start + 64 * line) }
    }

    /// Asks for the cache line holding `values[index]` (a hint). Traps on an index out of range.
    @inlinable @inline(__always)
    public static func prefetch<Element>(_ values: [Element], at index: Int) {
        precondition(index >= 0 && index < values.count, "prefetch of \(index) in \(values.count)")
        values.withUnsafeBufferPointer { ps_prefetch($0.baseAddress! + index) }
    }
}
