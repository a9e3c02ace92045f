import Foundation
import PushSwarmMetrics
import PushSwarmSystem
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
/// Its parts are in files of their own: how it runs (`Partition+Loop`), the warm-up, the
/// workloads, what it records, campaigns; the waiting ceiling (`WaitingCeiling`) and socket
/// accounting (`SocketAccounting`) are value types with their own tests.
///
/// - Important: every method runs on `executor`'s thread, and each way in from the loop (the
///   simulated run, the wall run's start, its ticks, arrivals and interrupt) checks that it does,
///   in release builds too (`onLoop`, the executor's `checkIsolated`): the state needs no lock
///   because nothing reaches it from another thread, and a caller that would is stopped there.
///   Devices are actors on that executor, so the partition calls them synchronously
///   (`handleOnExecutor`, `assumeIsolated`: checked the same way).
final class Partition: @unchecked Sendable {
    enum Item {
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
        /// The turn of the address at `place` to send its next warm-up request held in
        /// `heldSends[place]`.
        case warmUpTurn(place: Int)
        /// One of the transport's connections opened or closed (`Arrival.Payload.connection`).
        case connection(ConnectionEvent)
    }

    let number: Int
    let scenario: Scenario
    private let fleet: Fleet
    let executor: any PartitionExecutor
    let transport: any RunTransport
    /// This partition's share of the built-in mocks (nil against a real target).
    let mocks: MockFleet?
    /// The fleet indices this partition holds: whole source addresses, contiguous.
    let range: Range<Int>
    /// Whether this partition counts the events that happen once per run (a campaign's launch):
    /// the first partition of the first shard, so that merged partitions and shards count them once.
    let countsRunEvents: Bool
    let progress: ProgressBoard?
    let isWall: Bool
    /// Set: this partition runs the warm-up before a run, not the run (`WarmUpSettings`).
    let warmUp: WarmUpSettings?
    /// After a warm-up (nil: none ran): what each install learnt, by fleet index, handed to the
    /// measured run's devices.
    private let memories: [Int: String]?
    /// Pushes a real service sent during the warm-up (`--push-listen`): kept for the run after
    /// it, whose devices show them as it starts.
    private var heldPushes: [ExternalPush]
    /// A warm-up's: where each device's warm-up stands (empty in a run proper).
    var warmUpStates: [WarmUpState] = []
    /// A warm-up's pace per NAT address (by its place in the partition).
    var warmUpGates: [Int: WarmUpGate] = [:]
    /// The gap between one address's requests the warm-up starts with (zero: paced by the fleet's
    /// install rate alone).
    var warmUpGap = TimeSpan.zero
    /// Warm-up requests waiting for their address's turn (`Item.warmUpTurn`), in order, by
    /// address place: at most about one install's requests, as installs wait for a free address.
    var heldSends: [Int: [(device: Int, request: OutgoingRequest)]] = [:]

    enum WarmUpState: UInt8 {
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

    var queue = EventQueue<Item>()
    /// Answers between their request's send and their arrival, by slot: an answer is too large
    /// to travel in a queue item (every item would take its size), and a box for it was an
    /// allocation a request.
    var completions = Slab<ExchangeCompletion>()
    /// What the partition reads of each device on every request, side by side: one cache line
    /// (four arrays were four lines apart, each a miss per event at a million devices).
    struct DeviceSlot {
        let device: VirtualDevice
        let source: SourceAddress
        let group: Int32
        /// The last timeline interval in which the device sent something (-1: none yet).
        var lastActiveInterval: Int32
    }

    var slots: [DeviceSlot] = []
    /// Wall time, between `prepare` and `start`: a warm-up's, the profiles of the devices made
    /// in `slots`; a run's, what the devices' starts asked of the transport, by device index.
    var preparedProfiles: [DeviceProfile]?
    var preparedStart: [(device: Int, actions: [DeviceAction])]?
    /// Each group's platform name, by group index.
    let groupPlatforms: [String]
    /// Where this partition's devices stand in their groups across the fleet.
    let positions: GroupPositions
    /// Local indices of each group's devices, in fleet order (for workloads other than lifecycle).
    var groupMembers: [[Int32]] = []
    /// Open-model arrival streams for this partition's devices (`ArrivalStream`).
    var arrivalStreams: [ArrivalStream] = []
    /// The process's ceiling on waiting requests, as this partition's addresses hold it.
    var ceiling: WaitingCeiling
    /// Closed-model devices, their think time and their own draws of it.
    var closedLoop: [Int: (think: Distribution, random: SeededRandom)] = [:]
    var pushGateway: TokenIndex
    var metrics = RunMetrics()
    /// Items devices saw accepted that this partition's mocks never recorded.
    private var lost = 0
    /// Each receiving device's draws for push delivery (delay, reachability).
    var deliveryRandom: [Int: SeededRandom] = [:]
    var nextNotificationID: UInt64 = 0
    var inFlight = 0
    var sockets = SocketAccounting()
    /// Where the run ends for this partition: the scenario's duration, or the warm-up's limit, or
    /// earlier when it is interrupted (`stopStarting`).
    var end: Instant
    var interrupted = false
    var finished: ((PartitionResult) -> Void)?
    /// Wall time: the instant the partition asked its transport to wake it at (nil: none asked).
    var wakeAt: Instant?
    var isDone = false
    private var eventsSinceProgressCheck = 0
    /// When this partition next hands its progress to the board (`reportProgress`).
    private var nextProgress = Instant.start
    private var nextProgressNanoseconds: UInt64 = 0
    /// The buffers a device's handling of an event fills, kept for the next event (see `work`).
    private var spareWork = VirtualDevice.Work()
    /// Simulated time: the time of the item being handled.
    var now = Instant.start

