/// Requests waiting for a connection, oldest first: a pool's queue, kept apart from its sockets
/// and timers so that it is tested alone (`WaitQueueTests`).
///
/// One that leaves early (its time ran out while it waited) leaves at once: its slot becomes nil,
/// which drops it and its body, and `count` counts only those still waiting, so that the pool
/// opens no connection for it. Each element gets a ticket when it joins; a ticket stays valid
/// while the queue's spent front is cut off (under a lasting overload the queue never empties)
/// and when an element is put back at the front.
struct WaitQueue<Element: AnyObject> {
    private var slots: [Element?] = []
    /// Slots before this one are spent.
    private var start = 0
    /// The ticket of the element in `slots[0]`.
    private var ticketBase = 0
    /// The elements still waiting.
    private(set) var count = 0

    /// Adds `element` at the back, or at the front (a request retried on a new connection keeps
    /// its turn); returns its ticket.
    mutating func push(_ element: Element, atFront: Bool = false) -> Int {
        count += 1
        guard atFront else {
            slots.append(element)
            return ticketBase + slots.count - 1
        }
        if start > 0 {
            start -= 1
            slots[start] = element
        } else {
            // Every ticket keeps its element: the positions move up by one, the base down.
            slots.insert(element, at: 0)
            ticketBase -= 1
        }
        return ticketBase + start
    }

    /// The oldest element still waiting, taken out of the queue.
    mutating func pop() -> Element? {
        while start < slots.count {
            // Moved out: no retain and release of the element on the way.
            let slot = slots[start].take()
            start += 1
            if start == slots.count {
                ticketBase += slots.count
                slots.removeAll(keepingCapacity: true)
                start = 0
            } else if start >= 1_024 && start * 2 >= slots.count {
                ticketBase += start
                slots.removeFirst(start)
                start = 0
            }
            guard let element = slot else { continue }  // left early
            count -= 1
            return element
        }
        return nil
    }

    /// Takes `element`, which joined with `ticket`, out of the queue now; false when it is no
    /// longer there (popped already, or removed).
    @discardableResult
    mutating func remove(_ element: Element, ticket: Int) -> Bool {
        let position = ticket - ticketBase
        guard position >= start, position < slots.count, slots[position] === element else { return false }
        slots[position] = nil
        count -= 1
        return true
    }

    /// Slots that still hold an element: `count`, unless one was lost track of.
    var held: Int { slots[start...].reduce(0) { $0 + ($1 == nil ? 0 : 1) } }
}
