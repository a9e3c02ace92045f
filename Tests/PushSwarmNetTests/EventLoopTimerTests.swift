import PushSwarmCore
import PushSwarmSystem
@testable import PushSwarmNet
import Testing

/// The loop's timers: a heap by deadline from which a cancelled timer leaves at once (a wall run
/// adds and cancels a request timeout per request).
@Suite struct EventLoopTimerTests {
    private final class Fired: @unchecked Sendable {
        var deadlines: [UInt64] = []
    }

    /// Timers already due fire in one pass of the loop, so their order is the heap's alone: by
    /// deadline, whatever the order they were added in, and never one that was cancelled. No
    /// time passes in the test: every deadline lies in the past.
    @Test func dueTimersFireInDeadlineOrderAndCancelledOnesNever() async {
        let group = EventLoopGroup(threads: 1, name: "timer-test")
        defer { group.shutdown() }
        let loop = group.loops[0]
        let fired = Fired()
        var random = SeededRandom(seed: 7, stream: .device)
        let offsets = (0..<2_000).map { _ in UInt64(random.nextIndex(below: 1_000_000)) }
        let cancelled = Set(offsets.indices.filter { _ in random.chance(0.35) })
        let expected = offsets.indices.filter { !cancelled.contains($0) }.map { offsets[$0] }.sorted()
        let order = await withCheckedContinuation { (continuation: CheckedContinuation<[UInt64], Never>) in
            loop.execute {
                let base = Monotonic.now() - 2_000_000_000
                var timers: [LoopTimer] = []
                for offset in offsets {
                    timers.append(loop.schedule(at: base + offset) { fired.deadlines.append(offset) })
                }
                // Cancelled in another order than they were added: from the middle of the heap too.
                for index in cancelled.sorted(by: >) { timers[index].cancel() }
                #expect(timers.enumerated().allSatisfy { $0.element.isPending != cancelled.contains($0.offset) })
                loop.schedule(at: base + 1_000_000) { continuation.resume(returning: fired.deadlines) }
            }
        }
        #expect(order.count == expected.count)
        #expect(order == expected)
    }

    /// On a manual clock a timer fires when time passes its deadline, never before, and then in
    /// deadline order; time that does not move fires nothing, however long the test takes.
    @Test func advancingAManualClockFiresTheTimersItPasses() async {
        let group = manualGroup("manual-timer-test")
        defer { group.shutdown() }
        let loop = group.loops[0]
        let fired = Fired()
        let offsets: [UInt64] = [30, 10, 20, 20, 50]
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                let base = loop.now
                for offset in offsets { loop.schedule(at: base + offset) { fired.deadlines.append(offset) } }
                // A timer that schedules another, due within the same advance.
                loop.schedule(at: base + 25) { loop.schedule(afterNanoseconds: 5) { fired.deadlines.append(30) } }
                continuation.resume()
            }
        }
        func seen() async -> [UInt64] {
            await withCheckedContinuation { continuation in loop.execute { continuation.resume(returning: fired.deadlines) } }
        }
        #expect(await seen() == [])
        await group.advanceTime(by: 9)
        #expect(await seen() == [])
        await group.advanceTime(by: 1)
        #expect(await seen() == [10])
        await group.advanceTime(by: 20)
        #expect(await seen() == [10, 20, 20, 30, 30])
        await group.advanceTime(by: 19)
        #expect(await seen() == [10, 20, 20, 30, 30])
        await group.advanceTime(by: 1)
        #expect(await seen() == [10, 20, 20, 30, 30, 50])
    }

    /// A loop counts its waits and the events they brought (`EventLoop.Statistics`, a wall run's
    /// `generator.wakeUps` and `eventsPerWakeUp`): work handed over from another thread wakes
    /// it through its eventfd, an event; a timer's deadline ends a wait with none.
    @Test func theLoopCountsItsWaitsAndTheEventsTheyBrought() async {
        let group = EventLoopGroup(threads: 1, name: "statistics-test")
        defer { group.shutdown() }
        let loop = group.loops[0]
        let before = await loop.statistics()
        #expect(before.waits >= 1 && before.events >= 1, "reading the figures was handed over, a wake-up: \(before)")
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute { loop.schedule(afterNanoseconds: 1_000_000) { continuation.resume() } }
        }
        let after = await loop.statistics()
        #expect(after.waits > before.waits && after.events > before.events, "\(before) then \(after)")
        #expect(after.emptyWaits > before.emptyWaits, "the timer's deadline ended a wait with no event: \(before) then \(after)")
        #expect((before + after).waits == before.waits + after.waits)
    }

    /// An actor on the loop, as a wall run's devices are.
    private actor OnTheLoop {
        private nonisolated let executor: ActorExecutor
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.unowned }
        var touched = 0

        init(_ loop: EventLoop) { executor = ActorExecutor(loop) }

        func touch() { touched += 1 }
    }

    /// The loop's body runs as a job of the loop, so code on its thread reaches the loop's
    /// actors with `assumeIsolated` by one comparison: the runtime no longer asks the loop
    /// (`checkIsolated`, `isIsolatingCurrentContext`) for each, as it did from the bare thread.
    @Test func theLoopsActorsAreReachedWithoutAskingTheLoop() async {
        let group = EventLoopGroup(threads: 1, name: "isolation-test")
        defer { group.shutdown() }
        let loop = group.loops[0]
        let actor = OnTheLoop(loop)
        await loop.bodyRunsAsAJob()
        let before = await loop.statistics()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                for _ in 0..<100 { actor.assumeIsolated { $0.touch() } }
                // A timer's action too, as a wall run's ticks are.
                loop.schedule(afterNanoseconds: 0) {
                    actor.assumeIsolated { $0.touch() }
                    continuation.resume()
                }
            }
        }
        let after = await loop.statistics()
        #expect(await actor.touched == 101)
        #expect(after.isolationAsked == before.isolationAsked, "the runtime asked the loop \(after.isolationAsked - before.isolationAsked) times")
    }

    private final class Weak: @unchecked Sendable {
        var timers: [() -> LoopTimer?] = []
    }

    /// The heap holds its timers unmanaged and gives its one reference back when a timer fires
    /// or is cancelled: once the caller drops its own, none is left alive (a timer the heap
    /// never gave back would stay, with its action's captures; one given back twice crashes).
    @Test func firedAndCancelledTimersAreFreed() async {
        let group = EventLoopGroup(threads: 1, name: "timer-free-test")
        defer { group.shutdown() }
        let loop = group.loops[0]
        let weak = Weak()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute {
                let base = Monotonic.now() - 2_000_000_000
                var timers: [LoopTimer] = []
                for offset in 0..<500 {
                    let timer = loop.schedule(at: base + UInt64(offset * 997 % 500)) {}
                    timers.append(timer)
                    weak.timers.append { [weak timer] in timer }
                }
                for (index, timer) in timers.enumerated() where index % 3 == 0 { timer.cancel() }
                loop.schedule(at: base + 1_000) { continuation.resume() }
            }
        }
        // The loop's pass that fired them is over; check on its thread, after it.
        let alive = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            loop.execute { continuation.resume(returning: weak.timers.filter { $0() != nil }.count) }
        }
        #expect(alive == 0)
    }
}
