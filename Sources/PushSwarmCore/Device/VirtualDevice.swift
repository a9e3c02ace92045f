public import PushSwarmSystem

/// One virtual app install: an actor around its lifecycle state machine and its platform client.
///
/// - Important: the actor serialises everything that touches one device (timers, responses,
///   pushes); it never waits. Idle devices cost no task: their timers wait in the run's scheduler,
///   which calls `handle` when one is due. Its executor is its partition's thread (an event loop
///   in wall time), so the partition, already on that thread, calls it synchronously
///   (`handleOnExecutor`, `assumeIsolated`, checked in every build): no hop, no task per event.
public actor VirtualDevice {
    /// What can reach a device.
    public enum Event: Sendable {
        case lifecycle(DeviceLifecycle.Event)
        case clientTimer(UInt64)
        // Boxed (`indirect`): rare next to timers and lifecycle events, and every item in the
        // run's queue would otherwise take its size. (An answer to a request is not an event:
        // it waits in its partition's table and reaches the device by `handle(_:now:into:)`
        // with an `ExchangeCompletion`, without a box.)
        indirect case socket(SocketEvent)
    }

    /// What handling one event makes a device do, in buffers its partition keeps and reuses
    /// from one event to the next (emptied, keeping their capacity): handling an event allocates
    /// no array.
    public struct Work: Sendable {
        /// What the device asks, its lifecycle's and its client's in order: clients append here.
        public fileprivate(set) var actions: [DeviceAction] = []
        fileprivate var outputs: [DeviceLifecycle.Output] = []
        /// How many more requests the device holds (queued, in flight, waiting for a retry)
        /// after the event than before: what its address's count of waiting requests moves by.
        public fileprivate(set) var pendingChange = 0

        public init() {}

        /// Hands each action to `body` in order, moved out of the buffer rather than copied (a copy
        /// retains every reference in it, and emptying the buffer releases them again), and leaves
        /// the buffer empty with its capacity.
        public mutating func takeActions(_ body: (DeviceAction) -> Void) {
            // Reversed through a span, whose swaps move (`Array.reverse` went through its generic
            // collection code for every event's two or three actions).
            var span = actions.mutableSpan
            var low = 0, high = span.count - 1
            while low < high {
                span.swapAt(low, high)
                low += 1
                high -= 1
            }
            while let action = actions.popLast() { body(action) }
        }

        /// Empties the buffers, keeping their capacity. Popped one by one: each element is then
        /// destroyed by code made for its type, where `removeAll(keepingCapacity:)` went through
        /// the runtime's generic `swift_arrayDestroy` (Benchmarks/README.md, "Measured choices").
        fileprivate mutating func clear() {
            while actions.popLast() != nil {}
            while outputs.popLast() != nil {}
            pendingChange = 0
        }
    }

    private var lifecycle: DeviceLifecycle
    private var client: any PlatformClient
    private var random: SeededRandom
    private let calendar: RunCalendar
    private let executor: ActorExecutor

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.unowned }

    public init(lifecycle: DeviceLifecycle, client: any PlatformClient, random: SeededRandom, calendar: RunCalendar, executor: any PartitionExecutor) {
        self.executor = ActorExecutor(executor)
        self.lifecycle = lifecycle
        self.client = client
        self.random = random
        self.calendar = calendar
    }

    public var profile: DeviceProfile { lifecycle.profile }
    /// Read through an `inout` access to the client: a plain read of the stored existential
    /// copied the whole client first (every reference in it retained and released), and the
    /// partition asks this for every open-model arrival and answer.
    public var pendingRequests: Int { Self.pendingRequests(of: &client) }

    private static func pendingRequests(of client: inout any PlatformClient) -> Int { client.pendingRequests }

    /// The first timers of the run, and the push address of an install from before the run.
    public func start(now: Instant) -> (actions: [DeviceAction], knownDevice: KnownDevice?) {
        var work = Work()
        var known: KnownDevice?
        if let token = lifecycle.issueInitialToken(random: &random) {
            work.actions.append(.pushAddress(old: nil, new: token))
            known = KnownDevice(
                pushToken: token, userID: lifecycle.userID, os: lifecycle.profile.os,
                pushPermissionGranted: lifecycle.observedPermission == .granted
            )
        }
        lifecycle.start(now: now, random: &random, into: &work.outputs)
        apply(now: now, into: &work)
        work.actions.append(contentsOf: client.started(device: snapshot(), now: now, random: &random))
        return (work.actions, known)
    }

    /// The warm-up of an install from before the run (`WarmUpSettings`): its token as the run will
    /// issue it, and what its client once sent to register. The device's lifecycle does not start;
    /// a warm-up device is not the measured run's (that one is made afresh and `remember`s).
    public func warmUp(now: Instant) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        if let token = lifecycle.issueInitialToken(random: &random) { actions.append(.pushAddress(old: nil, new: token)) }
        actions.append(contentsOf: client.warmUp(device: snapshot(), now: now, random: &random))
        return actions
    }

    public var warmUpMemory: String? { client.warmUpMemory }

    /// Drops the oldest request waiting in the device's client (`PlatformClient.dropOldestWaiting`);
    /// what that makes it do (the drop, counted), nil when nothing could go.
    public func dropOldestWaiting(reason: String) -> [DeviceAction]? {
        var actions: [DeviceAction] = []
        guard client.dropOldestWaiting(reason: reason, into: &actions) else { return nil }
        return actions
    }

    /// What this install's warm-up learnt (before `start`).
    public func remember(warmUp memory: String) { client.remember(warmUp: memory) }

    /// What a push provider knows of the device now (its token, user, permission), nil before it
    /// has a token: whom a campaign delivered by PushSwarm itself can reach.
    public func knownDevice() -> KnownDevice? {
        guard let token = lifecycle.pushToken else { return nil }
        return KnownDevice(pushToken: token, userID: lifecycle.userID, os: lifecycle.profile.os, pushPermissionGranted: lifecycle.observedPermission == .granted)
    }

    /// Handles one event; what it makes the device do is `work.actions` afterwards.
    public func handle(_ event: Event, now: Instant, into work: inout Work) {
        work.clear()
        switch event {
        case .lifecycle(let lifecycleEvent):
            // The client's count is read only when the client is asked (`apply`): most lifecycle
            // events ask it nothing, and reading it touched memory the event did not otherwise.
            lifecycle.handle(lifecycleEvent, now: now, random: &random, into: &work.outputs)
            apply(now: now, into: &work)
        case .clientTimer(let token):
            askingClient(&work) { work in client.timerFired(token, device: snapshot(), now: now, random: &random, into: &work.actions) }
        case .socket(let socketEvent):
            askingClient(&work) { work in client.handle(socketEvent, device: snapshot(), now: now, random: &random, into: &work.actions) }
        }
    }

    /// Runs `ask`, which asks the client something, and sets `work.pendingChange` to how far that
    /// moved the client's count of waiting requests: every way an event reaches the client goes
    /// through here, and only those read the count.
    @inline(__always)
    private func askingClient(_ work: inout Work, _ ask: (inout Work) -> Void) {
        let pendingBefore = pendingRequests
        ask(&work)
        work.pendingChange = pendingRequests - pendingBefore
    }

    /// Handles the end of one of its requests; what it makes the device do is `work.actions`
    /// afterwards.
    public func handle(_ completion: ExchangeCompletion, now: Instant, into work: inout Work) {
        work.clear()
        askingClient(&work) { work in client.handle(completion, device: snapshot(), now: now, random: &random, into: &work.actions) }
    }

    // MARK: - Reached from its executor's thread

    /// `handle`, for code already on this device's executor (its partition's thread), checked
    /// there in every build: `assumeIsolated` asks the executor (`isIsolatingCurrentContext`) and
    /// traps when the caller is on another thread. One such entry an event (the check and its
    /// closure have a cost, (Benchmarks/README.md, "Measured choices")): what else the partition needs to know of the
    /// event, the change in pending requests, comes back in `work`.
    public nonisolated func handleOnExecutor(_ event: Event, now: Instant, into work: inout Work) {
        assumeIsolated { device in device.handle(event, now: now, into: &work) }
    }

    /// `handle(_:now:into:)` of a completion, for code already on this device's executor (see
    /// `handleOnExecutor`).
    public nonisolated func handleOnExecutor(_ completion: ExchangeCompletion, now: Instant, into work: inout Work) {
        assumeIsolated { device in device.handle(completion, now: now, into: &work) }
    }

    /// What became of an open workload's arrival at the device (`arriveOnExecutor`).
    public enum Arrival: Sendable, Equatable {
        /// Handled as the workload's event (`.lifecycle(.workloadEvent)`).
        case handled
        /// Shed: the device already held its backlog of requests.
        case shedAtBacklog
        /// Shed: the device's address was at its share of the waiting ceiling.
        case shedAtWaitingCeiling
    }

    /// An open workload's arrival, for code already on this device's executor, in one entry (see
    /// `handleOnExecutor`): shed when the device holds `maximumBacklog` requests or more, else
    /// when `atWaitingCeiling`, else handled as `.lifecycle(.workloadEvent)`. (The backlog read
    /// through an entry of its own cost an isolation check and two allocations an arrival.)
    public nonisolated func arriveOnExecutor(maximumBacklog: Int, atWaitingCeiling: Bool, now: Instant, into work: inout Work) -> Arrival {
        assumeIsolated { device in
            guard device.pendingRequests < maximumBacklog, !atWaitingCeiling else {
                work.clear()
                return device.pendingRequests >= maximumBacklog ? .shedAtBacklog : .shedAtWaitingCeiling
            }
            device.handle(.lifecycle(.workloadEvent), now: now, into: &work)
            return .handled
        }
    }

    /// `pendingRequests`, for code already on this device's executor (see `handleOnExecutor`).
    public nonisolated func pendingRequestsOnExecutor() -> Int {
        assumeIsolated { device in device.pendingRequests }
    }

    /// What the client sees of the device now, read from the lifecycle field by field: a method
    /// of `DeviceLifecycle` called on the stored lifecycle copied the whole state first (every
    /// reference in it retained and released again), for each call of the client.
    private func snapshot() -> DeviceSnapshot {
        DeviceSnapshot(
            profile: lifecycle.profile, userID: lifecycle.userID, pushPermissionGranted: lifecycle.observedPermission == .granted,
            pushToken: lifecycle.pushToken, currentScreen: lifecycle.currentScreen, clock: calendar
        )
    }

    /// Turns the lifecycle's outputs in `work` into actions, asking the client about each intent.
    private func apply(now: Instant, into work: inout Work) {
        // One snapshot for all of this event's intents (the lifecycle does not change while the
        // client handles them), made only when there is one, and held as a plain `let`: an
        // optional one cost a copy at each unwrap and a generic destroy (a retain or release of
        // each of its references).
        guard work.outputs.contains(where: { if case .intent = $0 { true } else { false } }) else {
            for output in work.outputs { Self.appendPlain(output, to: &work.actions) }
            return
        }
        let device = snapshot()
        askingClient(&work) { work in
            for output in work.outputs {
                guard case .intent(let intent) = output else {
                    Self.appendPlain(output, to: &work.actions)
                    continue
                }
                switch intent {
                case .pushTokenIssued(let token):
                    work.actions.append(.pushAddress(old: nil, new: token))
                case .pushTokenRotated(let old, let new):
                    work.actions.append(.pushAddress(old: old, new: new))
                default:
                    break
                }
                let first = work.actions.count
                client.handle(intent, device: device, now: now, random: &random, into: &work.actions)
                if case .notificationDisplayed = intent, lifecycle.holdsOwnConnections, profile.os.hasNotificationExtension {
                    // The SDK's code in the notification service extension reports the push: its
                    // requests go out from that process, on connections of its own.
                    for index in first..<work.actions.count {
                        guard case .send(var request) = work.actions[index] else { continue }
                        request.sender = .notificationExtension
                        work.actions[index] = .send(request)
                    }
                }
            }
        }
    }

    /// The action of a lifecycle output that is not an intent (a timer or a count).
    private static func appendPlain(_ output: DeviceLifecycle.Output, to actions: inout [DeviceAction]) {
        switch output {
        case .schedule(let event, let time): actions.append(.scheduleLifecycle(event, at: time))
        case .count(let name): actions.append(.count(name))
        case .closeConnections(let reason, let role): actions.append(.closeConnections(reason, role))
        case .intent: break
        }
    }
}
