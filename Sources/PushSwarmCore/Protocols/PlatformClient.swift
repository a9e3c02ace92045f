public import PushSwarmMetrics

/// The device side of one platform's protocol: turns lifecycle intents into wire requests and
/// responses into retries, drops and confirmations.
///
/// - Important: a value type with no I/O. It never reads a clock or sleeps: time arrives as
///   `now`, randomness as `random`, and everything it wants done comes back as actions. The device
///   actor that owns it serialises every call.
public protocol PlatformClient: Sendable {
    /// The run begins: an install from before the run starts its background work here (a
    /// periodic token refresh, say).
    mutating func started(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction]

    /// Reacts to something the app did or that happened to it.
    mutating func handle(_ intent: LifecycleIntent, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction]

    /// Reacts to the end of a request it sent.
    mutating func handle(_ completion: ExchangeCompletion, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction]

    /// Reacts to something that happened to one of its WebSockets.
    mutating func handle(_ event: SocketEvent, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction]

    /// Reacts to one of its own timers (a retry back-off ending).
    mutating func timerFired(_ timer: UInt64, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction]

    // The same reactions appending to the caller's buffer: what a device calls, with a buffer it
    // reuses from event to event, so that a client on the hot path allocates no array of actions
    // per call. By default they append what the forms above return; a hot client implements
    // these and has the forms above wrap them.

    mutating func handle(_ intent: LifecycleIntent, device: DeviceSnapshot, now: Instant, random: inout SeededRandom, into actions: inout [DeviceAction])
    mutating func handle(_ completion: ExchangeCompletion, device: DeviceSnapshot, now: Instant, random: inout SeededRandom, into actions: inout [DeviceAction])
    mutating func handle(_ event: SocketEvent, device: DeviceSnapshot, now: Instant, random: inout SeededRandom, into actions: inout [DeviceAction])
    mutating func timerFired(_ timer: UInt64, device: DeviceSnapshot, now: Instant, random: inout SeededRandom, into actions: inout [DeviceAction])

    /// Requests queued but not yet delivered or dropped (reported at the end of a run).
    var pendingRequests: Int { get }

    /// The warm-up of a run against a real target (`WarmUpSettings`), for an install from before
    /// the run: what it once sent so that the service knows it (its registration), as its SDK
    /// did. Answers come back through `handle(completion)`; the client retries as its SDK would
    /// and starts nothing that outlives the registration (no periodic loop, no open socket).
    mutating func warmUp(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction]

    /// What the warm-up learnt that the install keeps in its storage (an instance id as
    /// the service issued it), nil when nothing.
    var warmUpMemory: String? { get }

    /// The same install in the measured run starts with what its warm-up learnt; called before
    /// `started`, for every install from before the run when a warm-up ran. Empty: it learnt
    /// nothing (the service did not take its registration, or its turn never came), and it
    /// registers as its SDK would, never with what a built-in mock would have known.
    mutating func remember(warmUp memory: String)

    /// Drops the oldest request waiting in the client (not one in flight), counted as dropped
    /// for `reason`: the run holds its devices' waiting requests under a ceiling
    /// (`Scenario.maximumWaiting`). False when nothing waits that could go.
    mutating func dropOldestWaiting(reason: String, into actions: inout [DeviceAction]) -> Bool
}

extension PlatformClient {
    /// A platform whose service learns of an install from its first request needs no warm-up.
    public mutating func warmUp(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] { [] }
    public var warmUpMemory: String? { nil }
    public mutating func remember(warmUp memory: String) {}
    public mutating func dropOldestWaiting(reason: String, into actions: inout [DeviceAction]) -> Bool { false }

    /// Most clients do nothing until the app does something.
    public mutating func started(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] { [] }

    /// Most clients speak HTTP only.
    public mutating func handle(_ event: SocketEvent, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] { [] }

    public mutating func handle(_ intent: LifecycleIntent, device: DeviceSnapshot, now: Instant, random: inout SeededRandom, into actions: inout [DeviceAction]) {
        actions += handle(intent, device: device, now: now, random: &random)
    }

    public mutating func handle(_ completion: ExchangeCompletion, device: DeviceSnapshot, now: Instant, random: inout SeededRandom, into actions: inout [DeviceAction]) {
        actions += handle(completion, device: device, now: now, random: &random)
    }

