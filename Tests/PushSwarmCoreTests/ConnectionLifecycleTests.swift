import Testing
@testable import PushSwarmCore

/// An app that holds its own connections (`network.connections: perDevice`, issue 50) loses them
/// as a phone's app does: all of them when its process dies, and on iOS when the OS suspends it a
/// few seconds after it went to the background. Android leaves a background process running, so
/// its connections stay until they idle out or the process dies.
@Suite struct ConnectionLifecycleTests {
    var random = SeededRandom(seed: 1, stream: .device, index: 1)
    let t0 = Instant(microseconds: 1_000_000_000)

    static func closes(_ outputs: [DeviceLifecycle.Output]) -> [ConnectionCloseReason] {
        outputs.compactMap { if case .closeConnections(let reason, .app) = $0 { reason } else { nil } }
    }

    static func suspension(_ outputs: [DeviceLifecycle.Output]) -> (Int, Instant)? {
        outputs.lazy.compactMap { output -> (Int, Instant)? in
            if case .schedule(.suspend(let session), let at) = output { (session, at) } else { nil }
        }.first
    }

    private func device(_ os: OperatingSystem, ownConnections: Bool = true) -> DeviceLifecycle {
        var device = DeviceLifecycle(profile: Fixtures.profile(os: os), behaviour: Fixtures.quietBehaviour)
        device.holdsOwnConnections = ownConnections
        return device
    }

    /// iOS: `applicationDidEnterBackground(_:)` "has approximately five seconds to perform any tasks
    /// and return"; then the app is suspended and its sockets go (docs/connections.md).
    @Test mutating func anIOSAppSuspendedFiveSecondsAfterItLeftClosesItsConnections() {
        var device = device(.ios)
        _ = device.handle(.sessionDue, now: t0, random: &random)
        let left = t0 + .minutes(3)
        let background = device.handle(.sessionEnd(session: device.session), now: left, random: &random)
        guard let (session, at) = Self.suspension(background) else {
            Issue.record("no suspension scheduled: \(background)")
            return
        }
        #expect(session == device.session && at == left + .seconds(5))
        #expect(Self.closes(background).isEmpty, "nothing closes the moment the app leaves")
        #expect(Self.closes(device.handle(.suspend(session: session), now: at, random: &random)) == [.background])
    }

    /// Back within the grace: the app was never suspended, its connections stay.
    @Test mutating func anIOSAppBackBeforeItsSuspensionKeepsItsConnections() {
        var device = device(.ios)
        _ = device.handle(.sessionDue, now: t0, random: &random)
        let background = device.handle(.sessionEnd(session: device.session), now: t0 + .minutes(3), random: &random)
        guard let (session, at) = Self.suspension(background) else {
            Issue.record("no suspension scheduled")
            return
        }
        _ = device.handle(.sessionDue, now: t0 + .minutes(3) + .seconds(2), random: &random)
        #expect(device.appState == .foreground)
        #expect(device.handle(.suspend(session: session), now: at, random: &random).isEmpty, "back in the foreground: no suspension")
    }

    /// Android keeps a background process running: no suspension, nothing closed on leaving.
    @Test mutating func anAndroidAppInTheBackgroundKeepsItsConnections() {
        var device = device(.android)
        _ = device.handle(.sessionDue, now: t0, random: &random)
        let background = device.handle(.sessionEnd(session: device.session), now: t0 + .minutes(3), random: &random)
        #expect(Self.suspension(background) == nil && Self.closes(background).isEmpty)
    }

    /// The process dies (closed by the user or the OS): on both OSes every connection closes, so
    /// the next launch, a cold start, opens a new one.
    @Test(arguments: [OperatingSystem.android, .ios])
    mutating func aClosedAppsProcessTakesItsConnectionsWithIt(os: OperatingSystem) {
        var device = device(os)
        _ = device.handle(.sessionDue, now: t0, random: &random)
        _ = device.handle(.sessionEnd(session: device.session), now: t0 + .minutes(3), random: &random)
        let closed = device.handle(.terminate(session: device.session), now: t0 + .minutes(30), random: &random)
        #expect(device.appState == .closed)
        #expect(Self.closes(closed) == [.processDied])
    }

    /// iOS hands a displayed push to the app's notification service extension, a process of its
    /// own (`UNNotificationServiceExtension`), from which the SDK reports the delivery: it lives
    /// on 30 s after its last push (`serviceExtensionTimeWillExpire`'s "about 30 seconds"), so a
    /// push within them finds it running, and then it dies with its connections. Android hands an
    /// FCM message to the app's own process: no extension.
    @Test mutating func anIOSPushRunsTheExtensionWhoseProcessEndsThirtySecondsAfterItsLastPush() {
        func ends(_ outputs: [DeviceLifecycle.Output]) -> [(DeviceLifecycle.Event, Instant)] {
            outputs.compactMap { if case .schedule(let event, let at) = $0, case .extensionEnds = event { (event, at) } else { nil } }
        }
        func extensionCloses(_ outputs: [DeviceLifecycle.Output]) -> [ConnectionCloseReason] {
            outputs.compactMap { if case .closeConnections(let reason, .notificationExtension) = $0 { reason } else { nil } }
        }
        func push(_ id: UInt64) -> DeviceLifecycle.Event { .notificationDelivered(PushNotification(id: id, campaign: "c", data: [:])) }
        var ios = device(.ios)
        let first = ends(ios.handle(push(1), now: t0, random: &random))
        let second = ends(ios.handle(push(2), now: t0 + .seconds(12), random: &random))
        #expect(first.map(\.1) == [t0 + .seconds(30)] && second.map(\.1) == [t0 + .seconds(42)])
        guard let (firstEnd, at) = first.first, let (secondEnd, lastAt) = second.first else { return }
        #expect(extensionCloses(ios.handle(firstEnd, now: at, random: &random)).isEmpty, "the second push keeps it running")
        #expect(extensionCloses(ios.handle(secondEnd, now: lastAt, random: &random)) == [.processDied])
        var android = device(.android)
        #expect(ends(android.handle(push(1), now: t0, random: &random)).isEmpty)
        var shared = device(.ios, ownConnections: false)
        #expect(ends(shared.handle(push(1), now: t0, random: &random)).isEmpty, "nothing of its own to close")
    }

    /// With its address's shared pool (`perAddress`) the app holds nothing of its own: no
    /// suspension is scheduled (no queue item a session in simulated time) and nothing closes.
    @Test mutating func anAppWithoutConnectionsOfItsOwnClosesNothing() {
        var device = device(.ios, ownConnections: false)
        _ = device.handle(.sessionDue, now: t0, random: &random)
        let background = device.handle(.sessionEnd(session: device.session), now: t0 + .minutes(3), random: &random)
        #expect(Self.suspension(background) == nil)
        #expect(Self.closes(device.handle(.terminate(session: device.session), now: t0 + .minutes(30), random: &random)).isEmpty)
    }
}
