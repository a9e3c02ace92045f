import Testing
@testable import PushSwarmCore
import PushSwarmMetrics

@Suite struct DeviceLifecycleTests {
    var random = SeededRandom(seed: 1, stream: .device, index: 1)
    let t0 = Instant(microseconds: 1_000_000_000)

    @Test mutating func anInstallFromBeforeTheRunStartsClosedWithItsPermissionDecided() {
        var device = DeviceLifecycle(profile: Fixtures.profile(grants: false), behaviour: Fixtures.quietBehaviour)
        #expect(device.appState == .closed)
        #expect(device.permission == .denied)
        #expect(device.issueInitialToken(random: &random) != nil)
        let outputs = device.start(now: .start, random: &random)
        #expect(Fixtures.scheduled(outputs).contains { $0.0 == .sessionDue })
    }

    @Test mutating func aNewInstallWaitsForItsInstallTimeThenLaunchesWithOnboardingAndTheTokenFirst() {
        var device = DeviceLifecycle(profile: Fixtures.profile(installedAtStart: false), behaviour: Fixtures.quietBehaviour)
        #expect(device.appState == .notInstalled)
        #expect(device.issueInitialToken(random: &random) == nil)
        let start = device.start(now: .start, random: &random)
        #expect(Fixtures.scheduled(start).map(\.0) == [.install])

        // Before installing, nothing happens.
        #expect(device.handle(.sessionDue, now: t0, random: &random).isEmpty)
        #expect(device.handle(.notificationDelivered(PushNotification(id: 1, campaign: "c", data: [:])), now: t0, random: &random)
            .contains { if case .count(.notificationsNotInstalled) = $0 { true } else { false } })

        let installed = device.handle(.install, now: t0, random: &random)
        #expect(device.appState == .closed)
        guard case .installed? = Fixtures.intents(installed).first else {
            Issue.record("expected the installed intent")
            return
        }
        let launch = device.handle(.sessionDue, now: t0 + .seconds(60), random: &random)
        #expect(device.appState == .foreground)
        let intents = Fixtures.intents(launch)
        guard case .appLaunched(isColdStart: true, source: .organic, isFirstLaunch: true)? = intents.first else {
            Issue.record("expected a first cold start, got \(intents)")
            return
        }
        guard case .pushTokenIssued? = intents.dropFirst().first else {
            Issue.record("expected the token to be issued on first launch")
            return
        }
        #expect(device.pushToken != nil)
        #expect(device.permission == .notDetermined, "the permission prompt comes after onboarding")

