import Dispatch
import Foundation
import Synchronization

/// Ctrl-C (SIGINT) and SIGTERM as callbacks instead of the default kill.
public enum Signals {
    /// Kept for the process's life: a signal source is only as alive as its last reference.
    /// Written only here, by the one call each command makes before any signal can arrive
    /// (a signal source is not `Sendable`, so a mutex cannot take it).
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    private static let received = Atomic<Int>(0)

    /// SIGINTs and SIGTERMs so far (counted once `onInterrupt` has been called).
    public static var interruptions: Int { received.load(ordering: .relaxed) }

    /// Calls `first` on the first SIGINT or SIGTERM; a second one calls `again`, then exits at once
    /// with 130.
    public static func onInterrupt(_ first: @escaping @Sendable () -> Void, again: @escaping @Sendable () -> Void = {}) {
        let count = Atomic<Int>(0)
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                received.add(1, ordering: .relaxed)
                if count.add(1, ordering: .relaxed).newValue == 1 {
                    first()
                } else {
                    again()
                    FileHandle.standardError.write(Data("pushswarm: interrupted again; exiting without a report\n".utf8))
                    exit(130)
                }
            }
            source.resume()
            sources.append(source)
        }
    }
}
