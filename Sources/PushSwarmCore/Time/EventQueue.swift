/// A priority queue of timed items: the scheduler where idle devices wait.
///
/// Items come out in time order; items due at the same instant come out in the order they were
/// scheduled (a sequence number breaks ties), which is what makes simulated runs deterministic.
/// Items scheduled with an `EventRank` come before those at their instant, in rank order: for items
/// whose scheduling moment depends on how the run is cut (an open workload's arrivals, computed
/// per partition), a rank makes their order a property of the item, not of the partition.
/// A binary heap of small (time, sequence, slot) entries; the items themselves wait in a slab, so
/// reordering the heap never copies a payload. No task per waiting device.
public struct EventQueue<Item> {
    private struct Entry {
        var time: Int64
        var sequence: UInt64
        var slot: Int32
        /// The caller's number for the item (`nextHint`), in what would be the entry's padding.
        var hint: Int32

        @inline(__always)
        func precedes(_ other: Entry) -> Bool {
            time < other.time || (time == other.time && sequence < other.sequence)
        }
    }

    private static var firstUnranked: UInt64 { 1 << 63 }

    private var heap: [Entry] = []
    private var slab = Slab<Item>()
    private var nextSequence: UInt64 = Self.firstUnranked

    public init() {}

    public var count: Int { heap.count }
    public var isEmpty: Bool { heap.isEmpty }
    /// When the earliest item is due, if any.
    public var nextTime: Instant? { heap.first.map { Instant(microseconds: $0.time) } }

    /// Queues `item`; `hint` is a number the caller can read for the earliest item without
    /// touching the item (`nextHint`).
    public mutating func schedule(_ item: Item, at time: Instant, hint: Int32 = -1) {
        insert(item, at: time, sequence: nextSequence, hint: hint)
        nextSequence += 1
    }

    /// Queues `item` before every unranked item due at `time`, among ranked ones by `rank`.
    public mutating func schedule(_ item: Item, at time: Instant, rank: EventRank, hint: Int32 = -1) {
        insert(item, at: time, sequence: rank.value, hint: hint)
    }

    private mutating func insert(_ item: Item, at time: Instant, sequence: UInt64, hint: Int32) {
        let slot = slab.insert(item)
        heap.append(Entry(time: time.microseconds, sequence: sequence, slot: slot, hint: hint))
        var child = heap.count - 1
        let entry = heap[child]
        while child > 0 {
            let parent = (child - 1) / 2
            guard entry.precedes(heap[parent]) else { break }
            heap[child] = heap[parent]
            child = parent
        }
        heap[child] = entry
    }

    /// Asks for the slab slots of the items that may come next (the new earliest and the two after
    /// it): scheduled long ago, they are out of cache in a large queue, and reading one cost as
    /// much as the whole sift at a million devices. The work of the event in between hides the
    /// fetch.
    @inline(__always)
    private func prefetchNextItems() {
        for position in 0..<min(3, heap.count) { slab.prefetch(heap[position].slot) }
    }

    /// The hint the earliest item was scheduled with, read from the heap alone: the partition
    /// gives each device's item its device's index, to prefetch the device. (Reading the item
    /// instead copied it, three retains and releases an event.)
    public var nextHint: Int32? { heap.first?.hint }

    /// Removes and returns the earliest item.
    public mutating func popNext() -> (time: Instant, item: Item)? {
        guard let first = heap.first else { return nil }
        let last = heap.removeLast()
        if !heap.isEmpty {
            var parent = 0
            let count = heap.count
            while true {
                let left = 2 * parent + 1
                guard left < count else { break }
                let right = left + 1
                let smallest = right < count && heap[right].precedes(heap[left]) ? right : left
                guard heap[smallest].precedes(last) else { break }
                heap[parent] = heap[smallest]
                parent = smallest
            }
            heap[parent] = last
        }
        guard let item = slab.take(first.slot) else { return nil }
        prefetchNextItems()
        return (Instant(microseconds: first.time), item)
    }
}

/// An item's place among those due at its instant in an `EventQueue`, before every unranked one:
/// `major` first, then `minor`. Its value stays below 2^48, and unranked items count up from 2^63.
public struct EventRank: Sendable, Equatable {
    let value: UInt64

    public init(major: UInt16, minor: UInt32) {
        value = UInt64(major) << 32 | UInt64(minor)
    }
}
