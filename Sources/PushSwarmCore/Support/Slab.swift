import PushSwarmSystem

/// Values waiting by number: `insert` gives a slot, `take` moves the value out and frees the slot
/// for the next insert. The event queue keeps its items here (its heap holds only their slots),
/// and a partition its answers between send and arrival (too large for a queue item).
struct Slab<Element> {
    private var values: [Element?] = []
    private var freeSlots: [Int32] = []

    init() {}

    mutating func insert(_ value: Element) -> Int32 {
        if let slot = freeSlots.popLast() {
            values[Int(slot)] = value
            return slot
        }
        values.append(value)
        return Int32(values.count - 1)
    }

    /// Moves the value at `slot` out (no copy) and frees the slot.
    mutating func take(_ slot: Int32) -> Element? {
        guard let value = values[Int(slot)].take() else { return nil }
        freeSlots.append(slot)
        return value
    }

    /// Asks for the line holding `slot` (a hint: what runs does not change).
    @inline(__always)
    func prefetch(_ slot: Int32) {
        SystemCalls.prefetch(values, at: Int(slot))
    }
}
