import Foundation
import PushSwarmMetrics
import PushSwarmSystem

/// How a partition runs: in simulated time, its whole run in one loop on its thread; in wall
/// time, on its event loop, woken when something is due and when an answer arrives.
extension Partition {
    /// Simulated time: runs the whole partition to its end, on the calling thread (its executor's).
    func runSimulated() -> PartitionResult {
        onLoop()
        start()
        while let (time, item) = nextItem() {
            now = time
            prefetchNextDevice()
            handle(item, at: time, lag: nil)
        }
        return result()
    }

    /// Asks for the first lines of the device the next item is for, while this one is handled.
    /// In a large fleet the device was last touched long ago and is out of cache, and its first
    /// touch (`slots[index].device`, retained by `handle`) shows in a million devices' day
    /// (Benchmarks/README.md, "Measured choices"). The
    /// device's index is the hint its items are queued with, read from the heap's first entry
    /// without touching the item. A prefetch only: what runs does not change.
    func prefetchNextDevice() {
        guard let index = queue.nextHint, index >= 0 else { return }
        SystemCalls.prefetch(SystemCalls.ObjectAddress(of: slots[Int(index)].device), lines: 6)
    }

    /// The next item to handle, or nil when the run is over: past the end with nothing in flight.
    func nextItem() -> (Instant, Item)? {
        absorbArrived()
        if !interrupted && transport.isInterrupted { stopStarting(at: now) }
        guard let next = queue.nextTime else { return nil }
        if next > end && inFlight == 0 { return nil }
        return queue.popNext()
    }

    /// Wall time: starts the partition on its event loop; `finished` is called there once the run
    /// has reached its end and every request in flight has ended.
    func startWall(_ live: any LiveTransport, finished: @escaping (PartitionResult) -> Void) {
        onLoop()
        self.finished = finished
        // A transport outlives its partitions (a wall run's warm-up and the run proper share it):
        // what it holds of a partition, its handler and its wake-up, holds it weakly, and does
        // nothing once the partition is released.
        live.onArrival { [weak self] arrival in self?.arrive(arrival, live) }
        start()
        if progress != nil && warmUp == nil { queue.schedule(.progressTick, at: Instant.start + .seconds(1)) }
        tick(live)
    }

    /// Handles what is due, then sleeps until the next item or the end.
    func tick(_ live: any LiveTransport) {
        onLoop()
        guard !isDone else { return }
        let now = transport.currentTime
        while let next = queue.nextTime, next <= now, next <= end || inFlight > 0 {
            guard let (time, item) = queue.popNext() else { break }
            handle(item, at: time, lag: now - time)
            if isDone { return }
        }
        if (now >= end || isWarmedUp) && inFlight == 0 { return finish() }
        // Past the end, the answers still in flight arrive by themselves (`arrive` finishes on
        // the last): the partition sleeps until its next item (a progress report) or the drain's
        // bound, not every turn of the loop. Every exchange has its own timeout, so a drain
        // longer than `drainLimit` means one never ended: the run ends anyway, counted, and what
        // was still in flight is reported so (`inFlightAtEnd`), rather than never ending.
        let cutOff = end + Self.drainLimit
        if now >= cutOff {
            metrics.increment(.runDrainCutOff)
            return finish()
        }
        let wake = now >= end ? max(min(queue.nextTime ?? cutOff, cutOff), now) : max(min(queue.nextTime ?? end, end), now)
        wakeAt = wake
        live.wake(at: wake) { [weak self] in self?.tick(live) }
    }

    /// How long past its end a wall run waits for the answers in flight: four times the longest
    /// default request timeout among the platforms (30 s), room for a loaded machine. A
    /// scenario's `requestTimeout` beyond it is cut there, counted.
    static let drainLimit = TimeSpan.minutes(2)

    /// An answer or socket event from the transport, on this thread, as it happens. What it
    /// schedules (a retry after a 503, the next request of a device's queue) may fall before the
    /// wake-up asked for: then a tick runs what is due and moves the wake-up to the next item,
    /// or the retry would wait for whatever came next (in a quiet warm-up, its end).
    func arrive(_ arrival: Arrival, _ live: any LiveTransport) {
        onLoop()
        guard !isDone else { return }
        let time = transport.currentTime
        handle(item(for: arrival), at: time, lag: nil)
        if !isDone && (time >= end || isWarmedUp) && inFlight == 0 { return finish() }
        if !isDone, let next = queue.nextTime, wakeAt.map({ next < $0 }) ?? true { tick(live) }
    }

    /// Asks the partition to stop starting requests (Ctrl-C); those in flight still finish.
    func interrupt(_ live: any LiveTransport) {
        onLoop()
        guard !interrupted, !isDone else { return }
        stopStarting(at: transport.currentTime)
        tick(live)
    }

    /// Traps unless called on the partition's executor's thread (in every build).
    func onLoop() { executor.checkIsolated() }

    /// The run ends at `time` for this partition: nothing new starts after it.
    func stopStarting(at time: Instant) {
        interrupted = true
        // Once per process (a shard process counts its own stop).
        if number == 0 { metrics.increment(.runInterrupted) }
        end = min(end, time)
    }

    func finish() {
        guard !isDone else { return }
        isDone = true
        // What reaches the transport from now on is no longer this run's (a warm-up's sockets
        // closing, its connections ending while the run proper makes its devices): dropped, not
        // handed to this partition, which its run is about to release. Nor is a wake-up still
        // to come (asked for before the last answer arrived and ended the run).
        if let live = transport as? any LiveTransport {
            live.onArrival { _ in }
            live.stopWaking()
        }
        let result = result()
        finished?(result)
        finished = nil
    }

    /// Simulated transports hand over socket replies and service timers after each call.
    func absorbArrived() {
        for arrival in transport.takeArrived() {
            let item = item(for: arrival)
            var hint: Int32 = -1
            switch item {
            case .device(let index, _), .completion(let index, _): hint = Int32(index)
            default: break
            }
            queue.schedule(item, at: max(arrival.at, now), hint: hint)
        }
    }

    /// What an arrival is to this partition (transports number devices across the fleet).
    func item(for arrival: Arrival) -> Item {
        switch arrival.payload {
        case .completion(let completion): .completion(arrival.device - range.lowerBound, slot: completions.insert(completion))
        case .socket(let event): .device(arrival.device - range.lowerBound, .socket(event))
        case .timer(let token): .transportTimer(token)
        case .push(let token, let data, let isDataOnly): .externalPush(token: token, data: data, isDataOnly: isDataOnly)
        case .connection(let event): .connection(event)
        }
    }

    /// A warm-up is over once nothing is left to do: every install's warm-up handled, no retry
    /// waiting, no request in flight.
    var isWarmedUp: Bool { warmUp != nil && queue.isEmpty && inFlight == 0 }
}
