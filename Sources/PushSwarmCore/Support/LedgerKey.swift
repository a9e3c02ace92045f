public import PushSwarmMetrics
import PushSwarmSystem

/// What identifies one accepted item (an event, an open) in a service's ledger. Devices compute
/// the same key for what they believe was delivered, so the two sides can be compared.
///
/// 64 bits of a hash over the item's identifying fields, not a cryptographic digest: a ledger
/// holds one per accepted item for the whole run (8 bytes, where a SHA-256 digest took 32), and
/// both sides compute one per request. Two different items share a key with probability about
/// n² / 2⁶⁵ for n items: 1 in 70,000 for the 23 million requests of a million devices' day.
/// A platform whose spec gives its own fingerprint (a SHA-256 of the event) still answers with
/// that; the ledger key is PushSwarm's accounting, never sent on the wire.
public struct LedgerKey: Sendable, Hashable, CustomStringConvertible {
    public var value: UInt64

    public init(value: UInt64) { self.value = value }

    /// The key of a tuple of fields; put a tag naming the kind of item first
    /// (`LedgerKey("pushes/opened", tenant, token)`), so equal fields of different kinds differ.
    public init(_ parts: String...) {
        var builder = Builder()
        for part in parts { builder.add(part) }
        self = builder.key
    }

    /// Whether this is the key of an item sent once (`once`): the lowest bit of the value.
    public var isOnce: Bool { value & 1 != 0 }

    /// This key, marked as that of an item sent once: an event or a message with its own time or
    /// id in its fields, which only retries of that very item can repeat (a registration, which a
    /// device may send again at any time, is not). The ledger holds such a key until the device
    /// has confirmed the item, and a while longer for a retry that was already on its way
    /// (`Ledger.confirmedRetention`), not for the rest of the run: a day's ledger grows with
    /// what is in flight, not with every request. Clients and mocks must mark the same kinds.
    public var once: LedgerKey { LedgerKey(value: value | 1) }

    public var description: String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// Hashes fields one after another. Each field is prefixed by its kind and length, so
    /// `("ab", "c")` and `("a", "bc")` differ; JSON objects are hashed with their members sorted
    /// by name, so member order on the wire does not change the key.
    ///
    /// The mixing is wyhash's 64×64→128-bit multiply-and-fold (`ByteMix`).
    public struct Builder: Sendable {
        private var state: UInt64 = 0x243F_6A88_85A3_08D3

        public init() {}

        public var key: LedgerKey {
            // The lowest bit marks keys of items sent once (`once`); a builder's key is lasting.
            LedgerKey(value: ByteMix.finalised(state) & ~1)
        }

        public mutating func add(_ text: String) {
            text.withUTF8Span { add(bytes: $0, kind: 4) }
        }

        /// A string given as its UTF-8: the same key as `add(_:)` with that `String`.
        public mutating func add(utf8: Span<UInt8>) { add(bytes: utf8, kind: 4) }

        public mutating func add(_ flag: Bool) { mix(flag ? 2 : 1) }

        public mutating func addNull() { mix(0) }

        /// A JSON value in canonical form: numbers by value (`1` and `1.0` are one number),
        /// object members in byte order of their names.
        public mutating func add(_ value: JSONValue) {
            switch value {
            case .null: addNull()
            case .bool(let flag): add(flag)
            case .number(let number):
                mix(3)
                mix((number == 0 ? 0 : number).bitPattern)  // -0 and 0 are one number
            case .string(let text): add(text)
            case .array(let elements):
                mix(5 << 56 | UInt64(elements.count))
                for element in elements { add(element) }
            case .object(let object):
                mix(6 << 56 | UInt64(object.members.count))
                for member in object.sortedMembers {
                    add(member.key)
                    add(member.value)
                }
            }
        }

        /// A JSON value given as its canonical text (`JSONWriter.write(_:sortingKeys: true)`):
        /// hashed as bytes, which is cheaper than walking a tree and gives equal values one key.
        /// Not the same key as `add(_ value:)` of that value: both sides of a ledger must use one.
        public mutating func add(canonicalJSON text: Span<UInt8>) { add(bytes: text, kind: 7) }

        private mutating func add(bytes: Span<UInt8>, kind: UInt64) {
            mix(kind << 56 | UInt64(bytes.count))
            ByteMix.absorb(bytes, into: &state)
        }

        @inline(__always)
        private mutating func mix(_ word: UInt64) { ByteMix.mix(word, into: &state) }
    }
}