    public mutating func handle(_ event: SocketEvent, device: DeviceSnapshot, now: Instant, random: inout SeededRandom, into actions: inout [DeviceAction]) {
        actions += handle(event, device: device, now: now, random: &random)
    }

    public mutating func timerFired(_ timer: UInt64, device: DeviceSnapshot, now: Instant, random: inout SeededRandom, into actions: inout [DeviceAction]) {
        actions += timerFired(timer, device: device, now: now, random: &random)
    }
}

/// What a device asks its run to do: what its platform client asks (most cases), and what its
/// lifecycle asks (`scheduleLifecycle`, `pushAddress`, which clients never use). One enum, so
/// that a client's actions join the device's without a conversion.
public enum DeviceAction: Sendable {
    case send(OutgoingRequest)
    /// Call the client's `timerFired(token)` at the given time.
    case schedule(token: UInt64, at: Instant)
    /// Hand the lifecycle `event` at the given time (the device's own timers: sessions,
    /// rotations, a notification's delivery).
    case scheduleLifecycle(DeviceLifecycle.Event, at: Instant)
    /// The device's push address changed: pushes for `old` no longer reach it.
    case pushAddress(old: String?, new: String)
    /// A request given up for `reason`; counted, never silently lost.
    case drop(reason: String)
    /// The client waits `delay` before retry number `retryNumber`.
    case backoff(delay: TimeSpan, retryNumber: Int)
    /// The client believes the service accepted the item with this key.
    case confirmed(LedgerKey)
    /// Increment a run counter.
    case count(CounterKey)
    /// Record a span the client measured (`DurationKey.rateLimitRecovery`).
    case duration(DurationKey, TimeSpan)
    /// Open a WebSocket; its end arrives as a `SocketEvent`.
    case openSocket(SocketOpen)
    /// Send a text message on an open socket; `operation` names a request that expects a reply
    /// (counted as sent; the client reports its end with `completed`), nil for one that does not.
    case sendOnSocket(socket: UInt64, text: String, operation: String?)
    /// Close a socket (no `closed` event follows).
    case closeSocket(UInt64)
    /// A request sent on a socket ended (its reply matched, or it timed out, or the socket closed
    /// under it); recorded like an HTTP exchange.
    case completed(ExchangeCompletion)
    /// The HTTP connections of one of the install's processes close (its lifecycle's
    /// `closeConnections`); a request under way finishes on its connection first.
    case closeConnections(ConnectionCloseReason, ProcessRole)
}

extension DeviceAction {
    /// True for what reads no clock and reaches no service: the run's own books (a timer, a
    /// count, a measured span) and the table of push addresses; false for a request, a socket, a
    /// ledger check, an exchange's end. A wall run does the first kind of a device's start before
    /// its clock starts (`Partition.prepare`): a token registered before instant zero is the same
    /// token, and 10,000 devices' registrations took 5 ms of the first second.
    var isBookkeeping: Bool {
        switch self {
        case .schedule, .scheduleLifecycle, .drop, .backoff, .count, .duration, .pushAddress: true
        case .send, .confirmed, .openSocket, .sendOnSocket, .closeSocket, .completed, .closeConnections: false
        }
    }
}

/// Creates clients for one kind of device of a platform (a client profile chosen per group).
public protocol ClientProfile: Sendable {
    /// How the push provider identifies this device, and whether that identity rotates.
    var pushToken: PushTokenStyle { get }
    func makeClient(for profile: DeviceProfile) -> any PlatformClient
    /// Whether its devices keep a WebSocket open while the app runs (for the socket plan of
    /// wall-clock runs).
    var holdsWebSocket: Bool { get }
    /// An equal profile for one partition's devices, with storage of its own for what its clients
    /// reference (its settings, held once; their strings): see `String.partitionCopy`.
    func partitionCopy() -> any ClientProfile

    /// A device group's `client` object that `PlatformConfiguration.clientProfile` reads back
    /// to an equal profile; nil: the platform takes no options.
    var encodedOptions: JSONObject? { get }
}

extension ClientProfile {
    public var holdsWebSocket: Bool { false }
}

/// The form of a device's push address.
public enum PushTokenStyle: Sendable, Equatable {
    /// An FCM registration token: rotates (reinstall, restore, expiry), and the app must report it.
    case fcm
    /// A stable provider ID (a OneSignal subscription ID): never rotates from the app's view.
    case stableID
}
