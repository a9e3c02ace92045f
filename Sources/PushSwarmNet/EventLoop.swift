import CPushSwarmShim
import Foundation
import PushSwarmCore
public import PushSwarmSystem
import Synchronization

/// Something registered with an event loop for readiness on one file descriptor.
///
/// - Important: called on the loop's thread only.
protocol Selectable: AnyObject {
    func ready(_ events: UInt32)
}

/// Nanoseconds on the monotonic clock: the time base of every timer and measurement in
/// PushSwarmNet, unless a group runs on a `ManualClock`.
public enum Monotonic {
    public static func now() -> UInt64 {
        Sockets.monotonicNanoseconds()
    }
}

/// Time that moves only when told to, for a group of loops under test (SwiftNIO's
/// `EmbeddedEventLoop.advanceTime(by:)` is the model): the loops' timers fire when
/// `EventLoopGroup.advanceTime(by:)` passes their deadlines, never by waiting. Sockets stay real.
public final class ManualClock: Sendable {
    private let nanoseconds: Atomic<UInt64>

    /// Starts far from zero, so that deadlines before now stay positive.
    public init(startingAt start: UInt64 = 1_000_000_000_000) {
        nanoseconds = Atomic(start)
    }

    public var now: UInt64 { nanoseconds.load(ordering: .acquiring) }

    /// Moves to `instant` unless the clock is already past it.
    fileprivate func move(to instant: UInt64) {
        _ = nanoseconds.max(instant, ordering: .acquiringAndReleasing)
    }
}

/// A timer scheduled on an event loop; `cancel()` from the loop's thread.
public final class LoopTimer: DeadlineHeapMember, @unchecked Sendable {
    public let deadline: UInt64
    fileprivate var action: (() -> Void)?
    /// Where the timer sits in its loop's heap; -1 once it has left it (the heap's to write).
    public var heapIndex = -1
    /// Weak: a timer can outlive its loop (held by a connection a test or a run still holds).
    fileprivate weak var loop: EventLoop?

    fileprivate init(deadline: UInt64, action: @escaping () -> Void) {
        self.deadline = deadline
        self.action = action
    }

    /// True until the timer has fired or been cancelled.
    public var isPending: Bool { action != nil }

    /// Cancels the timer and takes it out of the heap at once, so that a heap of request
    /// timeouts holds only the live ones.
    public func cancel() {
        action = nil
        if heapIndex >= 0, let loop { loop.removeTimer(self) }
    }
}

/// One thread running epoll: sockets, timers, and work handed to it from other threads.
///
/// Everything registered with a loop (connections, listeners, timers) is touched only on its
/// thread, which is why those types need no locks. Work from elsewhere arrives through
/// `execute`, which wakes the loop through an eventfd.
///
/// A loop is a Swift `SerialExecutor` (SE-0392), as SwiftNIO's `SelectableEventLoop` is: the
/// executor of a wall-clock partition's device actors. Jobs are queued as they are, without a
/// closure around them, and `checkIsolated` (SE-0424) lets code already on the loop's thread
/// reach those actors synchronously.
public final class EventLoop: PartitionExecutor, @unchecked Sendable {
    public let index: Int
    private let epoll: Int32
    private let wakeFD: Int32
    private let inbox = Mutex<[ExecutorWork]>([])
    private var threadID: pthread_t?
    private let stopped = Atomic<Bool>(false)
    private var registrations: [(any Selectable)?] = []
    private var freeSlots: [Int] = []
    /// Timers by deadline. A wall run adds and cancels a request timeout per request: the heap
    /// compares deadlines in its own array and moves timers without retaining them.
    private var timers = DeadlineHeap<LoopTimer>()
    private var scratch: [UInt8] = []
    /// The time its timers and measurements read; nil: the monotonic clock.
    private let manualClock: ManualClock?

    /// Now, in nanoseconds, on the loop's clock: every deadline and timing of what runs on it.
    @inline(__always)
    public var now: UInt64 {
        if let manualClock { return manualClock.now }
        return Sockets.monotonicNanoseconds()
    }

    /// A buffer for building one outgoing message; give it back with `returnScratch`.
    func takeScratch() -> [UInt8] {
        var taken: [UInt8] = []
        swap(&taken, &scratch)
        taken.removeAll(keepingCapacity: true)
        return taken
    }

