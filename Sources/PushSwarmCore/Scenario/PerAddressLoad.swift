/// What a scenario's open workloads offer each source address of a platform at their peak,
/// against the per-address limit the scenario's own mock of that platform declares (a spec's
/// 10 requests/s per IP). A group's devices are spread over every address (each device's
/// group is drawn by weight), so a platform's open arrivals fall evenly on the fleet's addresses.
/// A scenario whose load trips its own service's limit measures the limiter (a nightly against a
/// real service that enforces its spec would): `validate` warns, naming the groups and the
/// addresses that would fit.
public struct PerAddressOverrun: Sendable, Equatable {
    public var platform: String
    /// The open-workload groups of the platform, by index in `groups`.
    public var groups: [Int]
    /// Their peak rates added up, per second.
    public var peakRate: Double
    /// The fleet's source addresses.
    public var addresses: Int
    /// The mock's per-address limit, per second.
    public var limit: Double

    public var perAddress: Double { peakRate / Double(max(1, addresses)) }
    /// The fewest addresses that keep every one under the limit.
    public var addressesNeeded: Int { Int((peakRate / limit).rounded(.up)) }

    /// What `validate` prints.
    public func warning(devices: Int) -> String {
        let paths = groups.map { "$.groups[\($0)]" }.joined(separator: ", ")
        let fit = max(1, devices / max(1, addressesNeeded))
        return "\(paths) (\(platform)) offer \(Self.figure(perAddress)) requests/s per address at their peak "
            + "(\(Self.figure(peakRate))/s over \(addresses) addresses), over the \(Self.figure(limit))/s per address that \(platform)'s own mock allows: "
            + "\(addressesNeeded) addresses or more fit (network.devicesPerSourceIP \(fit) or fewer), or a lower rate"
    }

    private static func figure(_ value: Double) -> String {
        let tenths = (value * 10).rounded() / 10
        return tenths == tenths.rounded() ? String(Int(tenths)) : String(tenths)
    }
}

extension Scenario {
    /// Each platform whose open workloads offer its addresses more at their peak than its mock's
    /// per-address limit (`PlatformConfiguration.perAddressRequestsPerSecond`).
    public var perAddressOverruns: [PerAddressOverrun] {
        let perSource = max(1, network.devicesPerSourceAddress)
        let addresses = (devices + perSource - 1) / perSource
        var overruns: [PerAddressOverrun] = []
        for platform in Set(groups.map(\.platform)).sorted() {
            guard let limit = platforms[platform]?.perAddressRequestsPerSecond, limit > 0 else { continue }
            var members: [Int] = []
            var peak = 0.0
            for (index, group) in groups.enumerated() where group.platform == platform {
                guard case .open(let workload) = group.workload else { continue }
                members.append(index)
                peak += workload.segments.map { max($0.fromRate, $0.toRate) }.max() ?? 0
            }
            let overrun = PerAddressOverrun(platform: platform, groups: members, peakRate: peak, addresses: addresses, limit: limit)
            if !members.isEmpty, overrun.perAddress > limit { overruns.append(overrun) }
        }
        return overruns
    }
}