    /// An open-model arrival reached later than this, in wall time, is a missed start.
    static let maximumStartLag = TimeSpan.seconds(1)

    /// The most requests (in flight, queued, waiting for a retry) an open-model arrival may find
    /// on its device and still be queued there; one more and it is shed. Bounds the memory an
    /// overload can take to about this many requests per device.
    static let maximumBacklog = 8

    init(
        number: Int, scenario: Scenario, fleet: Fleet, executor: any PartitionExecutor, transport: any RunTransport, mocks: MockFleet?,
        devices range: Range<Int>, positions: GroupPositions, processDevices: Range<Int>, countsRunEvents: Bool, progress: ProgressBoard?, warmUp: WarmUpSettings? = nil, memories: [Int: String]? = nil, heldPushes: [ExternalPush] = []
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
        ceiling = WaitingCeiling(
            maximumWaiting: scenario.maximumWaiting, devicesPerSourceAddress: scenario.network.devicesPerSourceAddress, devices: range, process: processDevices
        )
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

    // MARK: - The run

    /// Device `index`'s NAT address, as its place among this partition's addresses (as the
    /// waiting ceiling numbers them; the warm-up paces by them too).
    func addressPlace(of index: Int) -> Int { ceiling.place(of: index) }

    /// Makes the devices and starts each at instant zero; `started` gets what it asked for.
    private func startDevices(_ started: (Int, [DeviceAction]) -> Void) {
        makeDevices { index, profile, device in
            // After a warm-up, an install it did not register learns nothing (""), and registers
            // as its SDK would rather than with what a built-in mock would know.
            if let memories, profile.isInstalledAtStart { device.assumeIsolated { $0.remember(warmUp: memories[range.lowerBound + index] ?? "") } }
            let (actions, known) = device.assumeIsolated { $0.start(now: .start) }
            if let known, let mocks, let host = mocks.index(of: profile.platform) { mocks.knowDevice(platform: host, known) }
            started(index, actions)
        }
    }

    /// Makes the partition's devices, in fleet order, and hands each (with its local index and
    /// profile) to `made`; devices `prepare` made are handed over as they are.
    func makeDevices(_ made: (Int, DeviceProfile, VirtualDevice) -> Void) {
        if let profiles = preparedProfiles {
            preparedProfiles = nil
            for index in slots.indices { made(index, profiles[index], slots[index].device) }
            return
        }
        slots.reserveCapacity(range.count)
        for index in 0..<range.count {
            let profile = fleet.profile(at: range.lowerBound + index)
            let device = fleet.makeDevice(profile, on: executor)
            slots.append(DeviceSlot(device: device, source: profile.source, group: Int32(profile.groupIndex), lastActiveInterval: -1))
            made(index, profile, device)
        }
    }

    /// Wall time: makes and starts the devices before the run's clock starts (`Run.beforeStart`),
    /// so that the first second measures the service rather than the run's own setting up: the
    /// making and starting of every device actor, the arrival streams, the waiting ceiling's
    /// first count (tens of milliseconds for 10,000 devices, during which the first arrivals
    /// would wait). What the devices' starts asked for that reads no clock (timers, counts, push
    /// tokens: `DeviceAction.isBookkeeping`) is done here; what reaches the service (a request,
    /// a socket) waits for `start`, at instant zero. A warm-up's devices are only made (`startWarmUp` starts them its own way).
    /// Returns how many devices the partition holds.
    @discardableResult
    func prepare() -> Int {
        onLoop()
        guard slots.isEmpty else { return slots.count }
        if warmUp != nil {
            var profiles: [DeviceProfile] = []
            profiles.reserveCapacity(range.count)
            makeDevices { _, profile, _ in profiles.append(profile) }
            preparedProfiles = profiles
            return slots.count
        }
        var waiting: [(device: Int, actions: [DeviceAction])] = []
        startDevices { index, actions in
            var later: [DeviceAction] = []
            for action in actions {
                if action.isBookkeeping {
                    execute(action, device: index, now: .start, isDraining: false)
                } else {
                    later.append(action)
                }
            }
            if !later.isEmpty { waiting.append((index, later)) }
        }
        startWaitingCeiling()
        startWorkloads()
        preparedStart = waiting
        return slots.count
    }

    func start() {
        if let warmUp { return startWarmUp(warmUp) }
        let prepared = preparedStart
        preparedStart = nil
        if let prepared {
            for (index, actions) in prepared { execute(actions, device: index, now: .start, isDraining: false) }
        } else {
            startDevices { index, actions in execute(actions, device: index, now: .start, isDraining: false) }
        }
        for (index, campaign) in scenario.campaigns.enumerated() {
            queue.schedule(.campaign(index), at: Instant.start + campaign.at)
        }
        for push in heldPushes { queue.schedule(.externalPush(token: push.token, data: push.data, isDataOnly: push.isDataOnly), at: .start) }
        heldPushes = []
        guard prepared == nil else { return }
        startWaitingCeiling()
        startWorkloads()
    }

    /// `lag`: how late the loop reached an item it had scheduled (wall time); nil for what was
    /// not scheduled (an answer or a socket event, handled as it arrives) and in simulated time.
    /// Those once counted as lag 0, half the samples of a request-heavy run, and a loop stalled
    /// 50 ms every second showed a p99 a quarter lower than it was.
    func handle(_ item: Item, at time: Instant, lag: TimeSpan?) {
        let isDraining = time > end
        reportProgress(at: time)
        // How late the generator starts what was due (wall time): the run's own saturation.
        if let lag, !isDraining {
            metrics.recordDuration(.generatorLag, microseconds: UInt64(max(0, lag.microseconds)))
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
        case .connection(let event):
            // Counted after the end too: a connection that closes then still closed.
            switch event {
            case .opened(let tls):
                metrics.recordConnectionOpened(at: (time - .start).microseconds)
                if let tls { metrics.increment(tls.counter) }
            case .closed(let reason): metrics.recordConnectionClosed(counter: reason.counter, at: (time - .start).microseconds)
            case .handshakeFailed, .handshakeTimedOut, .refused, .speaksHTTP2, .goAway, .streamReset, .unprocessedRetried: metrics.increment(event.counter)
            }
        case .campaign(let index):
            guard !isDraining else { return }
            launch(scenario.campaigns[index], now: time)
        case .transportTimer(let token):
            guard !isDraining else { return }
            transport.timerFired(token, at: time)
        case .warmUp(let index):
            guard !isDraining else { return }
            // The address's requests are behind (paced, or paused by a 429): the install starts
            // when its address is free, so that what waits is one install's requests at most.
            if let gate = warmUpGates[addressPlace(of: index)], gate.next > time {
                return queue.schedule(.warmUp(index), at: gate.next)
            }
            metrics.increment(.warmUpInstalls)
            warmUpStates[index] = .going
            let actions = slots[index].device.assumeIsolated { $0.warmUp(now: time) }
            execute(actions, device: index, now: time, isDraining: false)
        case .warmUpTurn(let place):
            // Past the warm-up's end nothing more is sent: the devices still hold their held
            // requests, reported pending.
            guard !isDraining else { return }
            sendHeldWarmUpRequest(place: place, at: time)
        case .externalPush(let token, let data, let isDataOnly):
            if warmUp != nil {
                // The run proper's devices show it when they start.
                guard heldPushes.count < Self.maximumHeldPushes else { return metrics.increment(.notificationsDroppedDuringWarmUp) }
                heldPushes.append(ExternalPush(token: token, data: data, isDataOnly: isDataOnly))
                return metrics.increment(.notificationsHeldDuringWarmUp)
            }
            guard !isDraining else { return }
            metrics.increment(.notificationsReceived)
            guard let index = pushGateway[token] else {
                // The token changed between the service's send and now.
                metrics.increment(.notificationsUndeliverable)
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
            if let lag, lag > Self.maximumStartLag {
                metrics.increment(.workloadMissedStarts)
                return
            }
            // An arrival waits in its device's queue behind earlier work, as an app's SDK queues
            // events while a request is in flight (its latency then counts from when it was due),
            // but only behind `maximumBacklog` requests: beyond that it is shed and counted, as
            // k6 drops an iteration when no virtual user is free. Under overload the offered load
            // piles up nowhere, and the report says how much of it never started. The choice
            // depends on that one device's own history, so partitions do not change it.
            // The process holds at most `Scenario.maximumWaiting` requests for its devices, each
            // address its share: beyond it, memory would grow with the overload. Both checks and
            // the event are one entry into the device.
            var work = VirtualDevice.Work()
            swap(&work, &spareWork)
            let arrival = slots[index].device.arriveOnExecutor(
                maximumBacklog: Self.maximumBacklog, atWaitingCeiling: ceiling.isAtShare(device: index), now: time, into: &work
            )
            if arrival == .handled {
                carryOut(&work, device: index, at: time, isDraining: false)
            } else {
                swap(&work, &spareWork)
            }
            switch arrival {
            case .handled:
                metrics.increment(.workloadArrivals)
            case .shedAtBacklog:
                metrics.increment(.workloadShed)
            case .shedAtWaitingCeiling:
                metrics.increment(.workloadShed)
                metrics.increment(.workloadShedAtWaitingCeiling)
            }
        }
    }

    /// Has a device handle an event and carries out what it asks, in buffers kept from one event
    /// to the next. Taken out while in use: anything that reaches a device again before they are
    /// back (nothing does today) finds none and makes its own.
    private func work(index: Int, at time: Instant, isDraining: Bool, _ handle: (VirtualDevice, inout VirtualDevice.Work) -> Void) {
        var work = VirtualDevice.Work()
        swap(&work, &spareWork)
        handle(slots[index].device, &work)
        carryOut(&work, device: index, at: time, isDraining: isDraining)
    }

    /// Carries out what a device's event left in `work` (its actions, in order; its change in
    /// waiting requests against the ceiling) and gives the buffers back for the next event.
    private func carryOut(_ work: inout VirtualDevice.Work, device index: Int, at time: Instant, isDraining: Bool) {
        let pendingChange = work.pendingChange
        work.takeActions { execute($0, device: index, now: time, isDraining: isDraining) }
        swap(&work, &spareWork)
        if ceiling.isCounting, ceiling.add(pendingChange, device: index) { shedOldest(of: index, at: time, isDraining: isDraining) }
    }

    func result() -> PartitionResult {
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
                case .due: metrics.increment(.warmUpNotRegisteredNotReached)
                case _ where slot.device.pendingRequestsOnExecutor() > 0: metrics.increment(.warmUpNotRegisteredWaiting)
                case .failing: metrics.increment(.warmUpNotRegisteredFailed)
                case .going: break
                }
            }
        }
        // A warm-up over before its limit ends when it did.
        let end = isWarmedUp ? min(end, transport.currentTime) : end
        return PartitionResult(
            metrics: metrics, ledgers: mocks?.ledgers ?? [:], lost: lost, pending: pending, devices: range.count,
            socketChanges: sockets.changes, end: end, number: number, memories: learnt, heldPushes: heldPushes
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
    func schedule(_ event: VirtualDevice.Event, device index: Int, at time: Instant) {
        switch event {
        case .lifecycle, .clientTimer: if time > end { return }
        case .socket: break
        }
        queue.schedule(.device(index, event), at: time, hint: Int32(index))
    }

    func execute(_ actions: [DeviceAction], device index: Int, now: Instant, isDraining: Bool) {
        for action in actions { execute(action, device: index, now: now, isDraining: isDraining) }
    }

    private func execute(_ action: DeviceAction, device index: Int, now: Instant, isDraining: Bool) {
        switch action {
        case .send(let outgoing):
            // After the end, requests are not started; they stay in the device's queue and are
            // reported as pending.
            guard !isDraining else { return }
            send(outgoing, device: index, now: now)
        case .schedule(let token, let time):
            guard !isDraining else { return }
            schedule(.clientTimer(token), device: index, at: max(time, now))
        case .scheduleLifecycle(let event, let time):
            guard !isDraining else { return }
            schedule(.lifecycle(event), device: index, at: max(time, now))
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
            sockets.handshakeStarted(SocketKey(device: index, socket: open.id), operation: open.operation, at: now)
            transport.openSocket(open, device: range.lowerBound + index, platform: groupPlatforms[Int(slots[index].group)], source: slots[index].source, at: now)
        case .sendOnSocket(let socket, let text, let operation):
            guard !isDraining else { return }
            if let operation { recordSent(operation: operation, retryNumber: 0, device: index, at: now) }
            transport.sendOnSocket(socket, text: text, device: range.lowerBound + index, at: now)
        case .closeSocket(let socket):
            if sockets.closed(SocketKey(device: index, socket: socket), at: now) { metrics.increment(.socketsClosedByClient) }
            transport.closeSocket(socket, device: range.lowerBound + index, at: now)
        case .completed(let completion):
            record(completion, at: now)
        case .closeConnections(let reason, let role):
            transport.closeConnections(of: InstallProcess(device: range.lowerBound + index, role: role), reason: reason, at: now)
        }
    }

}
