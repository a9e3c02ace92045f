/// Partitions share nothing they write, and retaining an object writes its reference count.
///
/// Group-level state (a locale, a group's behaviour, a client profile's settings, a mock's
/// tenants) is held once and referenced by every device, and devices retain it on every event
/// (a profile copied into a snapshot, a settings string written into a body). Were one object
/// referenced by two partitions, its count's cache line would move between their cores on every
/// such retain (Benchmarks/README.md, "Measured choices").
/// So each partition builds its devices and mocks from its own copy of the scenario
/// (`Scenario.partitionCopy`): equal in value, with storage of its own.
///
/// What a hot path reads from a `static let` must not be a reference-counted object built at run
/// time either (those are shared by every partition): literals, which the runtime never counts,
/// or tables of plain values.
extension String {
    /// The same text with storage of its own (a string of up to 15 bytes has none to share: it is
    /// held inline).
    public func partitionCopy() -> String {
        String(decoding: Array(utf8), as: UTF8.self)
    }
}

extension Array where Element == String {
    public func partitionCopy() -> [String] { map { $0.partitionCopy() } }
}

extension Optional where Wrapped == String {
    public func partitionCopy() -> String? { map { $0.partitionCopy() } }
}
