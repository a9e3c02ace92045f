/// The process's ceiling on waiting requests (`MemoryEstimate.waitingCeiling`) as one partition
/// holds it: counted per NAT address, the unit a partition holds whole, so that what is shed
/// does not depend on the partition count, and no count is shared between threads.
///
/// Each address gets a share of the ceiling in proportion to its devices, rounded so that the
/// process's shares add up to the ceiling exactly (an address's share is the ceiling's part up to
/// its last device less the part up to its first): an open-model arrival finding its address at
/// its share is shed. With fewer waiting requests allowed than addresses, some addresses have a
/// share of 0 (`--max-waiting` is strict; the run says so). Each address once had at least 1,
/// and `--max-waiting 1000` over 4,000 addresses held 3,999. A device queueing requests itself (retries kept for
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

    /// `devices`: the partition's fleet indices (whole addresses); `process`: the fleet indices of
    /// the whole process (its shard), whose ceiling the partitions share.
    init(maximumWaiting: Int?, devicesPerSourceAddress: Int, devices range: Range<Int>, process: Range<Int>) {
        let processDevices = process.count
        let perSource = max(1, devicesPerSourceAddress)
        self.perSource = perSource
        lowerBound = range.lowerBound
        let addresses = range.isEmpty ? 0 : (range.upperBound - 1) / perSource - range.lowerBound / perSource + 1
        let ceiling = maximumWaiting ?? MemoryEstimate.defaultMaximumWaiting(devices: processDevices)
        /// The ceiling's part up to fleet index `index`, exact: the product is taken in double
        /// width, and the quotient is at most the ceiling.
        func part(upTo index: Int) -> Int {
            let devices = min(max(0, index - process.lowerBound), processDevices)
            guard processDevices > 0 else { return 0 }
            return processDevices.dividingFullWidth(max(0, ceiling).multipliedFullWidth(by: devices)).quotient
        }
        var devicesAt: [Int] = []
        var shares: [Int32] = []
        for place in 0..<addresses {
            let first = max((range.lowerBound / perSource + place) * perSource, range.lowerBound)
            let last = min((range.lowerBound / perSource + place + 1) * perSource, range.upperBound)
            devicesAt.append(last - first)
            shares.append(Int32(clamping: part(upTo: last) - part(upTo: first)))
        }
        self.shares = shares
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
