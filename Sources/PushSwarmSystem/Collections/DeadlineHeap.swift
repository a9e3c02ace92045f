/// Something a `DeadlineHeap` holds: it keeps its own place in the heap, so that removing it
/// (a cancelled timer) takes no search.
public protocol DeadlineHeapMember: AnyObject {
    /// When it is due (monotonic nanoseconds); fixed while it is in a heap.
    var deadline: UInt64 { get }
    /// Where it sits in its heap, -1 once it has left: written by the heap only.
    var heapIndex: Int { get set }
}

/// A binary min-heap of objects by deadline (an event loop's timers). Each position holds the
/// deadline beside the member, so that comparisons read the heap's own array, not the objects,
/// and holds the member unmanaged: the heap owns one reference to each, taken on push and given
/// back when the member leaves (popped, removed, or the heap emptied), so moving entries retains
/// and releases nothing. Sifting moves a hole and writes each moved member's index once.
public struct DeadlineHeap<Member: DeadlineHeapMember> {
    @usableFromInline
    struct Entry {
        @usableFromInline let deadline: UInt64
        @usableFromInline let member: Unmanaged<Member>

        @inlinable
        init(deadline: UInt64, member: Unmanaged<Member>) {
            self.deadline = deadline
            self.member = member
        }

        @inlinable @inline(__always)
        func setIndex(_ index: Int) { member._withUnsafeGuaranteedRef { $0.heapIndex = index } }
    }

    @usableFromInline var heap: [Entry] = []

    @inlinable
    public init() {}

    @inlinable
    public var isEmpty: Bool { heap.isEmpty }
    /// How many members it holds.
    public var count: Int { heap.count }

    /// The earliest deadline, or nil when the heap is empty.
    @inlinable
    public var nextDeadline: UInt64? { heap.first?.deadline }

    @inlinable
    public mutating func push(_ member: Member) {
        precondition(member.heapIndex < 0, "a member is in one heap at a time")
        let entry = Entry(deadline: member.deadline, member: .passRetained(member))
        // A new position at the end is the hole `siftUp` starts from.
        heap.append(entry)
        siftUp(entry, from: heap.count - 1)
    }

    /// The earliest member when it is due at `now`, taken out; nil otherwise.
    @inlinable
    public mutating func popDue(now: UInt64) -> Member? {
        guard let first = heap.first, first.deadline <= now else { return nil }
        return removeAt(0).takeRetainedValue()
    }

    /// Takes `member` out, if it is in this heap.
    @inlinable
    public mutating func remove(_ member: Member) {
        let index = member.heapIndex
        guard index >= 0, index < heap.count, heap[index].member.toOpaque() == Unmanaged.passUnretained(member).toOpaque() else { return }
        removeAt(index).release()
    }

    /// Gives back the heap's references to the members still in it.
    @inlinable
    public mutating func removeAll() {
        for entry in heap {
            entry.setIndex(-1)
            entry.member.release()
        }
        heap.removeAll()
    }

    /// Takes out the entry at `index`; the caller owns the heap's reference to its member.
    @inlinable
    mutating func removeAt(_ index: Int) -> Unmanaged<Member> {
        let removed = heap[index]
        removed.setIndex(-1)
        let last = heap.removeLast()
        guard index < heap.count else { return removed.member }
        if index > 0 && last.deadline < heap[(index - 1) / 2].deadline {
            siftUp(last, from: index)
        } else {
            siftDown(last, from: index)
        }
        return removed.member
    }

    /// Places `entry` at the hole `start` or above it.
    @inlinable
    mutating func siftUp(_ entry: Entry, from start: Int) {
        var hole = start
        while hole > 0 {
            let parent = (hole - 1) / 2
            guard entry.deadline < heap[parent].deadline else { break }
            heap[hole] = heap[parent]
            heap[hole].setIndex(hole)
            hole = parent
        }
        heap[hole] = entry
        entry.setIndex(hole)
    }

    /// Places `entry` at the hole `start` or below it.
    @inlinable
    mutating func siftDown(_ entry: Entry, from start: Int) {
        var hole = start
        let count = heap.count
        while true {
            let left = 2 * hole + 1
            guard left < count else { break }
            let right = left + 1
            let child = right < count && heap[right].deadline < heap[left].deadline ? right : left
            guard heap[child].deadline < entry.deadline else { break }
            heap[hole] = heap[child]
            heap[hole].setIndex(hole)
            hole = child
        }
        heap[hole] = entry
        entry.setIndex(hole)
    }
}