    func returnScratch(_ buffer: [UInt8]) {
        if buffer.capacity <= 1 << 20 { scratch = buffer }
    }

    /// Where connections on this loop read into; valid during one delegate call.
    let readBuffer = ReadBuffer(capacity: 65_536)

    init(index: Int, clock: ManualClock? = nil) {
        self.index = index
        manualClock = clock
        ps_ignore_sigpipe()
        epoll = ps_epoll_create()
        wakeFD = ps_eventfd()
        precondition(epoll >= 0 && wakeFD >= 0, "epoll or eventfd unavailable: errno \(errno)")
        _ = ps_epoll_ctl(epoll, 1, wakeFD, UInt32(PS_EPOLLIN), UInt64.max)
    }

    deinit {
        timers.removeAll()
        close(epoll)
        close(wakeFD)
    }

    func start(name: String) {
        startExecutorThread(name: name, started: { [self] in threadID = $0 }, body: { [self] in run() })
        // The loop's body moves into a job of the loop itself as soon as that job arrives (the
        // loop runs meanwhile): see `LoopBody`.
        let body = LoopBody(on: self)
        Task { await body.run(self) }
    }

    /// True while the loop's body runs as a job of the loop (`LoopBody`), on its thread.
    private var bodyIsAJob = false

    /// The loop, run by its `LoopBody` job until it stops.
    fileprivate func runAsJob() {
        bodyIsAJob = true
        let waiting = bodyStarted.withLock { state in
            state.started = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
        run()
        bodyIsAJob = false
    }

    /// True on this loop's own thread.
    public var inLoop: Bool {
        guard let threadID else { return false }
        return pthread_equal(threadID, pthread_self()) != 0
    }

    /// Runs `work` on the loop's thread (now, if already on it).
    public func execute(_ work: @escaping @Sendable () -> Void) {
        if inLoop {
            work()
        } else {
            enqueue(work)
        }
    }

    /// Runs `work` on the loop's thread after the current event, even when called on it.
    public func enqueue(_ work: @escaping @Sendable () -> Void) {
        push(.closure(work))
    }

    private func push(_ work: ExecutorWork) {
        let wasEmpty = inbox.withLock { queue in
            queue.append(work)
            return queue.count == 1
        }
        if wasEmpty { _ = ps_eventfd_signal(wakeFD) }
    }

    // MARK: SerialExecutor

    public func enqueue(_ job: consuming ExecutorJob) {
        push(ExecutorWork(job))
    }

    /// The runtime asks these when the loop is not the current executor: code on the loop's
    /// thread outside any job of it (see `LoopBody`), counted as `Statistics.isolationAsked`.
    public func checkIsolated() {
        isolationAsked.add(1, ordering: .relaxed)
        precondition(inLoop, "not on event loop \(index)'s thread")
    }

    public func isIsolatingCurrentContext() -> Bool? {
        isolationAsked.add(1, ordering: .relaxed)
        return inLoop
    }

    private let isolationAsked = Atomic<UInt64>(0)

    /// Runs `action` on the loop after `nanoseconds`. Call on the loop's thread.
    @discardableResult
    public func schedule(afterNanoseconds nanoseconds: UInt64, _ action: @escaping () -> Void) -> LoopTimer {
        schedule(at: now &+ nanoseconds, action)
    }

    /// Runs `action` on the loop at `deadline` (nanoseconds on the loop's clock). Call on the
    /// loop's thread.
    @discardableResult
    public func schedule(at deadline: UInt64, _ action: @escaping () -> Void) -> LoopTimer {
        let timer = LoopTimer(deadline: deadline, action: action)
        timer.loop = self
        timers.push(timer)
        return timer
    }

    fileprivate func removeTimer(_ timer: LoopTimer) {
        timers.remove(timer)
    }

    /// How long epoll may wait for the next timer, in nanoseconds (epoll_pwait2): a timer wakes
    /// the loop at its deadline, not up to a millisecond after it; a second at most. On a manual
    /// clock only a due timer shortens the wait (time moves by `advanceTime`, which wakes the loop).
    private func nanosecondsUntilNextTimer(now: UInt64) -> UInt64 {
        guard let deadline = timers.nextDeadline else { return 1_000_000_000 }
        if deadline <= now { return 0 }
        if manualClock != nil { return 1_000_000_000 }
        return min(1_000_000_000, deadline - now)
    }

    /// What the loop's waits have done so far: read on the loop's thread (`statistics()`).
    public struct Statistics: Sendable, Equatable {
        /// Calls to epoll_pwait2 (or epoll_wait): the loop's wake-ups, and its sleeps.
        public var waits: UInt64 = 0
        /// Readiness events those waits returned, the loop's own wake-up signal included.
        public var events: UInt64 = 0
        /// Waits that returned no event: a timer's deadline, or a second with nothing to do.
        public var emptyWaits: UInt64 = 0
        /// Times the runtime asked the loop whether code runs on it (`checkIsolated`,
        /// `isIsolatingCurrentContext`): none while its body runs as its job.
        public var isolationAsked: UInt64 = 0

        public init() {}

        public static func + (left: Statistics, right: Statistics) -> Statistics {
            var sum = left
            sum.waits &+= right.waits
            sum.events &+= right.events
            sum.emptyWaits &+= right.emptyWaits
            sum.isolationAsked &+= right.isolationAsked
            return sum
        }
    }

    private var counted = Statistics()

    /// The loop's figures so far, read on its thread after what was handed to it before.
    public func statistics() async -> Statistics {
        await onLoop {
            var figures = self.counted
            figures.isolationAsked = self.isolationAsked.load(ordering: .relaxed)
            return figures
        }
    }

    /// Returns once the loop's body runs as its job (`LoopBody`), at once if it does.
    public func bodyRunsAsAJob() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let running = bodyStarted.withLock { state -> Bool in
                if state.started { return true }
                state.waiting.append(continuation)
                return false
            }
            if running { continuation.resume() }
        }
    }

    private let bodyStarted = Mutex<(started: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func stop() {
        stopped.store(true, ordering: .releasing)
        _ = ps_eventfd_signal(wakeFD)
    }

    // MARK: registration (loop thread only)

    func register(_ fd: Int32, _ object: any Selectable, events: UInt32) -> Int {
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            registrations[slot] = object
        } else {
            slot = registrations.count
            registrations.append(object)
        }
        if ps_epoll_ctl(epoll, 1, fd, events, UInt64(slot)) != 0 {
            registrations[slot] = nil
            freeSlots.append(slot)
            return -1
        }
        return slot
    }

    func modify(_ fd: Int32, slot: Int, events: UInt32) {
        _ = ps_epoll_ctl(epoll, 3, fd, events, UInt64(slot))
    }

    /// Forgets `fd`; the caller closes it afterwards.
    func deregister(_ fd: Int32, slot: Int) {
        guard slot >= 0, slot < registrations.count else { return }
        _ = ps_epoll_ctl(epoll, 2, fd, 0, 0)
        registrations[slot] = nil
        freeSlots.append(slot)
    }

    // MARK: the loop

    private func run() {
        var events = [ps_event](repeating: ps_event(), count: 256)
        while !stopped.load(ordering: .acquiring) {
            let timeout = nanosecondsUntilNextTimer(now: now)
            let count = Sockets.epollWait(epoll, into: &events, timeoutNanoseconds: timeout)
            counted.waits &+= 1
            if count > 0 {
                counted.events &+= UInt64(count)
                for index in 0..<Int(count) {
                    let event = events[index]
                    if event.data == UInt64.max {
                        ps_eventfd_drain(wakeFD)
                        continue
                    }
                    let slot = Int(event.data)
                    // A handler earlier in this batch may have closed this one.
                    if slot < registrations.count, let object = registrations[slot] {
                        object.ready(event.events)
                    }
                }
            } else if count == 0 {
                counted.emptyWaits &+= 1
            }
            runDueTimers()
            runInbox()
        }
        // Run whatever was handed over before the stop, so that no completion is lost.
        runInbox()
    }

    fileprivate var nextTimerDeadline: UInt64? { timers.nextDeadline }

    /// The timers pending on the loop, read on its thread.
    func pendingTimers() async -> Int {
        await onLoop { self.timers.count }
    }

    /// `work`'s value, computed on the loop after what was handed to it before.
    fileprivate func onLoop<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            enqueue { continuation.resume(returning: work()) }
        }
    }

    fileprivate func runDueTimers() {
        let now = self.now
        while let timer = timers.popDue(now: now) {
            if let action = timer.action {
                timer.action = nil
                action()
            }
        }
    }

    private func runInbox() {
        // Swapped out whole: no copy, and nothing allocated when the inbox is empty.
        let work = inbox.withLock { queue -> [ExecutorWork] in
            guard !queue.isEmpty else { return [] }
            var taken: [ExecutorWork] = []
            swap(&taken, &queue)
            return taken
        }
        guard bodyIsAJob else { return runBeforeTheBody(work) }
        for item in work { item.run(on: self) }
    }

    /// The inbox before the loop's body runs as its job (or after it has ended): a job may be the
    /// body, which runs until the loop stops, so what was taken after a job goes back to the
    /// front of the inbox first, for the loop (the body, then) to run in order.
    private func runBeforeTheBody(_ work: [ExecutorWork]) {
        for (position, item) in work.enumerated() {
            if case .job = item, position + 1 < work.count {
                inbox.withLock { $0.insert(contentsOf: work[(position + 1)...], at: 0) }
                _ = ps_eventfd_signal(wakeFD)
                item.run(on: self)
                return
            }
            item.run(on: self)
        }
    }
}

