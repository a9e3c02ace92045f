import Dispatch
import Foundation

/// Ctrl-C (SIGINT) and SIGTERM as callbacks instead of the default kill.
enum Signals {
    nonisolated(unsafe) private static var sources: [any DispatchSourceSignal] = []

    /// Calls `first` on the first SIGINT or SIGTERM; a second one exits at once with 130.
    static func onInterrupt(_ first: @escaping @Sendable () -> Void) {
        let count = Counter()
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if count.next() == 1 {
                    first()
                } else {
                    FileHandle.standardError.write(Data("pushswarm: interrupted again; exiting without a report\n".utf8))
                    exit(130)
                }
            }
            source.resume()
            sources.append(source)
        }
    }

    private final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0

        func next() -> Int {
            lock.lock()
            defer { lock.unlock() }
            value += 1
            return value
        }
    }
}
