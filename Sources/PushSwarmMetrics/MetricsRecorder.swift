import Synchronization

/// A thread-safe holder of `RunMetrics` for code that records from several threads.
///
/// - Important: not an actor on purpose. Recording is a few dictionary updates under a mutex
///   (tens of nanoseconds uncontended); an actor hop would cost an order of magnitude more on the
///   hot path. Give each event loop or worker its own recorder and merge them at the end.
public final class MetricsRecorder: Sendable {
    private let state = Mutex(RunMetrics())

    public init() {}

    /// Runs `body` with exclusive access to the metrics.
    public func record<Result>(_ body: (inout RunMetrics) -> Result) -> Result {
        state.withLock { body(&$0) }
    }

    /// A copy of everything recorded so far.
    public func snapshot() -> RunMetrics {
        state.withLock { $0 }
    }
}