/// The loop's body as a job of the loop (an actor on it), not a bare thread function: while it
/// runs, the loop is the current executor, so each device's `assumeIsolated` on the loop's thread
/// is one comparison. From the bare thread the runtime asked, at every check (several a request),
/// whether the loop was the main executor (a dynamic cast) and then `isIsolatingCurrentContext`:
/// 1.6 % of a wall run's CPU at 30,000 requests a second. Jobs that hop onto the loop run inside
/// it, each in its own context, as the runtime nests them. The simulated path's `PartitionJob`
/// does the same for a `PartitionThread`.
private actor LoopBody {
    private nonisolated let executor: ActorExecutor

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.unowned }

    init(on loop: EventLoop) {
        executor = ActorExecutor(loop)
    }

    func run(_ loop: EventLoop) {
        loop.runAsJob()
    }
}

/// A fixed set of event loops, one per core by default; connections are spread across them.
public final class EventLoopGroup: Sendable {
    public let loops: [EventLoop]
    private let next = Atomic<Int>(0)
    private let clock: ManualClock?

    /// `threads` nil: one loop per core. `clock`: time for tests, moved by `advanceTime(by:)`.
    public init(threads: Int? = nil, name: String = "pushswarm-loop", clock: ManualClock? = nil) {
        let count = threads ?? ProcessInfo.processInfo.activeProcessorCount
        self.clock = clock
        loops = (0..<max(1, count)).map { EventLoop(index: $0, clock: clock) }
        for loop in loops { loop.start(name: "\(name)-\(loop.index)") }
    }

