import CPushSwarmShim
import Foundation
import PushSwarmMetrics
import Synchronization

/// One shared-nothing part of a run: whole NAT addresses' worth of devices, its own scheduler, its
/// own built-in mock state and transport, all confined to one thread (its executor: a
/// `PartitionThread` in simulated time, an event loop in wall time). Partitions meet only at the
/// end, where `Run` merges their results as `merge` merges shards.
///
/// Events are handled one at a time in (time, scheduling order), which is what makes the mock's
/// decisions (a rate limiter's, a fault's) reproducible in simulated time. In wall time an event
/// is handed to its device with its scheduled time as `now`, so a request's latency counts from
/// when the device wanted it sent, however late the loop got to it; answers arriving on the loop
/// are handled at once, on the same thread.
///
/// - Important: every method runs on `executor`'s thread, and each way in from the loop (the
///   simulated run, the wall run's start, its ticks, arrivals and interrupt) checks that it does,
///   in release builds too (`onLoop`, the executor's `checkIsolated`): the state needs no lock
///   because nothing reaches it from another thread, and a caller that would is stopped there.
///   Devices are actors on that executor, so the partition calls them synchronously
///   (`handleOnExecutor`, `assumeIsolated`: checked the same way).
final class Partition: @unchecked Sendable {
    private enum Item {
        case device(Int, VirtualDevice.Event)
        /// The answer to a request of device number `index`, waiting in `completions[slot]`.
        case completion(Int, slot: Int32)
        case campaign(Int)
        case transportTimer(UInt64)
        /// A push a real service posted for a token (`--push-listen`).
        case externalPush(token: String, data: [String: String], isDataOnly: Bool)
        /// The next open-model arrival of stream number `stream` (`arrivalStreams`).
        case arrival(stream: Int)
        /// Wall time: wakes the partition each second to report progress while nothing else is due.
        case progressTick
        /// The warm-up of device number `index` (an install from before the run).
        case warmUp(Int)
    }


    let number: Int
    private let scenario: Scenario
    private let fleet: Fleet
    let executor: any PartitionExecutor
    let transport: any RunTransport
    /// This partition's share of the built-in mocks (nil against a real target).
    private let mocks: MockFleet?
    /// The fleet indices this partition holds: whole source addresses, contiguous.
    private let range: Range<Int>
    /// Whether this partition counts the events that happen once per run (a campaign's launch):
    /// the first partition of the first shard, so that merged partitions and shards count them once.
    private let countsRunEvents: Bool
    private let progress: ProgressBoard?
    private let isWall: Bool
    /// Set: this partition runs the warm-up before a run, not the run (`WarmUpSettings`).
    private let warmUp: WarmUpSettings?
    /// After a warm-up (nil: none ran): what each install learnt, by fleet index, handed to the
    /// measured run's devices.
    private let memories: [Int: String]?
    /// Pushes a real service sent during the warm-up (`--push-listen`): kept for the run after
    /// it, whose devices show them as it starts.
    private var heldPushes: [ExternalPush]
    /// A warm-up's: where each device's warm-up stands (empty in a run proper).
    private var warmUpStates: [WarmUpState] = []
    /// A warm-up's pace per NAT address (by its place in the partition): the earliest its next
    /// install may start, and the gap between its installs, doubled by each 429.
    private var warmUpGates: [Int: (next: Instant, gap: TimeSpan)] = [:]
    /// The gap between one address's installs the warm-up starts with (zero: paced by the
    /// fleet's rate alone).
    private var warmUpGap = TimeSpan.zero

    private enum WarmUpState: UInt8 {
        /// Not an install from before the run: nothing to register.
        case none
        /// Its turn has not come (the warm-up ended first).
        case due
        /// Started; its last answer, if any, was a success.
        case going
        /// Started; its last answer was a failure (an error status, a timeout, no connection).
        case failing
    }
    /// The most pushes a warm-up keeps for the run; more are counted and dropped.
    static let maximumHeldPushes = 100_000

    private var queue = EventQueue<Item>()
    /// Answers between their request's send and their arrival, by slot: an answer is too large
    /// to travel in a queue item (every item would take its size), and a box for it was an
    /// allocation a request.
    private var completions = Slab<ExchangeCompletion>()
    /// What the partition reads of each device on every request, side by side: one cache line
    /// (four arrays were four lines apart, each a miss per event at a million devices).
    private struct DeviceSlot {
        let device: VirtualDevice
        let source: SourceAddress
        let group: Int32
        /// The last timeline interval in which the device sent something (-1: none yet).
        var lastActiveInterval: Int32
    }

