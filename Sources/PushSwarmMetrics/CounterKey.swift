/// A run counter's name, defined once as a static member here (or, for a platform's own counters,
/// in its module) and used by what counts it and what reads it: the partitions, the summary,
/// the terminal, the live /metrics endpoint, thresholds. A name spelled in two places could be
/// renamed in one; a member renamed fails the build.
///
/// `RunMetrics.counters` keeps counts by the name, which is what summary archives, shard streams
/// and `counter(NAME)` thresholds carry.
public struct CounterKey: Hashable, Sendable, CustomStringConvertible {
    public let name: String

    /// A counter named at run time (a threshold's `counter(NAME)`), or a new static member.
    public init(_ name: String) { self.name = name }

    public var description: String { name }
}

/// Counters of one kind told apart by a member name: `connections.closed.<reason>`,
/// `connections.http2.goAway.<code>`.
public struct CounterFamily: Sendable {
    /// The members' common start, its final dot included.
    public let prefix: String

    public init(_ prefix: String) { self.prefix = prefix }

    /// The counter of one member.
    public func callAsFunction(_ member: String) -> CounterKey { CounterKey(prefix + member) }

    /// The members counted above zero in `metrics`, in order of their names.
    public func members(in metrics: RunMetrics) -> [(member: String, count: UInt64)] {
        metrics.counters.filter { $0.key.hasPrefix(prefix) && $0.value > 0 }
            .map { (member: String($0.key.dropFirst(prefix.count)), count: $0.value) }
            .sorted { $0.member < $1.member }
    }
}

/// A named span that a run measures into a histogram (`RunMetrics.durations`), defined once.
public struct DurationKey: Hashable, Sendable, CustomStringConvertible {
    public let name: String

    public init(_ name: String) { self.name = name }

    public var description: String { name }

    /// How late the generator ran each event against its time (wall runs).
    public static let generatorLag = DurationKey("generatorLag")
    /// From an item's first 429 until the service accepted it.
    public static let rateLimitRecovery = DurationKey("rateLimitRecovery")
}

extension CounterKey {
    // MARK: The open workloads' arrivals

    /// Arrivals started on a device.
    public static let workloadArrivals = CounterKey("workload.arrivals")
    /// Arrivals shed on a busy device (its backlog, or the waiting ceiling).
    public static let workloadShed = CounterKey("workload.shed")
    /// Of those shed, shed at the run's waiting ceiling.
    public static let workloadShedAtWaitingCeiling = CounterKey("workload.shedAtWaitingCeiling")
    /// Arrivals started over a second late: the generator fell behind.
    public static let workloadMissedStarts = CounterKey("workload.missedStarts")
    /// Workload events a device sent.
    public static let workloadEvents = CounterKey("workload.events")
    /// Workload events due on a device not installed.
    public static let workloadNotInstalled = CounterKey("workload.notInstalled")

    // MARK: The run

    public static let runInterrupted = CounterKey("run.interrupted")
    /// Requests still in flight when the drain's time ran out.
    public static let runDrainCutOff = CounterKey("run.drainCutOff")
    /// The event loops' waits, the events they brought, and the waits that brought none.
    public static let eventLoopWaits = CounterKey("eventLoop.waits")
    public static let eventLoopEvents = CounterKey("eventLoop.events")
    public static let eventLoopEmptyWaits = CounterKey("eventLoop.emptyWaits")

    // MARK: The warm-up

    public static let warmUpInstalls = CounterKey("warmUp.installs")
    public static let warmUpSlowedOn429 = CounterKey("warmUp.slowedOn429")
    public static let warmUpNotRegisteredWaiting = CounterKey("warmUp.notRegistered.waiting")
    public static let warmUpNotRegisteredNotReached = CounterKey("warmUp.notRegistered.notReached")
    public static let warmUpNotRegisteredFailed = CounterKey("warmUp.notRegistered.failed")

    // MARK: Devices' lives

    public static let installs = CounterKey("installs")
    public static let logins = CounterKey("logins")
    public static let logouts = CounterKey("logouts")
    public static let sessionsColdStarts = CounterKey("sessions.coldStarts")
    public static let sessionsResumes = CounterKey("sessions.resumes")
    public static let sessionsForceStopped = CounterKey("sessions.forceStopped")
    public static let pushTokensRotated = CounterKey("pushTokens.rotated")
    public static let pushPermissionGranted = CounterKey("pushPermission.granted")
    public static let pushPermissionDenied = CounterKey("pushPermission.denied")
    public static let pushPermissionRevoked = CounterKey("pushPermission.revoked")
    public static let pushPermissionGrantedLater = CounterKey("pushPermission.grantedLater")
    /// Retry-After values past the client's cap, clamped to it.
    public static let retryAfterClamped = CounterKey("retryAfter.clamped")
    /// Items a closed app's queue kept for its next launch.
    public static let queueParkedUntilNextLaunch = CounterKey("queue.parkedUntilNextLaunch")

