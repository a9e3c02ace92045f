import Dispatch
import Foundation
import Synchronization

/// Ctrl-C (SIGINT) and SIGTERM as callbacks instead of the default kill.
enum Signals {
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    /// Calls `first` on the first SIGINT or SIGTERM; a second one calls `again`, then exits at once
    /// with 130.
    static func onInterrupt(_ first: @escaping @Sendable () -> Void, again: @escaping @Sendable () -> Void = {}) {
        let count = Atomic<Int>(0)
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
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
