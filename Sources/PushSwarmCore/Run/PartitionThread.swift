import Foundation

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

/// A thread with a queue of jobs and closures, and nothing else: a simulated partition's executor.
/// It runs the partition's whole run as one closure; jobs enqueued meanwhile (none in a run) wait
/// until it returns.
public final class PartitionThread: PartitionExecutor, @unchecked Sendable {
    private enum Work {
        case job(UnownedJob)
        case closure(@Sendable () -> Void)
    }

    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var queue: [Work] = []
    private var stopping = false
    /// Read on the thread itself without the lock: written once before the first work runs.
    nonisolated(unsafe) private var ownThread: pthread_t?

    public init(name: String) {
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            ownThread = pthread_self()
            started.signal()
            loop()
        }
        thread.name = name
        // A partition's run is one deep loop, not recursion: the default 8 MiB is plenty; 1 MiB too.
        thread.stackSize = 1 << 20
        thread.start()
        started.wait()
    }

    /// True on this executor's thread.
    public var isCurrent: Bool {
        guard let ownThread else { return false }
        return pthread_equal(ownThread, pthread_self()) != 0
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        push(.job(UnownedJob(job)))
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

    private func push(_ work: Work) {
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
            var taken: [Work] = []
            swap(&taken, &queue)
            condition.unlock()
            for work in taken {
                switch work {
                case .job(let job): job.runSynchronously(on: asUnownedSerialExecutor())
                case .closure(let closure): closure()
                }
            }
        }
    }
}
