import Foundation
public import Glibc

/// The thread a partition runs on, as a Swift `SerialExecutor` (SE-0392): the executor of every
/// device actor in the partition. Code already on that thread reaches a device with
/// `assumeIsolated` (the executor answers `checkIsolated`, SE-0424): no hop, no task, no lock per
/// event. Work from other threads (a test awaiting a device, the coordinator starting the
/// partition) is queued and runs in order.
///
/// Simulated partitions run on a `PartitionThread`; wall-clock partitions run on PushSwarmNet's
/// `EventLoop`, which conforms too.
public protocol PartitionExecutor: SerialExecutor {
    /// Runs `work` on the executor's thread, after what was queued before it.
    func execute(_ work: @escaping @Sendable () -> Void)
}

/// One entry of an executor's queue: a job, queued as it is (no closure around it), or a closure.
/// `PartitionThread` and PushSwarmNet's `EventLoop` queue these.
public enum ExecutorWork: Sendable {
    case job(UnownedJob)
    case closure(@Sendable () -> Void)

    /// A job the executor was given to run.
    @safe @inlinable
    public init(_ job: consuming ExecutorJob) {
        self = .job(UnownedJob(job))
    }

    /// Runs the entry on `executor`'s thread (the caller is on it): the executor the job was
    /// enqueued on, which outlives the call.
    @safe @inlinable
    public func run(on executor: some SerialExecutor) {
        switch self {
        case .job(let job): job.runSynchronously(on: executor.asUnownedSerialExecutor())
        case .closure(let closure): closure()
        }
    }
}

/// A partition's executor as its device actors hold it: without counting references. A device
/// reads it on every isolation check, and a counted reference there was two atomic operations an
/// event on the executor's one object, which in wall time other threads' hand-offs to the loop
/// also write (a quarter of the device path's rate at two partitions). What makes it safe: the
/// partition that makes its devices holds its executor (`Partition.executor`, a strong reference)
/// for longer than any of them runs.
@safe
public struct ActorExecutor: Sendable {
    @usableFromInline let executor: UnownedSerialExecutor

    @inlinable
    public init(_ executor: any PartitionExecutor) {
        self.executor = executor.asUnownedSerialExecutor()
    }

    /// The executor, for an actor's `unownedExecutor`.
    @safe @inlinable
    public var unowned: UnownedSerialExecutor { executor }
}


/// Starts the thread an executor runs on: named `name`, with a 1 MiB stack (a partition's run and
/// an event loop are one deep loop, not recursion: the default 8 MiB is plenty, 1 MiB too). The
/// thread calls `started` with its own id, then `body`; this returns once `started` has, so the
/// executor knows its thread before any job can reach it.
public func startExecutorThread(name: String, started: @escaping @Sendable (pthread_t) -> Void, body: @escaping @Sendable () -> Void) {
    let ready = DispatchSemaphore(value: 0)
    let thread = Thread {
        started(pthread_self())
        ready.signal()
        body()
    }
    thread.name = name
    thread.stackSize = 1 << 20
    thread.start()
    ready.wait()
}

/// A thread with a queue of jobs and closures, and nothing else: a simulated partition's executor.
/// It runs the partition's whole run as one closure; jobs enqueued meanwhile (none in a run) wait
/// until it returns.
public final class PartitionThread: PartitionExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var queue: [ExecutorWork] = []
    private var stopping = false
    /// Read on the thread itself without the lock: written once before the first work runs.
    nonisolated(unsafe) private var ownThread: pthread_t?

    public init(name: String) {
        startExecutorThread(name: name, started: { [self] in ownThread = $0 }, body: { [self] in loop() })
    }

    /// True on this executor's thread.
    public var isCurrent: Bool {
        guard let ownThread else { return false }
        return pthread_equal(ownThread, pthread_self()) != 0
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        push(ExecutorWork(job))
    }

    public func execute(_ work: @escaping @Sendable () -> Void) {
        push(.closure(work))
    }

    public func checkIsolated() {
        precondition(isCurrent, "not on partition thread \(Thread.current.name ?? "?")")
    }

    public func isIsolatingCurrentContext() -> Bool? { isCurrent }

    /// Ends the thread once the work queued before has run.
    public func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private func push(_ work: ExecutorWork) {
        condition.lock()
        queue.append(work)
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while queue.isEmpty && !stopping { condition.wait() }
            if queue.isEmpty && stopping {
                condition.unlock()
                return
            }
            var taken: [ExecutorWork] = []
            swap(&taken, &queue)
            condition.unlock()
            for work in taken { work.run(on: self) }
        }
    }
}