    private var slots: [DeviceSlot] = []
    /// Each group's platform name, by group index.
    private let groupPlatforms: [String]
    /// Where this partition's devices stand in their groups across the fleet.
    private let positions: GroupPositions
    /// Local indices of each group's devices, in fleet order (for workloads other than lifecycle).
    private var groupMembers: [[Int32]] = []
    /// Open-model arrival streams for this partition's devices (`ArrivalStream`).
    private var arrivalStreams: [ArrivalStream] = []
    /// The requests waiting on each NAT address's devices (queued or in flight), by the address's
    /// place in this partition, and the most each may hold: its share of the process's ceiling
    /// (`Scenario.maximumWaiting`), in proportion to its devices. An arrival finding its address
    /// at the ceiling is shed; a device queueing past it drops its oldest (`shedOldest`). Counted
    /// per address, the unit a partition holds whole, so that the choice does not depend on the
    /// partition count.
    private var waitingByAddress: [Int32] = []
    private var waitingLimitByAddress: [Int32] = []
    /// What a device may queue itself before its address's oldest waiting requests go: the
    /// address's share, but by default (no `--max-waiting`) at least
    /// `MemoryEstimate.deviceQueueFloor` a device, the bound the run's estimate weighs.
    private var queueLimitByAddress: [Int32] = []
    /// Fleet devices per process for the ceiling's shares.
    private let processDevices: Int
    /// Closed-model devices, their think time and their own draws of it.
    private var closedLoop: [Int: (think: Distribution, random: SeededRandom)] = [:]
    private var pushGateway: TokenIndex
    private var metrics = RunMetrics()
    /// Items devices saw accepted that this partition's mocks never recorded.
    private var lost = 0
    /// Each receiving device's draws for push delivery (delay, reachability).
    private var deliveryRandom: [Int: SeededRandom] = [:]
    private var nextNotificationID: UInt64 = 0
    private var inFlight = 0
    /// Socket handshakes under way: their operation and intended start.
    private var opening: [SocketKey: (operation: String, sentAt: Instant)] = [:]
    private var openSockets = Set<SocketKey>()
    /// Sockets opening and closing, as `microseconds * 2 + (1 if closed)`: merged across
    /// partitions into the peak held at once, whatever the partition count.
    private var socketChanges: [Int64] = []
    /// The timeline interval each device last sent in (to count active devices per interval).
    private(set) var end: Instant
    private var interrupted = false
    private var finished: ((PartitionResult) -> Void)?
    /// Wall time: the instant the partition asked its transport to wake it at (nil: none asked).
    private var wakeAt: Instant?
    private var isDone = false
    private var eventsSinceProgressCheck = 0
    /// When this partition next hands its progress to the board (`reportProgress`).
    private var nextProgress = Instant.start
    private var nextProgressNanoseconds: UInt64 = 0
    /// The buffers a device's handling of an event fills, kept for the next event (see `work`).
    private var spareWork = VirtualDevice.Work()
    /// Simulated time: the time of the item being handled.
    private var now = Instant.start

    /// An open-model arrival reached later than this, in wall time, is a missed start.
    static let maximumStartLag = TimeSpan.seconds(1)

    /// The most requests (in flight, queued, waiting for a retry) an open-model arrival may find
    /// on its device and still be queued there; one more and it is shed. Bounds the memory an
    /// overload can take to about this many requests per device.
    static let maximumBacklog = 8

    init(
        number: Int, scenario: Scenario, fleet: Fleet, executor: any PartitionExecutor, transport: any RunTransport, mocks: MockFleet?,
        devices range: Range<Int>, positions: GroupPositions, processDevices: Int, countsRunEvents: Bool, progress: ProgressBoard?, warmUp: WarmUpSettings? = nil, memories: [Int: String]? = nil, heldPushes: [ExternalPush] = []
    ) {
        self.number = number
        self.scenario = scenario
        groupPlatforms = scenario.groups.map(\.platform)
        self.fleet = fleet
        self.executor = executor
        self.transport = transport
        self.mocks = mocks
        self.range = range
        self.positions = positions
        self.processDevices = processDevices
        pushGateway = TokenIndex(minimumCapacity: range.count)
        self.countsRunEvents = countsRunEvents
        self.progress = progress
        isWall = scenario.clock == .wall
        self.warmUp = warmUp
        self.memories = memories
        self.heldPushes = heldPushes
        end = Instant.start + (warmUp?.maxDuration ?? scenario.duration)
        metrics.timeline = Timeline(
            intervalMicroseconds: Timeline.interval(forRunMicroseconds: scenario.duration.microseconds),
            tickMicroseconds: Timeline.tick(forRunMicroseconds: scenario.duration.microseconds)
        )
    }

    // MARK: - Drivers

    /// Simulated time: runs the whole partition to its end, on the calling thread (its executor's).
    func runSimulated() -> PartitionResult {
        onLoop()
        start()
        while let (time, item) = nextItem() {
            now = time
            prefetchNextDevice()
            handle(item, at: time, lag: .zero)
        }
        return result()
    }

    /// Asks for the first lines of the device the next item is for, while this one is handled.
    /// In a large fleet the device was last touched long ago and is out of cache: its first touch
    /// (`slots[index].device`, retained by `handle`) was 4.6 % of a million devices' day. The
    /// device's index is the hint its items are queued with, read from the heap's first entry
    /// without touching the item. A prefetch only: what runs does not change.
    private func prefetchNextDevice() {
        guard let index = queue.nextHint, index >= 0 else { return }
        let object = UnsafeRawPointer(Unmanaged.passUnretained(slots[Int(index)].device).toOpaque())
        for line in 0..<6 { ps_prefetch(object + 64 * line) }
    }

    /// The next item to handle, or nil when the run is over: past the end with nothing in flight.
    private func nextItem() -> (Instant, Item)? {
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
        live.onArrival { [unowned self] arrival in arrive(arrival, live) }
        start()
        if progress != nil && warmUp == nil { queue.schedule(.progressTick, at: Instant.start + .seconds(1)) }
        tick(live)
    }

    /// Handles what is due, then sleeps until the next item or the end.
    private func tick(_ live: any LiveTransport) {
        onLoop()
        guard !isDone else { return }
        let now = transport.currentTime
        while let next = queue.nextTime, next <= now, next <= end || inFlight > 0 {
            guard let (time, item) = queue.popNext() else { break }
            handle(item, at: time, lag: time > end ? .zero : now - time)
            if isDone { return }
        }
        if (now >= end || isWarmedUp) && inFlight == 0 { return finish() }
        let wake = max(min(queue.nextTime ?? end, end), now)
        wakeAt = wake
        live.wake(at: wake) { [unowned self] in tick(live) }
    }