    /// Moves the group's manual clock on by `nanoseconds` and returns once each loop has run
    /// the timers that became due, after the work handed to it before this call. Time moves from
    /// deadline to deadline, so a timer sees the clock at its own deadline, and a timer it
    /// schedules fires in the same call if that one's deadline is passed too. A group on the real
    /// clock: a precondition failure.
    public func advanceTime(by nanoseconds: UInt64) async {
        guard let clock else { preconditionFailure("advanceTime(by:) needs a group made with a ManualClock") }
        let target = clock.now &+ nanoseconds
        while true {
            var next = target
            for loop in loops {
                if let deadline = await loop.onLoop({ loop.nextTimerDeadline }), deadline < next { next = deadline }
            }
            clock.move(to: next)
            for loop in loops { await loop.onLoop { loop.runDueTimers() } }
            if next == target { return }
        }
    }

    /// The next loop, round robin.
    public func any() -> EventLoop {
        let value = next.add(1, ordering: .relaxed).newValue
        return loops[value % loops.count]
    }

    /// The loop a key always maps to (a connection pool lives on one loop).
    public func loop(for key: Int) -> EventLoop {
        loops[abs(key % loops.count)]
    }

    /// Stops every loop after the work already handed to it.
    public func shutdown() {
        for loop in loops { loop.stop() }
    }
}
