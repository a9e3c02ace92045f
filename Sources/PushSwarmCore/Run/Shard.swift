/// One part of a fleet run in its own process (`--shard 2/4`): the devices the whole run would
/// have at those indices, built the same way, so that the shards' reports merged equal the whole.
///
/// A shard takes whole source addresses: the devices behind one NAT address share its rate limits
/// at the service, so splitting them would change what each of them sees.
public struct Shard: Sendable, Equatable, CustomStringConvertible {
    /// From 1 to `count`.
    public let index: Int
    public let count: Int

    public init?(index: Int, count: Int) {
        guard count >= 1, (1...count).contains(index) else { return nil }
        self.index = index
        self.count = count
    }

    /// `2/4`: shard 2 of 4.
    public init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]) else { return nil }
        self.init(index: index, count: count)
    }

    public var description: String { "\(index)/\(count)" }

    /// The device indices of this shard in a fleet of `devices`, `devicesPerSource` to an address:
    /// contiguous, whole addresses, as even as whole addresses allow. The shards cover the fleet
    /// exactly once.
    public func devices(of devices: Int, devicesPerSource: Int) -> Range<Int> {
        let perSource = max(1, devicesPerSource)
        let sources = (devices + perSource - 1) / perSource
        let first = sources * (index - 1) / count
        let last = sources * index / count
        return min(devices, first * perSource)..<min(devices, last * perSource)
    }
}