    // MARK: Campaigns and the push funnel

    public static let campaignsLaunched = CounterKey("campaigns.launched")
    public static let campaignsLaunchedLocally = CounterKey("campaigns.launchedLocally")
    public static let campaignsSocketMessages = CounterKey("campaigns.socketMessages")
    public static let campaignsSocketMessagesLeftToTheService = CounterKey("campaigns.socketMessagesLeftToTheService")
    public static let notificationsSent = CounterKey("notifications.sent")
    public static let notificationsDeliveredLocally = CounterKey("notifications.deliveredLocally")
    public static let notificationsReceived = CounterKey("notifications.received")
    public static let notificationsHeldWhileUnreachable = CounterKey("notifications.heldWhileUnreachable")
    public static let notificationsHeldDuringWarmUp = CounterKey("notifications.heldDuringWarmUp")
    public static let notificationsDroppedDuringWarmUp = CounterKey("notifications.droppedDuringWarmUp")
    public static let notificationsExpired = CounterKey("notifications.expired")
    public static let notificationsUndeliverable = CounterKey("notifications.undeliverable")
    public static let notificationsDelivered = CounterKey("notifications.delivered")
    public static let notificationsNotInstalled = CounterKey("notifications.notInstalled")
    public static let notificationsLostForceStopped = CounterKey("notifications.lostForceStopped")
    public static let notificationsSuppressedNoPermission = CounterKey("notifications.suppressedNoPermission")
    public static let notificationsOverDisplayLimit = CounterKey("notifications.overDisplayLimit")
    public static let notificationsDisplayed = CounterKey("notifications.displayed")
    public static let notificationsIgnored = CounterKey("notifications.ignored")
    public static let notificationsTapped = CounterKey("notifications.tapped")
    public static let notificationsDismissed = CounterKey("notifications.dismissed")

    // MARK: Platform sockets (WebSockets)

    public static let socketsOpened = CounterKey("sockets.opened")
    public static let socketsClosedByClient = CounterKey("sockets.closedByClient")
    public static let socketsClosedByPeer = CounterKey("sockets.closedByPeer")
    /// The most open at once (set at the run's end, not counted).
    public static let socketsPeakOpen = CounterKey("sockets.peakOpen")

    // MARK: HTTP connections (wall time)

    public static let connectionsOpened = CounterKey("connections.opened")
    public static let connectionsRefused = CounterKey("connections.refused")
    /// TLS handshakes by how they went (`full`, `resumed`, `failed`, `timedOut`).
    public static let connectionsHandshakes = CounterFamily("connections.handshakes.")
    public static let connectionsHandshakesFull = connectionsHandshakes("full")
    public static let connectionsHandshakesResumed = connectionsHandshakes("resumed")
    public static let connectionsHandshakesFailed = connectionsHandshakes("failed")
    public static let connectionsHandshakesTimedOut = connectionsHandshakes("timedOut")
    /// Connections closed, by why.
    public static let connectionsClosed = CounterFamily("connections.closed.")

    // MARK: Which HTTP carried each request (wall time)

    /// A request counts once, by the protocol of its last attempt on the wire.
    public static let requestsHTTP2 = CounterKey("requests.http2")
    public static let requestsHTTP1 = CounterKey("requests.http1")
    /// Connections that spoke HTTP/2.
    public static let http2ConnectionsOpened = CounterKey("connections.http2.opened")
    /// GOAWAYs the servers sent, by code (`connections.http2.goAway.NO_ERROR`).
    public static let http2GoAways = CounterFamily("connections.http2.goAway.")
    /// Streams reset, by code (`connections.http2.reset.REFUSED_STREAM`).
    public static let http2Resets = CounterFamily("connections.http2.reset.")
    /// Requests a server left unprocessed (GOAWAY, REFUSED_STREAM), sent again on another connection.
    public static let http2RetriedUnprocessed = CounterKey("connections.http2.retriedUnprocessed")
}
