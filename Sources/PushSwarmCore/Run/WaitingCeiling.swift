/// The process's ceiling on waiting requests (`MemoryEstimate.waitingCeiling`) as one partition
/// holds it: counted per NAT address, the unit a partition holds whole, so that what is shed
/// does not depend on the partition count, and no count is shared between threads.
///
/// Each address gets a share of the ceiling in proportion to its devices: an open-model arrival
/// finding its address at its share is shed. A device queueing requests itself (retries kept for
/// the next launch against a failing service) may take its address up to `queueLimits`, the share
/// or, without `--max-waiting`, at least `MemoryEstimate.deviceQueueFloor` a device; past it, the
/// device drops its oldest waiting request.
struct WaitingCeiling {
    /// Requests waiting on each address's devices (queued, in flight, waiting for a retry), by
    /// the address's place in the partition.
    private(set) var waiting: [Int32]
    /// Each address's share of the ceiling, by place.
    let shares: [Int32]
    /// What each address's devices may queue themselves, by place.
    let queueLimits: [Int32]
    /// False until the run starts counting (a warm-up does not).
    private(set) var isCounting = false
    private let perSource: Int
    private let lowerBound: Int

    /// `devices`: the partition's fleet indices (whole addresses); `processDevices`: the devices of
    /// the whole process, whose ceiling the partitions share.
    init(maximumWaiting: Int?, devicesPerSourceAddress: Int, devices range: Range<Int>, processDevices: Int) {
        let perSource = max(1, devicesPerSourceAddress)
        self.perSource = perSource
        lowerBound = range.lowerBound
        let addresses = range.isEmpty ? 0 : (range.upperBound - 1) / perSource - range.lowerBound / perSource + 1
        let ceiling = maximumWaiting ?? MemoryEstimate.defaultMaximumWaiting(devices: processDevices)
        let perDevice = Double(ceiling) / Double(max(1, processDevices))
        let devicesAt = (0..<addresses).map { place in
            let first = (range.lowerBound / perSource + place) * perSource
            return min(first + perSource, range.upperBound) - max(first, range.lowerBound)
        }
        shares = devicesAt.map { Int32(clamping: max(1, Int((perDevice * Double($0)).rounded(.down)))) }
        let floor = maximumWaiting == nil ? MemoryEstimate.deviceQueueFloor : 0
        queueLimits = zip(shares, devicesAt).map { max($0, Int32(clamping: floor * $1)) }
        waiting = Array(repeating: 0, count: addresses)
    }

    /// Device `index` (in the partition)'s address, as its place among the partition's addresses.
    func place(of index: Int) -> Int { (lowerBound + index) / perSource - lowerBound / perSource }

    /// Starts counting, from what each device already holds (its first events' requests).
    mutating func start(pending: (Int) -> Int, devices: Int) {
        isCounting = true
        for index in 0..<devices { waiting[place(of: index)] += Int32(clamping: pending(index)) }
    }

    /// Whether an arrival for device `index` finds its address at its share.
    func isAtShare(device index: Int) -> Bool {
        let place = place(of: index)
        return waiting[place] >= shares[place]
    }

    /// Device `index`'s pending requests changed by `change`; true when its address is now past
    /// what its devices may queue (its oldest should go).
    mutating func add(_ change: Int, device index: Int) -> Bool {
        let place = place(of: index)
        waiting[place] += Int32(clamping: change)
        return waiting[place] > queueLimits[place]
    }
}
