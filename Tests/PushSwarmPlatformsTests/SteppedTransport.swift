import PushSwarmSystem
import PushSwarmCore
import PushSwarmPlatforms

/// A live transport on a clock the test moves, standing for an event loop: answers come from the
/// built-in mocks (in-process, as in simulated time) and arrive when they are due; the loop is
/// busy for the first `stallEachSecond` of every second, and whatever falls due then is handled
/// when the stall ends. Everything runs on the partition's thread, one event after another.
final class SteppedTransport: ForwardingTransport, LiveTransport, @unchecked Sendable {
    private let thread: PartitionThread
    private let stall: TimeSpan
    private(set) var now = Instant.start
    private var deliver: ((Arrival) -> Void)?
    private var wakeUp: (at: Instant, tick: () -> Void)?
    private var answers: [Arrival] = []
    private var driving = false
    /// Set once the partition sends or asks to be woken.
    private(set) var touched = false

    init(inner: SimulatedTransport, thread: PartitionThread, stallEachSecond: TimeSpan) {
        self.thread = thread
        stall = stallEachSecond
        super.init(inner: inner)
    }

    override var currentTime: Instant { now }

    func onArrival(_ handler: @escaping (Arrival) -> Void) { deliver = handler }

    func wake(at instant: Instant, _ tick: @escaping () -> Void) {
        touched = true
        wakeUp = (instant, tick)
        guard !driving else { return }
        driving = true
        thread.execute { [self] in drive() }
    }

    func stopWaking() { wakeUp = nil }

    override func send(_ outgoing: OutgoingRequest, device: Int, platform: String, source: SourceAddress, at now: Instant) -> (ExchangeCompletion, Instant)? {
        touched = true
        if let (completion, at) = inner.send(outgoing, device: device, platform: platform, source: source, at: now) {
            answers.append(Arrival(device: device, payload: .completion(completion), at: at))
        }
        return nil
    }

    /// The next due event, at the time the loop gets to it (after a stall, if it fell in one).
    private func drive() {
        while true {
            let answer = answers.indices.min { answers[$0].at < answers[$1].at }
            let answerAt = answer.map { answers[$0].at }
            guard answerAt != nil || wakeUp != nil else { break }
            let isAnswer = answerAt.map { at in wakeUp.map { at <= $0.at } ?? true } ?? false
            let due = isAnswer ? answerAt! : wakeUp!.at
            now = max(now, reached(due))
            if isAnswer, let answer {
                var arrival = answers.remove(at: answer)
                arrival.at = now
                deliver?(arrival)
            } else if let (_, tick) = wakeUp {
                wakeUp = nil
                tick()
            }
        }
        driving = false
    }

    /// When the loop reaches something due at `due`: then, or at the end of the stall it falls in.
    private func reached(_ due: Instant) -> Instant {
        let sinceStart = (due - .start).microseconds
        let intoSecond = sinceStart % 1_000_000
        return intoSecond < stall.microseconds ? due + TimeSpan(microseconds: stall.microseconds - intoSecond) : due
    }

    /// Answers arrive through `drive`, not through the partition's queue.
    override func takeArrived() -> [Arrival] { [] }
}