    /// An answer or socket event from the transport, on this thread, as it happens. What it
    /// schedules (a retry after a 503, the next request of a device's queue) may fall before the
    /// wake-up asked for: then a tick runs what is due and moves the wake-up to the next item,
    /// or the retry would wait for whatever came next (in a quiet warm-up, its end).
    private func arrive(_ arrival: Arrival, _ live: any LiveTransport) {
        onLoop()
        guard !isDone else { return }
        let time = transport.currentTime
        handle(item(for: arrival), at: time, lag: .zero)
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
    private func onLoop() { executor.checkIsolated() }

    /// The run ends at `time` for this partition: nothing new starts after it.
    private func stopStarting(at time: Instant) {
        interrupted = true
        // Once per process (a shard process counts its own stop).
        if number == 0 { metrics.increment("run.interrupted") }
        end = min(end, time)
    }

    private func finish() {
        guard !isDone else { return }
        isDone = true
        let result = result()
        finished?(result)
        finished = nil
    }

    /// Simulated transports hand over socket replies and service timers after each call.
    private func absorbArrived() {
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
    private func item(for arrival: Arrival) -> Item {
        switch arrival.payload {
        case .completion(let completion): .completion(arrival.device - range.lowerBound, slot: completions.insert(completion))
        case .socket(let event): .device(arrival.device - range.lowerBound, .socket(event))
        case .timer(let token): .transportTimer(token)
        case .push(let token, let data, let isDataOnly): .externalPush(token: token, data: data, isDataOnly: isDataOnly)
        }
    }

    /// A warm-up is over once nothing is left to do: every install's warm-up handled, no retry
    /// waiting, no request in flight.
    private var isWarmedUp: Bool { warmUp != nil && queue.isEmpty && inFlight == 0 }

    // MARK: - The run

    /// Makes the partition's devices, in fleet order, and hands each (with its local index and
    /// profile) to `made`.
    private func makeDevices(_ made: (Int, DeviceProfile, VirtualDevice) -> Void) {
        slots.reserveCapacity(range.count)
        let executor = executor.asUnownedSerialExecutor()
        for index in 0..<range.count {
            let profile = fleet.profile(at: range.lowerBound + index)
            let device = fleet.makeDevice(profile, on: executor)
            slots.append(DeviceSlot(device: device, source: profile.source, group: Int32(profile.groupIndex), lastActiveInterval: -1))
            made(index, profile, device)
        }
    }

    private func start() {
        if let warmUp { return startWarmUp(warmUp) }
        makeDevices { index, profile, device in
            // After a warm-up, an install it did not register learns nothing (""), and registers
            // as its SDK would rather than with what a built-in mock would know.
            if let memories, profile.isInstalledAtStart { device.assumeIsolated { $0.remember(warmUp: memories[range.lowerBound + index] ?? "") } }
            let (actions, known) = device.assumeIsolated { $0.start(now: .start) }
            if let known, let mocks, let host = mocks.index(of: profile.platform) { mocks.knowDevice(platform: host, known) }
            execute(actions, device: index, now: .start, isDraining: false)
        }
        for (index, campaign) in scenario.campaigns.enumerated() {
            queue.schedule(.campaign(index), at: Instant.start + campaign.at)
        }
        for push in heldPushes { queue.schedule(.externalPush(token: push.token, data: push.data, isDataOnly: push.isDataOnly), at: .start) }
        heldPushes = []
        startWaitingCeiling()
        startWorkloads()
    }

    /// The warm-up: the partition's installs from before the run, each at its turn of the fleet's
    /// pace (fleet index / rate, so partitions together keep `rate`), send what registered them.
    /// Each address no faster than its per-address pace (`WarmUpSettings.perAddressRate`, or the
    /// scenario's own per-address limit), which a 429 slows further (`warmUpAnswered`).
    private func startWarmUp(_ warmUp: WarmUpSettings) {
        warmUpStates = Array(repeating: .none, count: range.count)
        let perAddress = warmUp.perAddressRate ?? scenario.platforms.values.compactMap(\.perAddressRequestsPerSecond).min()
        if let perAddress { warmUpGap = .seconds(1 / perAddress) }
        var turns: [Int: Int] = [:]
        makeDevices { index, profile, _ in
            guard profile.isInstalledAtStart else { return }
            warmUpStates[index] = .due
            var seconds = Double(profile.index) / warmUp.rate
            if let perAddress {
                let place = addressPlace(of: index)
                let turn = turns[place, default: 0]
                turns[place] = turn + 1
                seconds = max(seconds, Double(turn) / perAddress)
            }
            let at = Instant.start + TimeSpan(microseconds: Int64((seconds * 1_000_000).rounded(.down)))
            if at <= end { queue.schedule(.warmUp(index), at: at) }
        }
    }

    /// A warm-up's answer: a 429 pauses the device's address for its `Retry-After` (1 s without
    /// one) and doubles the gap between its installs (once a pause), so the warm-up backs off a
    /// service's limiter instead of filling it.
    private func warmUpAnswered(_ completion: ExchangeCompletion, device index: Int, at time: Instant) {
        warmUpStates[index] = completion.isSuccess ? .going : .failing
        guard case .response(let response) = completion.outcome, response.status == 429 else { return }
        let pause = response.header("Retry-After").flatMap { RetryAfter.parse($0, unixNow: Int64(Date().timeIntervalSince1970)) } ?? .seconds(1)
        let place = addressPlace(of: index)
        let gate = warmUpGates[place] ?? (next: time, gap: warmUpGap)
        // One slow-down a pause: 429s to requests sent before it add none.
        let slows = time >= gate.next
        let gap = slows ? max(TimeSpan(microseconds: gate.gap.microseconds * 2), .milliseconds(100)) : gate.gap
        // The refused install's own retry goes after about the pause (its SDK's rule); the
        // address's next install a gap after that, not beside it.
        warmUpGates[place] = (next: max(gate.next, time + min(pause, .seconds(60)) + gap), gap: gap)
        if slows { metrics.increment("warmUp.slowedOn429") }
    }

    private func handle(_ item: Item, at time: Instant, lag: TimeSpan) {
        let isDraining = time > end
        reportProgress(at: time)
        // How late the generator starts what was due (wall time): the run's own saturation.
        if isWall && !isDraining {
            metrics.recordDuration("generatorLag", microseconds: UInt64(max(0, lag.microseconds)))
        }
        switch item {
        case .device(let index, let event):
            switch event {
            case .socket(let socketEvent):
                // Replies and closes still count after the end; they finish what was sent.
                recordSocket(socketEvent, device: index, at: time)
            case .lifecycle, .clientTimer:
                if isDraining { return }
            }
            work(index: index, at: time, isDraining: isDraining) { device, work in device.handleOnExecutor(event, now: time, into: &work) }
        case .completion(let index, let slot):
            // Answers still count after the end; they finish what was sent.
            let completion = completions.take(slot)!
            inFlight -= 1
            record(completion, at: time)
            if !warmUpStates.isEmpty { warmUpAnswered(completion, device: index, at: time) }
            let device = slots[index].device
            work(index: index, at: time, isDraining: isDraining) { device, work in device.handleOnExecutor(completion, now: time, into: &work) }
            if !isDraining, var closed = closedLoop[index], device.pendingRequestsOnExecutor() == 0 {
                // A closed-model user got every answer: think, then the next event.
                let think = closed.think.sampleSpan(using: &closed.random)
                closedLoop[index] = closed
                schedule(.lifecycle(.workloadEvent), device: index, at: time + think)
            }
        case .campaign(let index):
            guard !isDraining else { return }
            launch(scenario.campaigns[index], now: time)
        case .transportTimer(let token):
            guard !isDraining else { return }
            transport.timerFired(token, at: time)
        case .warmUp(let index):
            guard !isDraining else { return }
            let place = addressPlace(of: index)
            if let gate = warmUpGates[place] {
                // The address was answered 429: its installs wait for the pause and go at its pace.
                guard time >= gate.next else { return queue.schedule(.warmUp(index), at: gate.next) }
                warmUpGates[place] = (next: time + gate.gap, gap: gate.gap)
            }
            metrics.increment("warmUp.installs")
            warmUpStates[index] = .going
            let actions = slots[index].device.assumeIsolated { $0.warmUp(now: time) }
            execute(actions, device: index, now: time, isDraining: false)
        case .externalPush(let token, let data, let isDataOnly):
            if warmUp != nil {
                // The run proper's devices show it when they start.
                guard heldPushes.count < Self.maximumHeldPushes else { return metrics.increment("notifications.droppedDuringWarmUp") }
                heldPushes.append(ExternalPush(token: token, data: data, isDataOnly: isDataOnly))
                return metrics.increment("notifications.heldDuringWarmUp")
            }
            guard !isDraining else { return }
            metrics.increment("notifications.received")
            guard let index = pushGateway[token] else {
                // The token changed between the service's send and now.
                metrics.increment("notifications.undeliverable")
                return
            }
            nextNotificationID += 1
            var random = deliveryStream(of: index)
            let notification = PushNotification(
                id: nextNotificationID, campaign: data["campaign_id"] ?? "external", data: data, tapRate: nil, timeToOpen: nil,
                isDataOnly: isDataOnly, fate: random.next()
            )
            deliveryRandom[index] = random
            schedule(.lifecycle(.notificationDelivered(notification)), device: index, at: time)
        case .progressTick:
            if time + .seconds(1) <= end { queue.schedule(.progressTick, at: time + .seconds(1)) }
        case .arrival(let number):
            guard !isDraining else { return }
            let stream = arrivalStreams[number]
            let index = Int(groupMembers[stream.group][stream.due])
            scheduleNextArrival(number)
            // An arrival the generator reaches more than a second late did not start when it
            // should have: counted as missed, not sent late (as load testers drop iterations).
            if lag > Self.maximumStartLag {
                metrics.increment("workload.missedStarts")
                return
            }
            // An arrival waits in its device's queue behind earlier work, as an app's SDK queues
            // events while a request is in flight (its latency then counts from when it was due),
            // but only behind `maximumBacklog` requests: beyond that it is shed and counted, as
            // k6 drops an iteration when no virtual user is free. Under overload the offered load
            // piles up nowhere, and the report says how much of it never started. The choice
            // depends on that one device's own history, so partitions do not change it.
            if slots[index].device.pendingRequestsOnExecutor() >= Self.maximumBacklog {
                metrics.increment("workload.shed")
                return
            }
            // The process holds at most `Scenario.maximumWaiting` requests for its devices, each
            // address its share: beyond it, memory would grow with the overload.
            let address = addressPlace(of: index)
            if waitingByAddress[address] >= waitingLimitByAddress[address] {
                metrics.increment("workload.shed")
                metrics.increment("workload.shedAtWaitingCeiling")
                return
            }
            metrics.increment("workload.arrivals")
            work(index: index, at: time, isDraining: false) { device, work in device.handleOnExecutor(.lifecycle(.workloadEvent), now: time, into: &work) }
        }
    }

    /// Has a device handle an event and carries out what it asks, in buffers kept from one event
    /// to the next. Taken out while in use: anything that reaches a device again before they are
    /// back (nothing does today) finds none and makes its own.
    private func work(index: Int, at time: Instant, isDraining: Bool, _ handle: (VirtualDevice, inout VirtualDevice.Work) -> Void) {
        var work = VirtualDevice.Work()
        swap(&work, &spareWork)
        let device = slots[index].device
        handle(device, &work)
        let pendingChange = work.pendingChange
        work.takeActions { execute($0, device: index, now: time, isDraining: isDraining) }
        swap(&work, &spareWork)
        if !waitingByAddress.isEmpty {
            let address = addressPlace(of: index)
            waitingByAddress[address] += Int32(clamping: pendingChange)
            if waitingByAddress[address] > queueLimitByAddress[address] { shedOldest(of: index, address: address, at: time, isDraining: isDraining) }
        }
    }

    /// The address is over its share of the ceiling on waiting requests: the device that added
    /// to it drops its oldest waiting requests (not one in flight) until it is back, each counted
    /// as dropped (`waitingCeiling`). Memory stays within the run's estimate whatever a failing
    /// service or a scenario makes the devices keep.
    private func shedOldest(of index: Int, address: Int, at time: Instant, isDraining: Bool) {
        let device = slots[index].device
        while waitingByAddress[address] > queueLimitByAddress[address] {
            let before = device.pendingRequestsOnExecutor()
            guard let actions = device.assumeIsolated({ $0.dropOldestWaiting(reason: "waitingCeiling") }) else { return }
            execute(actions, device: index, now: time, isDraining: isDraining)
            waitingByAddress[address] += Int32(clamping: device.pendingRequestsOnExecutor() - before)
        }
    }

    /// Device `index`'s NAT address, as its place among this partition's addresses.
    private func addressPlace(of index: Int) -> Int {
        let perSource = max(1, scenario.network.devicesPerSourceAddress)
        return (range.lowerBound + index) / perSource - range.lowerBound / perSource
    }

    private func result() -> PartitionResult {
        // The timeline is fitted to the run's end once, after the partitions are merged (`Run`).
        transport.closeAllSockets()
        var pending = 0
        for slot in slots { pending += slot.device.pendingRequestsOnExecutor() }
        var learnt: [Int: String] = [:]
        if warmUp != nil {
            for (index, slot) in slots.enumerated() {
                if let memory = slot.device.assumeIsolated({ $0.warmUpMemory }) { learnt[range.lowerBound + index] = memory }
                // An install that did not register, and why: the run's devices start without
                // what it would have learnt, and register as their SDK does.
                switch warmUpStates[index] {
                case .none: break
                case .due: metrics.increment("warmUp.notRegistered.notReached")
                case _ where slot.device.pendingRequestsOnExecutor() > 0: metrics.increment("warmUp.notRegistered.waiting")
                case .failing: metrics.increment("warmUp.notRegistered.failed")
                case .going: break
                }
            }
        }
        // A warm-up over before its limit ends when it did.
        let end = isWarmedUp ? min(end, transport.currentTime) : end
        return PartitionResult(
            metrics: metrics, ledgers: mocks?.ledgers ?? [:], lost: lost, pending: pending, devices: range.count,
            socketChanges: socketChanges, end: end, number: number, memories: learnt, heldPushes: heldPushes
        )
    }

    /// Hands the board a copy of this partition's metrics once a second: in wall time when the
    /// run's own clock (the time of the item handled) passes the next second, in simulated time
    /// when the monotonic clock, read every 256 events, does. An event otherwise costs a compare.
    private func reportProgress(at time: Instant) {
        guard let progress else { return }
        if isWall {
            guard time >= nextProgress else { return }
            nextProgress = time + .seconds(1)
        } else {
            eventsSinceProgressCheck += 1
            guard eventsSinceProgressCheck >= 256 else { return }
            eventsSinceProgressCheck = 0
            let now = ProgressBoard.now
            guard now >= nextProgressNanoseconds else { return }
            nextProgressNanoseconds = now + ProgressBoard.interval
        }
        progress.publish(partition: number, elapsed: min(time, end) - .start, metrics: metrics)
    }

    /// Queues a device's event, but not a timer or lifecycle event due after the end: `handle`
    /// ignores those (past the end the run only drains answers), so queued they were only weight.
    /// A device's timers reach far (a token rotation a month away, a permission change a year
    /// away): at the start of a simulated day, two in three of the 2.6 items queued per device were
    /// such (nine in ten for two hours), and every push and pop of the queue walked a heap three
    /// times the size it needs, far out of cache at a million devices. Leaving them out changes
    /// no order: the items kept keep their order (time, then scheduling).
    private func schedule(_ event: VirtualDevice.Event, device index: Int, at time: Instant) {
        switch event {
        case .lifecycle, .clientTimer: if time > end { return }
        case .socket: break
        }
        queue.schedule(.device(index, event), at: time, hint: Int32(index))
    }

    private func execute(_ actions: [VirtualDevice.Action], device index: Int, now: Instant, isDraining: Bool) {
        for action in actions { execute(action, device: index, now: now, isDraining: isDraining) }
    }

    private func execute(_ action: VirtualDevice.Action, device index: Int, now: Instant, isDraining: Bool) {
        switch action {
        case .send(let outgoing):
            // After the end, requests are not started; they stay in the device's queue and are
            // reported as pending.
            guard !isDraining else { return }
            send(outgoing, device: index, now: now)
        case .schedule(let event, let time):
            guard !isDraining else { return }
            schedule(event, device: index, at: max(time, now))
        case .count(let name):
            metrics.increment(name)
        case .duration(let name, let span):
            metrics.recordDuration(name, microseconds: UInt64(max(0, span.microseconds)))
        case .drop(let reason):
            metrics.recordDrop(reason: reason)
        case .backoff(let delay, let retryNumber):
            metrics.recordBackoff(microseconds: UInt64(max(0, delay.microseconds)), retryNumber: retryNumber)
        case .confirmed(let key):
            if let mocks, !mocks.confirm(key, at: now) { lost += 1 }
        case .pushAddress(let old, let new):
            if let old, pushGateway[old] == index { pushGateway[old] = nil }
            pushGateway[new] = index
            transport.pushAddressChanged(old: old, new: new)
        case .openSocket(let open):
            guard !isDraining else { return }
            recordSent(operation: open.operation, retryNumber: 0, device: index, at: now)
            inFlight += 1
            opening[SocketKey(device: index, socket: open.id)] = (open.operation, now)
            transport.openSocket(open, device: range.lowerBound + index, platform: groupPlatforms[Int(slots[index].group)], source: slots[index].source, at: now)
        case .sendOnSocket(let socket, let text, let operation):
            guard !isDraining else { return }
            if let operation { recordSent(operation: operation, retryNumber: 0, device: index, at: now) }
            transport.sendOnSocket(socket, text: text, device: range.lowerBound + index, at: now)
        case .closeSocket(let socket):
            if openSockets.remove(SocketKey(device: index, socket: socket)) != nil {
                metrics.increment("sockets.closedByClient")
                socketChanges.append(now.microseconds * 2 + 1)
            }
            transport.closeSocket(socket, device: range.lowerBound + index, at: now)
        case .completed(let completion):
            record(completion, at: now)
        }
    }

    /// Each address's share of the process's ceiling on waiting requests, for every workload
    /// (`waitingByAddress`): arrivals beyond it are shed, and requests a device queues beyond it
    /// (retries kept for the next launch against a failing service) drop its oldest.
    private func startWaitingCeiling() {
        guard !slots.isEmpty else { return }
        let ceiling = scenario.maximumWaiting ?? MemoryEstimate.defaultMaximumWaiting(devices: processDevices)
        let perDevice = Double(ceiling) / Double(max(1, processDevices))
        let perSource = max(1, scenario.network.devicesPerSourceAddress)
        let addresses = addressPlace(of: range.count - 1) + 1
        waitingByAddress = Array(repeating: 0, count: addresses)
        let devicesAt = (0..<addresses).map { place in
            let first = (range.lowerBound / perSource + place) * perSource
            return min(first + perSource, range.upperBound) - max(first, range.lowerBound)
        }
        waitingLimitByAddress = devicesAt.map { Int32(clamping: max(1, Int((perDevice * Double($0)).rounded(.down)))) }
        let floor = scenario.maximumWaiting == nil ? MemoryEstimate.deviceQueueFloor : 0
        queueLimitByAddress = zip(waitingLimitByAddress, devicesAt).map { max($0, Int32(clamping: floor * $1)) }
        // What the devices' first events already queued.
        for index in slots.indices { waitingByAddress[addressPlace(of: index)] += Int32(clamping: slots[index].device.pendingRequestsOnExecutor()) }
    }

    /// Schedules each group's load shape: the arrival streams of an open model, the first event
    /// of each closed-model user.
    private func startWorkloads() {
        guard scenario.groups.contains(where: { $0.workload != .lifecycle }) else { return }
        groupMembers = Array(repeating: [], count: scenario.groups.count)
        for (index, slot) in slots.enumerated() { groupMembers[Int(slot.group)].append(Int32(index)) }
        for (number, group) in scenario.groups.enumerated() {
            let members = groupMembers[number]
            switch group.workload {
            case .lifecycle:
                break
            case .open(let workload):
                let clock = ArrivalClock(workload)
                let major = UInt16(number)
                guard !members.isEmpty else { continue }
                if !workload.isPoisson {
                    let pattern = ArrivalStream.Pattern.even(next: positions.before[number], members: positions.total[number], first: positions.before[number])
                    arrivalStreams.append(ArrivalStream(group: number, devices: 0..<members.count, rank: EventRank(major: major, minor: 0), clock: clock, pattern: pattern))
                    continue
                }
                // One stream per NAT address: its devices of the group are a run of `members`.
                var first = 0
                while first < members.count {
                    let address = slots[Int(members[first])].source
                    var last = first + 1
                    while last < members.count && slots[Int(members[last])].source == address { last += 1 }
                    let random = SeededRandom(seed: scenario.seed, stream: .arrivals, index: UInt64(number) << 32 | UInt64(address.index))
                    let scale = Double(positions.total[number]) / Double(last - first)
                    let pattern = ArrivalStream.Pattern.poisson(area: 0, scale: scale, random: random, turn: 0)
                    arrivalStreams.append(ArrivalStream(group: number, devices: first..<last, rank: EventRank(major: major, minor: address.index), clock: clock, pattern: pattern))
                    first = last
                }
            case .closed(let workload):
                // The group's first `concurrency` devices of the fleet are its users.
                for local in members.prefix(max(0, workload.concurrency - positions.before[number])) {
                    let index = Int(local)
                    let global = range.lowerBound + index
                    var random = SeededRandom(seed: scenario.seed, stream: .workload, index: UInt64(global))
                    // Users start spread over the first think time, not all in one microsecond.
                    let offset = workload.thinkTime.sampleSpan(using: &random)
                    closedLoop[index] = (workload.thinkTime, random)
                    schedule(.lifecycle(.workloadEvent), device: index, at: Instant.start + workload.start + TimeSpan(microseconds: offset.microseconds / 2))
                }
            }
        }
        for number in arrivalStreams.indices { scheduleNextArrival(number) }
    }

    /// Queues stream `number`'s next arrival, at its exact instant rounded to the microsecond,
    /// unless it falls after the end.
    private func scheduleNextArrival(_ number: Int) {
        guard let seconds = arrivalStreams[number].advance() else { return }
        let microseconds = (seconds * 1_000_000).rounded()
        guard microseconds <= Double(end.microseconds) else { return }
        let at = Instant(microseconds: Int64(microseconds))
        let stream = arrivalStreams[number]
        queue.schedule(.arrival(stream: number), at: at, rank: stream.rank, hint: groupMembers[stream.group][stream.due])
    }

    private func recordSent(operation: String, retryNumber: Int, device index: Int, at now: Instant) {
        let microseconds = (now - .start).microseconds
        metrics.recordSent(operation: operation, retryNumber: retryNumber, at: microseconds)
        let interval = metrics.timeline.index(at: microseconds)
        if slots[index].lastActiveInterval != Int32(interval) {
            slots[index].lastActiveInterval = Int32(interval)
            metrics.timeline.recordDeviceActive(interval: interval)
        }
    }

    private func send(_ outgoing: OutgoingRequest, device index: Int, now: Instant) {
        recordSent(operation: outgoing.operation, retryNumber: outgoing.retryNumber, device: index, at: now)
        inFlight += 1
        let slot = slots[index]
        if let (completion, at) = transport.send(outgoing, device: range.lowerBound + index, platform: groupPlatforms[Int(slot.group)], source: slot.source, at: now) {
            queue.schedule(.completion(index, slot: completions.insert(completion)), at: at, hint: Int32(index))
        }
    }

    private func record(_ completion: ExchangeCompletion, at now: Instant) {
        let at = (now - .start).microseconds
        switch completion.outcome {
        case .response(let response):
            metrics.recordResponse(
                operation: completion.operation, status: response.status,
                latencyMicroseconds: UInt64(max(0, (now - completion.sentAt).microseconds)),
                serviceMicroseconds: completion.timings.map { UInt64(max(0, $0.service.microseconds)) },
                connectMicroseconds: completion.timings?.connect.map { UInt64(max(0, $0.microseconds)) },
                // Time to first byte is a socket's measure; simulated time has none.
                firstByteMicroseconds: isWall ? completion.timings.map { UInt64(max(0, $0.firstByte.microseconds)) } : nil,
                at: at
            )
        case .transportError(let reason):
            metrics.recordTransportError(operation: completion.operation, reason: reason, at: at)
        case .timeout:
            metrics.recordTimeout(operation: completion.operation, at: at)
        }
    }

    /// Accounts for a socket's handshake ending, and counts sockets open at once.
    private func recordSocket(_ event: SocketEvent, device index: Int, at now: Instant) {
        let key = SocketKey(device: index, socket: event.socket)
        switch event {
        case .opened:
            guard let (operation, sentAt) = opening.removeValue(forKey: key) else { return }
            inFlight -= 1
            // A handshake's answer is 101 Switching Protocols.
            record(ExchangeCompletion(requestID: event.socket, operation: operation, sentAt: sentAt, outcome: .response(Response(status: 101))), at: now)
            openSockets.insert(key)
            metrics.increment("sockets.opened")
            socketChanges.append(now.microseconds * 2)
        case .failed(_, let outcome):
            guard let (operation, sentAt) = opening.removeValue(forKey: key) else { return }
            inFlight -= 1
            record(ExchangeCompletion(requestID: event.socket, operation: operation, sentAt: sentAt, outcome: outcome), at: now)
        case .closed:
            if openSockets.remove(key) != nil {
                metrics.increment("sockets.closedByPeer")
                socketChanges.append(now.microseconds * 2 + 1)
            }
        case .message:
            break
        }
    }

    /// Device `index`'s push-delivery draws, where the last push to it left them (store the
    /// stream back after drawing).
    private func deliveryStream(of index: Int) -> SeededRandom {
        deliveryRandom[index] ?? SeededRandom(seed: scenario.seed, stream: .pushDelivery, index: UInt64(range.lowerBound + index))
    }

    private func launch(_ campaign: Campaign, now: Instant) {
        let source: MockFleet
        let host: Int
        let isLocal: Bool
        if let mocks, let index = mocks.index(of: campaign.platform) {
            (source, host, isLocal) = (mocks, index, false)
        } else {
            // Against a real target PushSwarm stands in for the push provider (FCM, APNs): the
            // platform's own campaign logic, run on what the devices are now (token, user,
            // permission), makes each push and its payload (tracking tokens, message ids, links),
            // and the devices display, tap and report it to the target as against the mock.
            let local = MockFleet(scenario: scenario, partition: number)
            guard let index = local.index(of: campaign.platform) else { return }
            for slot in slots where groupPlatforms[Int(slot.group)] == campaign.platform {
                if let known = slot.device.assumeIsolated({ $0.knownDevice() }) { local.knowDevice(platform: index, known) }
            }
            (source, host, isLocal) = (local, index, true)
        }
        let (messages, sessionMessages) = source.launchCampaign(platform: host, campaign, at: now)
        // One event for the whole run: counted once, however many partitions and shards.
        if countsRunEvents {
            metrics.increment(isLocal ? "campaigns.launchedLocally" : "campaigns.launched")
            metrics.mark("campaign \(campaign.name)", at: (now - .start).microseconds)
        }
        if isLocal {
            // Messages a service sends on its own sockets (Smartico's popups) are the real
            // service's to send: counted, not made up.
            if !sessionMessages.isEmpty { metrics.increment("campaigns.socketMessagesLeftToTheService", by: UInt64(sessionMessages.count)) }
            metrics.increment("notifications.deliveredLocally", by: UInt64(messages.count))
        } else if !sessionMessages.isEmpty {
            metrics.increment("campaigns.socketMessages", by: UInt64(sessionMessages.count))
            transport.deliverFromService(sessionMessages, platform: host, at: now)
        }
        for message in messages {
            metrics.increment("notifications.sent")
            guard let index = pushGateway[message.pushToken] else {
                // The token is stale (rotated, never reported): the provider cannot deliver.
                metrics.increment("notifications.undeliverable")
                continue
            }
            nextNotificationID += 1
            var random = deliveryStream(of: index)
            defer { deliveryRandom[index] = random }
            let notification = PushNotification(
                id: nextNotificationID, campaign: campaign.name, data: message.data,
                tapRate: campaign.tapRate, timeToOpen: campaign.timeToOpen, isDataOnly: message.isDataOnly,
                fate: random.next()
            )
            var delay = campaign.deliveryDelay.sampleSpan(using: &random)
            let behaviour = scenario.groups[Int(slots[index].group)].behaviour
            if random.chance(behaviour.unreachableShare) {
                // Not connected to the provider: held until the device is back, within the push's time to live.
                let offline = behaviour.offlineDuration.sampleSpan(using: &random)
                guard offline <= campaign.timeToLive else {
                    metrics.increment("notifications.expired")
                    continue
                }
                metrics.increment("notifications.heldWhileUnreachable")
                delay = delay + offline
            }
            schedule(.lifecycle(.notificationDelivered(notification)), device: index, at: now + delay)
        }
    }
}

/// What one partition produced, merged by `Run` into the run's result.
struct PartitionResult: Sendable {
    var metrics: RunMetrics
    var ledgers: [String: Ledger]
    var lost: Int
    var pending: Int
    var devices: Int
    var socketChanges: [Int64]
    var end: Instant
    var number = 0
    /// A warm-up's: what each install learnt, by fleet index, and the pushes it kept for the run.
    var memories: [Int: String] = [:]
    var heldPushes: [ExternalPush] = []
}

/// A push a real service sent for a token (`--push-listen`).
public struct ExternalPush: Sendable {
    public var token: String
    public var data: [String: String]
    public var isDataOnly: Bool
}

/// Where partitions leave their progress. Each partition hands the board a copy of its metrics
/// about once a second (`Partition.reportProgress`): nothing on the path of an event takes the
/// board's lock. The board keeps the latest copy of each, and about once a second of wall time the
/// partition whose copy finds a report due merges them, outside the lock, and hands the whole to
/// the run's `onProgress` (one call at a time).
final class ProgressBoard: Sendable {
    private struct State {
        var latest: [(elapsed: TimeSpan, metrics: RunMetrics)?]
        var nextReport: UInt64 = 0
    }

    private let state: Mutex<State>
    /// Held while a report is merged and handed over: reports come one at a time.
    private let reporting = Mutex<Void>(())
    private let duration: TimeSpan
    private let devices: Int
    private let report: @Sendable (RunProgress) -> Void

    /// How often partitions publish and the board reports, in nanoseconds of the monotonic clock.
    static let interval: UInt64 = 1_000_000_000

    init(partitions: Int, duration: TimeSpan, devices: Int, report: @escaping @Sendable (RunProgress) -> Void) {
        state = Mutex(State(latest: Array(repeating: nil, count: partitions)))
        self.duration = duration
        self.devices = devices
        self.report = report
    }

    /// The monotonic clock partitions and the board pace themselves by.
    static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Partition `partition`'s latest progress, from its own thread, about once a second.
    func publish(partition: Int, elapsed: TimeSpan, metrics: RunMetrics) {
        let now = Self.now
        let due: [(elapsed: TimeSpan, metrics: RunMetrics)?]? = state.withLock { state in
            state.latest[partition] = (elapsed, metrics)
            guard now >= state.nextReport else { return nil }
            state.nextReport = now + Self.interval
            return state.latest
        }
        guard let due else { return }
        reporting.withLock { _ in
            var merged = RunMetrics()
            var elapsed = TimeSpan.zero
            for case let slot? in due {
                merged.merge(slot.metrics)
                elapsed = max(elapsed, slot.elapsed)
            }
            report(RunProgress(elapsed: elapsed, duration: duration, metrics: merged, devices: devices))
        }
    }
}