        // Activities work through onboarding, then the prompt.
        var sawPrompt = false
        var time = t0 + .seconds(61)
        for _ in 0..<6 where !sawPrompt {
            let outputs = device.handle(.activity(session: device.session), now: time, random: &random)
            sawPrompt = Fixtures.intents(outputs).contains { if case .pushPermissionChanged(isGranted: true) = $0 { true } else { false } }
            time = time + .seconds(1)
        }
        #expect(sawPrompt)
        #expect(device.permission == .granted)
    }

    @Test mutating func backgroundThenForegroundIsAWarmResumeAndCloseThenLaunchIsACold() {
        var device = DeviceLifecycle(profile: Fixtures.profile(), behaviour: Fixtures.quietBehaviour)
        _ = device.handle(.sessionDue, now: t0, random: &random)
        let first = device.session
        let background = device.handle(.sessionEnd(session: first), now: t0 + .minutes(5), random: &random)
        #expect(device.appState == .background)
        let terminate = Fixtures.scheduled(background).first { if case .terminate = $0.0 { true } else { false } }
        #expect(terminate != nil)

        let resume = device.handle(.sessionDue, now: t0 + .minutes(6), random: &random)
        #expect(device.appState == .foreground)
        #expect(device.session == first + 1)
        guard case .appLaunched(isColdStart: false, _, _)? = Fixtures.intents(resume).first else {
            Issue.record("expected a warm resume")
            return
        }
        _ = device.handle(.sessionEnd(session: device.session), now: t0 + .minutes(10), random: &random)
        _ = device.handle(.terminate(session: device.session), now: t0 + .minutes(40), random: &random)
        #expect(device.appState == .closed)
        let cold = device.handle(.sessionDue, now: t0 + .hours(2), random: &random)
        guard case .appLaunched(isColdStart: true, _, isFirstLaunch: false)? = Fixtures.intents(cold).first else {
            Issue.record("expected a cold start")
            return
        }
    }

    @Test mutating func timersOfAnEndedSessionAreIgnored() {
        var device = DeviceLifecycle(profile: Fixtures.profile(), behaviour: Fixtures.quietBehaviour)
        _ = device.handle(.sessionDue, now: t0, random: &random)
        let old = device.session
        _ = device.handle(.sessionEnd(session: old), now: t0 + .minutes(1), random: &random)
        _ = device.handle(.sessionDue, now: t0 + .minutes(2), random: &random)
        #expect(device.handle(.activity(session: old), now: t0 + .minutes(3), random: &random).isEmpty)
        #expect(device.handle(.sessionEnd(session: old), now: t0 + .minutes(3), random: &random).isEmpty)
        #expect(device.appState == .foreground)
        #expect(device.handle(.terminate(session: device.session), now: t0 + .minutes(3), random: &random).isEmpty, "a foreground app is not terminated")
        #expect(device.appState == .foreground)
    }

    @Test mutating func transitionsThatMustNotHappenLeaveTheStateAlone() {
        var device = DeviceLifecycle(profile: Fixtures.profile(), behaviour: Fixtures.quietBehaviour)
        // Closed: no session to end, nothing to terminate, no install twice.
        #expect(device.handle(.sessionEnd(session: 0), now: t0, random: &random).isEmpty)
        #expect(device.handle(.terminate(session: 0), now: t0, random: &random).isEmpty)
        #expect(device.handle(.install, now: t0, random: &random).isEmpty)
        #expect(device.appState == .closed)
        // A tap on a notification the device never displayed does nothing.
        #expect(device.handle(.notificationTapped(id: 99), now: t0, random: &random).isEmpty)
        #expect(device.appState == .closed)
        // A session due while in the foreground does not start a second session.
        _ = device.handle(.sessionDue, now: t0, random: &random)
        let session = device.session
        let again = device.handle(.sessionDue, now: t0 + .seconds(10), random: &random)
        #expect(device.session == session)
        #expect(Fixtures.intents(again).isEmpty)
    }

    @Test mutating func aTappedNotificationColdStartsAClosedAppFromTheNotification() {
        var behaviour = Fixtures.quietBehaviour
        behaviour.tapRate = PerOS(both: 1)
        var device = DeviceLifecycle(profile: Fixtures.profile(), behaviour: behaviour)
        let push = PushNotification(id: 7, campaign: "promo", data: ["tracking_token": "abc"])
        let delivered = device.handle(.notificationDelivered(push), now: t0, random: &random)
        #expect(Fixtures.counts(delivered).contains("notifications.displayed"))
        guard let tap = Fixtures.scheduled(delivered).first(where: { $0.0 == .notificationTapped(id: 7) }) else {
            Issue.record("a tap rate of 1 schedules a tap")
            return
        }
        #expect(tap.1 > t0)
        let tapped = device.handle(.notificationTapped(id: 7), now: tap.1, random: &random)
        #expect(device.appState == .foreground)
        let intents = Fixtures.intents(tapped)
        guard case .appLaunched(isColdStart: true, source: .notification, _)? = intents.first,
            case .notificationTapped(let notification)? = intents.last
        else {
            Issue.record("expected a launch from the notification, then the tap: \(intents)")
            return
        }
        #expect(notification.data["tracking_token"] == "abc")
        #expect(device.handle(.notificationTapped(id: 7), now: tap.1 + .seconds(1), random: &random).isEmpty, "a notification is tapped once")
    }

    @Test func whatAUserDoesWithAPushDependsOnThePushNotOnWhatTheDeviceDrewBefore() {
        // In wall time an answer a few milliseconds late changes how many numbers a device has
        // drawn when a push arrives; the push's fate (tapped or not, when) must not move with it,
        // or wall and simulated runs of one scenario tap different pushes.
        var behaviour = Fixtures.quietBehaviour
        behaviour.tapRate = PerOS(both: 0.5)
        behaviour.timeToOpen = PerOS(both: .uniform(minimum: 1, maximum: 100))
        func fates(drawnBefore: Int) -> [(DeviceLifecycle.Event, Instant)?] {
            var device = DeviceLifecycle(profile: Fixtures.profile(), behaviour: behaviour)
            var random = SeededRandom(seed: 1, stream: .device, index: 1)
            for _ in 0..<drawnBefore { _ = random.next() }
            return (1...40).map { id in
                let push = PushNotification(id: UInt64(id), campaign: "c", data: [:], fate: UInt64(id) &* 0x9E37_79B9)
                return Fixtures.scheduled(device.handle(.notificationDelivered(push), now: t0, random: &random)).first
            }
        }
        let calm = fates(drawnBefore: 0)
        let busy = fates(drawnBefore: 3)
        #expect(calm.compactMap { $0 }.count > 5 && calm.contains { $0 == nil }, "some pushes are tapped, some not")
        #expect(calm.map { $0?.0 } == busy.map { $0?.0 })
        #expect(calm.map { $0?.1 } == busy.map { $0?.1 })
    }

    /// A device keeps a displayed push only until the tap or dismissal scheduled for it: an
    /// ignored one is not kept for the rest of a day's run (memory per device, not per push).
    @Test mutating func aDeviceKeepsAPushOnlyUntilWhatTheUserDoesWithIt() {
        var behaviour = Fixtures.quietBehaviour
        behaviour.tapRate = PerOS(both: 0.3)
        behaviour.dismissRate = 0.3
        var device = DeviceLifecycle(profile: Fixtures.profile(), behaviour: behaviour)
        var later: [(DeviceLifecycle.Event, Instant)] = []
        var ignored = 0
        for id in 1...200 {
            let push = PushNotification(id: UInt64(id), campaign: "c", data: [:], fate: UInt64(id) &* 0x9E37_79B9)
            let outputs = device.handle(.notificationDelivered(push), now: t0, random: &random)
            later += Fixtures.scheduled(outputs)
            if Fixtures.counts(outputs).contains("notifications.ignored") { ignored += 1 }
        }
        #expect(ignored > 20 && later.count > 20, "some pushes are ignored, some tapped or dismissed")
        #expect(device.keptNotificationCount == later.count)
        for (event, time) in later.sorted(by: { $0.1 < $1.1 }) { _ = device.handle(event, now: time, random: &random) }
        #expect(device.keptNotificationCount == 0)
    }

    /// A flood of pushes (issue 35: 1.2 M in 15 s through `--push-listen`) is bounded per device:
    /// Android posts at most 50 notifications an app, and a device keeps no more awaiting the user.
    @Test mutating func aDeviceKeepsAtMostFiftyNotificationsAwaitingTheUser() {
        var behaviour = Fixtures.quietBehaviour
        behaviour.tapRate = PerOS(both: 1)
        var device = DeviceLifecycle(profile: Fixtures.profile(), behaviour: behaviour)
        var over = 0
        for id in 1...500 {
            let push = PushNotification(id: UInt64(id), campaign: "c", data: ["blob": String(repeating: "x", count: 4_000)], fate: UInt64(id))
            let outputs = device.handle(.notificationDelivered(push), now: t0, random: &random)
            if Fixtures.counts(outputs).contains("notifications.overDisplayLimit") { over += 1 }
        }
        #expect(device.keptNotificationCount == DeviceLifecycle.maximumKeptNotifications && DeviceLifecycle.maximumKeptNotifications == 50)
        #expect(over == 450, "each push beyond them is counted, not displayed")
    }

    @Test mutating func withoutPermissionANotificationIsNotDisplayed() {
        var device = DeviceLifecycle(profile: Fixtures.profile(grants: false), behaviour: Fixtures.quietBehaviour)
        let outputs = device.handle(.notificationDelivered(PushNotification(id: 1, campaign: "c", data: [:])), now: t0, random: &random)
        #expect(Fixtures.counts(outputs) == ["notifications.delivered", "notifications.suppressedNoPermission"])
        // Nothing is displayed; the app hears of the push only to report it undisplayed.
        let intents = Fixtures.intents(outputs)
        #expect(intents.count == 1)
        guard case .notificationNotDisplayed(let notification)? = intents.first else {
            Issue.record("expected notificationNotDisplayed, got \(intents)")
            return
        }
        #expect(notification.id == 1)
    }

    @Test mutating func aRevokedPermissionIsReportedAtTheNextLaunch() {
        var behaviour = Fixtures.quietBehaviour
        behaviour.permissionChangesPerDay = 1
        var device = DeviceLifecycle(profile: Fixtures.profile(grants: true), behaviour: behaviour)
        _ = device.handle(.permissionFlip, now: t0, random: &random)
        #expect(device.permission == .denied)
        #expect(device.observedPermission == .granted, "a closed app has not noticed yet")
        let launch = device.handle(.sessionDue, now: t0 + .hours(1), random: &random)
        #expect(Fixtures.intents(launch).contains { if case .pushPermissionChanged(isGranted: false) = $0 { true } else { false } })
        #expect(device.observedPermission == .denied)
    }

    @Test mutating func onlyFCMTokensRotate() {
        var behaviour = Fixtures.quietBehaviour
        behaviour.tokenRotationsPerDay = 1
        var fcm = DeviceLifecycle(profile: Fixtures.profile(tokenStyle: .fcm), behaviour: behaviour)
        let old = fcm.issueInitialToken(random: &random)
        let rotated = fcm.handle(.tokenRotation, now: t0, random: &random)
        guard case .pushTokenRotated(let oldToken, let newToken)? = Fixtures.intents(rotated).first else {
            Issue.record("expected a rotation")
            return
        }
        #expect(oldToken == old)
        #expect(newToken != old)
        #expect(newToken.contains(":APA91b"))

        var stable = DeviceLifecycle(profile: Fixtures.profile(tokenStyle: .stableID), behaviour: behaviour)
        _ = stable.issueInitialToken(random: &random)
        #expect(Fixtures.intents(stable.handle(.tokenRotation, now: t0, random: &random)).isEmpty)
    }

    @Test mutating func loggingInChangesTheUserAndLoggingOutClearsIt() {
        var behaviour = Fixtures.quietBehaviour
        behaviour.loginPerSession = 1
        var device = DeviceLifecycle(profile: Fixtures.profile(account: "user_9"), behaviour: behaviour)
        #expect(device.userID == nil)
        _ = device.handle(.sessionDue, now: t0, random: &random)
        var loggedIn = false
        var time = t0
        for _ in 0..<4 where !loggedIn {
            time = time + .seconds(2)
            loggedIn = Fixtures.intents(device.handle(.activity(session: device.session), now: time, random: &random))
                .contains { if case .loggedIn(userID: "user_9", _) = $0 { true } else { false } }
        }
        #expect(loggedIn)
        #expect(device.userID == "user_9")

        var leaving = Fixtures.quietBehaviour
        leaving.logoutPerSession = 1
        var other = DeviceLifecycle(profile: Fixtures.profile(account: "user_3", loggedIn: true), behaviour: leaving)
        #expect(other.userID == "user_3")
        _ = other.handle(.sessionDue, now: t0, random: &random)
        let outputs = other.handle(.activity(session: other.session), now: t0 + .seconds(1), random: &random)
        #expect(Fixtures.intents(outputs).contains { if case .loggedOut(userID: "user_3") = $0 { true } else { false } })
        #expect(other.userID == nil)
    }

    @Test mutating func sessionsFollowTheLocalDay() {
        var behaviour = Fixtures.quietBehaviour
        behaviour.activeHours = (0..<24).map { $0 == 20 ? 1 : 0 }
        let device = DeviceLifecycle(profile: Fixtures.profile(), behaviour: behaviour)
        var copy = device
        for _ in 0..<50 {
            let outputs = copy.start(now: .start, random: &random)
            for (event, at) in Fixtures.scheduled(outputs) where event == .sessionDue {
                let local = (at.microseconds / 1_000_000 + 10_800) % 86_400 / 3_600
                #expect(local == 20, "only the 20:00 local hour has weight")
            }
            copy = device
        }
    }

    @Test func aDataOnlyPushDoesNotReachAForceStoppedApp() {
        // Data-only messages need the app's code to run; a force-stopped app runs none until launched.
        var behaviour = Behaviour()
        behaviour.forceStopShare = PerOS(both: 1)
        behaviour.tokenRotationsPerDay = 0
        behaviour.permissionChangesPerDay = 0
        var random = SeededRandom(seed: 3, stream: .device)
        var device = DeviceLifecycle(profile: Fixtures.profile(), behaviour: behaviour)
        let t0 = Instant.start + .hours(1)
        _ = device.handle(.sessionDue, now: t0, random: &random)
        _ = device.handle(.sessionEnd(session: 1), now: t0 + .minutes(5), random: &random)
        let closing = device.handle(.terminate(session: 1), now: t0 + .minutes(10), random: &random)
        #expect(Fixtures.counts(closing).contains("sessions.forceStopped"))
        let dataOnly = PushNotification(id: 1, campaign: "c", data: ["px.msg_id": "m"], isDataOnly: true)
        let lost = device.handle(.notificationDelivered(dataOnly), now: t0 + .minutes(20), random: &random)
        #expect(Fixtures.counts(lost) == ["notifications.delivered", "notifications.lostForceStopped"])
        #expect(Fixtures.intents(lost).isEmpty)
        // A notification message is shown by the OS whatever the app's state.
        let shown = device.handle(.notificationDelivered(PushNotification(id: 2, campaign: "c", data: [:])), now: t0 + .minutes(21), random: &random)
        #expect(Fixtures.counts(shown).contains("notifications.displayed"))
        // The next launch ends the force stop.
        _ = device.handle(.sessionDue, now: t0 + .hours(2), random: &random)
        let later = device.handle(.notificationDelivered(PushNotification(id: 3, campaign: "c", data: ["px.msg_id": "n"], isDataOnly: true)), now: t0 + .hours(2) + .minutes(1), random: &random)
        #expect(Fixtures.counts(later).contains("notifications.displayed"))
    }
}
