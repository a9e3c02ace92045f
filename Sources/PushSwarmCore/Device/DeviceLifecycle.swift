public import PushSwarmMetrics
import PushSwarmSystem

/// One app install's life, as a value: `(state, event, now) -> (state, outputs)`.
///
/// It decides what the user does (launch, browse, log in, tap) and when; it knows nothing of any
/// platform's wire format. Timers it wants come back as `.schedule` outputs; a timer that fires
/// after its session ended (the app went to background first) is recognised by its session number
/// and ignored, so no timer ever needs cancelling.
public struct DeviceLifecycle: Sendable {
    public enum AppState: String, Sendable {
        case notInstalled
        case closed
        case foreground
        case background
    }

    public enum PushPermission: String, Sendable {
        case notDetermined
        case granted
        case denied
    }

    /// What can happen to the device.
    public enum Event: Sendable, Equatable {
        case install
        /// The user's next planned session is due.
        case sessionDue
        /// The user does the next thing within session `session`.
        case activity(session: Int)
        /// The user leaves the app (session `session` ends).
        case sessionEnd(session: Int)
        /// The OS or the user closes the app left in the background after session `session`.
        case terminate(session: Int)
        /// The OS suspends the app left in the background after session `session` (iOS), closing
        /// its sockets.
        case suspend(session: Int)
        /// The push provider rotates the token.
        case tokenRotation
        /// The user changes push permission in the OS settings.
        case permissionFlip
        /// Boxed (`indirect`): a notification is large, and every event waiting in the run's queue
        /// would otherwise take its size.
        indirect case notificationDelivered(PushNotification)
        case notificationTapped(id: UInt64)
        case notificationDismissed(id: UInt64)
        /// A workload (open or closed model) asks the user for one event now.
        case workloadEvent
        /// iOS's notification service extension, started for push number `generation`, ends
        /// unless a later push kept it (`extensionLingers`).
        case extensionEnds(generation: UInt32)
    }

    public enum Output: Sendable {
        case intent(LifecycleIntent)
        case schedule(Event, at: Instant)
        case count(CounterKey)
        /// The own HTTP connections of one of the install's processes close
        /// (`holdsOwnConnections`): the app's or the extension's process died, or the OS suspended
        /// the app.
        case closeConnections(ConnectionCloseReason, ProcessRole)
    }

    /// Steps a session performs before its ordinary events: onboarding, the permission prompt, login.
    enum ScriptStep: Sendable, Equatable {
        case event(String, [String])
        case permissionPrompt
        case login
        case logout
    }

    public let profile: DeviceProfile
    /// The group's behaviour, held once for the whole group (a device keeps a reference).
    private let group: GroupBehaviour
    var behaviour: Behaviour { group.behaviour }
    private var eventWeights: [Double] { group.eventWeights }
    private var eventWeightTotal: Double { group.eventWeightTotal }
    /// False when a workload drives the device: no sessions of its own, events on demand.
    public var followsOwnDay = true
    /// True when the app holds connections of its own (`network.connections: perDevice`): its
    /// process's death and its suspension in the background close them (`closeConnections`).
    public var holdsOwnConnections = false

    public private(set) var appState: AppState
    public private(set) var hasLaunched: Bool
    public private(set) var userID: String?
    /// The OS-level permission.
    public private(set) var permission: PushPermission
    /// The permission as the app last saw it; events carry this.
    public private(set) var observedPermission: PushPermission
    public private(set) var pushToken: String?
    public private(set) var session = 0
    public private(set) var currentScreen = "home"
    private var sessionEndsAt = Instant.start
    private var script: [ScriptStep] = []
    /// Displayed notifications awaiting a tap or dismissal.
    private var pendingNotifications: [UInt64: PushNotification] = [:]
    /// How many displayed notifications the device keeps for a tap or dismissal to come.
    var keptNotificationCount: Int { pendingNotifications.count }
    /// The most it keeps (Android's limit of notifications an app may have posted).
    static let maximumKeptNotifications = 50
    private var nextTokenSerial = 0
    /// The user force-stopped the app when it last closed; cleared by the next launch.
    public private(set) var isForceStopped = false
    /// Pushes the notification service extension handled (iOS), the latest of which keeps it.
    private var extensionGeneration: UInt32 = 0

    /// How long iOS's notification service extension lives after the last push it handled: the
    /// time the system gives it to change the notification ("about 30 seconds",
    /// `serviceExtensionTimeWillExpire()`); a push within it finds it running, with its
    /// connection and TLS session. An assumption: Apple documents no process lifetime.
    public static let extensionLingers = TimeSpan.seconds(30)

    public init(profile: DeviceProfile, behaviour: Behaviour) {
        self.init(profile: profile, group: GroupBehaviour(behaviour))
    }

    /// A device of a group whose behaviour the fleet made once.
    public init(profile: DeviceProfile, group: GroupBehaviour) {
        self.profile = profile
        self.group = group
        if profile.isInstalledAtStart {
            appState = .closed
            hasLaunched = true
            userID = profile.isLoggedInAtStart ? profile.accountID : nil
            permission = profile.grantsPushPermission ? .granted : .denied
            observedPermission = permission
        } else {
            appState = .notInstalled
            hasLaunched = false
            userID = nil
            permission = .notDetermined
            observedPermission = .notDetermined
        }
    }

    /// The token the device holds when the run starts, for installs from before it; the run tells
    /// the service about them. Drawn from the device's own random stream.
    public mutating func issueInitialToken(random: inout SeededRandom) -> String? {
        guard profile.isInstalledAtStart else { return nil }
        let token = makeToken(random: &random)
        pushToken = token
        return token
    }

    /// The first timers of the run.
    public mutating func start(now: Instant, random: inout SeededRandom) -> [Output] {
        var outputs: [Output] = []
        start(now: now, random: &random, into: &outputs)
        return outputs
    }

    /// `start`, appending to `outputs`.
    public mutating func start(now: Instant, random: inout SeededRandom, into outputs: inout [Output]) {
        if let installAt = profile.installAt {
            outputs.append(.schedule(.install, at: max(installAt, now)))
        } else {
            if followsOwnDay { scheduleNextSession(after: now, random: &random, into: &outputs) }
            scheduleBackgroundChanges(after: now, random: &random, into: &outputs)
        }
    }

    public mutating func handle(_ event: Event, now: Instant, random: inout SeededRandom) -> [Output] {
        var outputs: [Output] = []
        handle(event, now: now, random: &random, into: &outputs)
        return outputs
    }

    /// `handle`, appending to `outputs` (a buffer the device's partition reuses).
    public mutating func handle(_ event: Event, now: Instant, random: inout SeededRandom, into outputs: inout [Output]) {
        switch event {
        case .install:
            guard appState == .notInstalled else { return }
            appState = .closed
            outputs.append(.intent(.installed))
            outputs.append(.count(.installs))
            // People open an app they just installed within minutes.
            if followsOwnDay { outputs.append(.schedule(.sessionDue, at: now + .seconds(30 + 600 * random.nextUnit()))) }
            scheduleBackgroundChanges(after: now, random: &random, into: &outputs)

        case .sessionDue:
            guard appState != .notInstalled else { return }
            if appState != .foreground {
                startSession(source: .organic, now: now, random: &random, into: &outputs)
            }
            scheduleNextSession(after: now, random: &random, into: &outputs)

        case .activity(let number):
            guard number == session, appState == .foreground else { return }
            performActivity(now: now, random: &random, into: &outputs)
            let next = now + nextActivityGap(random: &random)
            if next < sessionEndsAt || !script.isEmpty {
                outputs.append(.schedule(.activity(session: session), at: min(next, max(sessionEndsAt, now + .seconds(1)))))
            }

        case .sessionEnd(let number):
            guard number == session, appState == .foreground else { return }
            // Finish a script the session started (onboarding, a login) before leaving.
            while !script.isEmpty { performActivity(now: now, random: &random, into: &outputs) }
            appState = .background
            outputs.append(.intent(.appBackgrounded))
            outputs.append(.schedule(.terminate(session: session), at: now + behaviour.backgroundToClosed.sampleSpan(using: &random)))
            if holdsOwnConnections, let grace = profile.os.suspendsInBackgroundAfter {
                outputs.append(.schedule(.suspend(session: session), at: now + grace))
            }

        case .suspend(let number):
            // Still in the background after this session (not back, not closed meanwhile).
            guard number == session, appState == .background else { return }
            outputs.append(.closeConnections(.background, .app))

        case .terminate(let number):
            guard number == session, appState == .background else { return }
            appState = .closed
            isForceStopped = random.chance(profile.os == .ios ? behaviour.forceStopShare.ios : behaviour.forceStopShare.android)
            if isForceStopped { outputs.append(.count(.sessionsForceStopped)) }
            outputs.append(.intent(.appClosed))
            if holdsOwnConnections { outputs.append(.closeConnections(.processDied, .app)) }

        case .tokenRotation:
            guard appState != .notInstalled else { return }
            if profile.pushTokenStyle == .fcm, let old = pushToken {
                let new = makeToken(random: &random)
                pushToken = new
                outputs.append(.intent(.pushTokenRotated(oldToken: old, newToken: new)))
                outputs.append(.count(.pushTokensRotated))
            }
            scheduleTokenRotation(after: now, random: &random, into: &outputs)

        case .permissionFlip:
            guard appState != .notInstalled else { return }
            switch permission {
            case .granted:
                permission = .denied
                outputs.append(.count(.pushPermissionRevoked))
            case .denied:
                permission = .granted
                outputs.append(.count(.pushPermissionGrantedLater))
            case .notDetermined:
                break
            }
            // An app in the foreground notices at once; otherwise at its next launch or resume.
            if appState == .foreground { observePermission(into: &outputs) }
            schedulePermissionFlip(after: now, random: &random, into: &outputs)

        case .notificationDelivered(let notification):
            outputs.append(.count(.notificationsDelivered))
            guard appState != .notInstalled else {
                outputs.append(.count(.notificationsNotInstalled))
                return
            }
            // A data-only message needs the app's code; a force-stopped app gets none until launched.
            if notification.isDataOnly, isForceStopped, appState == .closed {
                outputs.append(.count(.notificationsLostForceStopped))
                return
            }
            guard permission == .granted else {
                outputs.append(.count(.notificationsSuppressedNoPermission))
                outputs.append(.intent(.notificationNotDisplayed(notification)))
                return
            }
            // Android posts at most 50 notifications an app (NotificationManagerService's
            // MAX_PACKAGE_NOTIFICATIONS) and refuses more: a device keeps no more awaiting a tap
            // or dismissal, however many pushes a service floods it with.
            guard pendingNotifications.count < Self.maximumKeptNotifications else {
                outputs.append(.count(.notificationsOverDisplayLimit))
                outputs.append(.intent(.notificationNotDisplayed(notification)))
                return
            }
            outputs.append(.count(.notificationsDisplayed))
            outputs.append(.intent(.notificationDisplayed(notification)))
            if holdsOwnConnections, profile.os.hasNotificationExtension {
                // The extension reports the delivery from a process of its own, which lingers.
                extensionGeneration &+= 1
                outputs.append(.schedule(.extensionEnds(generation: extensionGeneration), at: now + Self.extensionLingers))
            }
            var fate = SeededRandom(seed: notification.fate, stream: .notificationFate)
            let tapRate = notification.tapRate?[profile.os] ?? behaviour.tapRate[profile.os]
            // Kept only until the tap or dismissal that will use it: an ignored push is not kept
            // for the rest of the run.
            if fate.chance(tapRate) {
                let delay = (notification.timeToOpen?[profile.os] ?? behaviour.timeToOpen[profile.os]).sampleSpan(using: &fate)
                pendingNotifications[notification.id] = notification
                outputs.append(.schedule(.notificationTapped(id: notification.id), at: now + delay))
            } else if fate.chance(behaviour.dismissRate) {
                pendingNotifications[notification.id] = notification
                outputs.append(.schedule(.notificationDismissed(id: notification.id), at: now + behaviour.timeToDismiss.sampleSpan(using: &fate)))
            } else {
                outputs.append(.count(.notificationsIgnored))
            }

        case .notificationTapped(let id):
            guard let notification = takeNotification(id) else { return }
            guard appState != .notInstalled else { return }
            outputs.append(.count(.notificationsTapped))
            if appState != .foreground {
                startSession(source: .notification, now: now, random: &random, into: &outputs)
            }
            outputs.append(.intent(.notificationTapped(notification)))

        case .workloadEvent:
            guard appState != .notInstalled else {
                outputs.append(.count(.workloadNotInstalled))
                return
            }
            guard eventWeightTotal > 0 else { return }
            let entry = behaviour.eventMix[random.pickIndex(weights: eventWeights, total: eventWeightTotal)]
            outputs.append(.count(.workloadEvents))
            outputs.append(.intent(.userEvent(name: entry.name, parameters: EventParameters.make(entry.parameters, kinds: entry.parameterKinds, random: &random))))

        case .notificationDismissed(let id):
            guard let notification = takeNotification(id) else { return }
            outputs.append(.count(.notificationsDismissed))
            outputs.append(.intent(.notificationDismissed(notification)))

        case .extensionEnds(let generation):
            // A later push found the extension running and keeps it a while longer.
            guard generation == extensionGeneration else { return }
            outputs.append(.closeConnections(.processDied, .notificationExtension))
        }
    }

    /// Removes a kept notification; the table itself goes once it is empty (an emptied
    /// dictionary keeps its storage, and most devices keep one push at a time, once a day).
    private mutating func takeNotification(_ id: UInt64) -> PushNotification? {
        let notification = pendingNotifications.removeValue(forKey: id)
        if pendingNotifications.isEmpty { pendingNotifications = [:] }
        return notification
    }

    // MARK: - Sessions

    private mutating func startSession(source: LaunchSource, now: Instant, random: inout SeededRandom, into outputs: inout [Output]) {
        let isColdStart = appState == .closed
        let isFirstLaunch = !hasLaunched
        isForceStopped = false
        hasLaunched = true
        appState = .foreground
        session += 1
        currentScreen = "home"
        outputs.append(.count(isColdStart ? .sessionsColdStarts : .sessionsResumes))
        outputs.append(.intent(.appLaunched(isColdStart: isColdStart, source: source, isFirstLaunch: isFirstLaunch)))
        if isFirstLaunch {
            let token = makeToken(random: &random)
            pushToken = token
            outputs.append(.intent(.pushTokenIssued(token: token)))
            script = Self.onboarding(random: &random)
            script.append(.permissionPrompt)
        } else {
            observePermission(into: &outputs)
            script = []
        }
        if userID == nil, profile.accountID != nil, random.chance(behaviour.loginPerSession) {
            script.append(.event("login_page_displayed", []))
            script.append(.login)
        } else if userID != nil, random.chance(behaviour.logoutPerSession) {
            script.append(.logout)
        }
        let length = behaviour.sessionLength.sampleSpan(using: &random)
        sessionEndsAt = now + max(length, .seconds(5))
        outputs.append(.schedule(.sessionEnd(session: session), at: sessionEndsAt))
        let first = now + nextActivityGap(random: &random)
        outputs.append(.schedule(.activity(session: session), at: min(first, sessionEndsAt)))
    }

    private mutating func performActivity(now: Instant, random: inout SeededRandom, into outputs: inout [Output]) {
        if !script.isEmpty {
            let step = script.removeFirst()
            switch step {
            case .event(let name, let parameters):
                outputs.append(.intent(.userEvent(name: name, parameters: EventParameters.make(parameters, random: &random))))
            case .permissionPrompt:
                permission = profile.grantsPushPermission ? .granted : .denied
                observedPermission = permission
                outputs.append(.count(permission == .granted ? .pushPermissionGranted : .pushPermissionDenied))
                outputs.append(.intent(.pushPermissionChanged(isGranted: permission == .granted)))
            case .login:
                guard let account = profile.accountID, userID == nil else { return }
                userID = account
                let method = ["email", "google", "apple"][random.nextIndex(below: 3)]
                outputs.append(.count(.logins))
                outputs.append(.intent(.loggedIn(userID: account, method: method)))
            case .logout:
                guard let user = userID else { return }
                userID = nil
                outputs.append(.count(.logouts))
                outputs.append(.intent(.loggedOut(userID: user)))
            }
            return
        }
        guard eventWeightTotal > 0 else { return }
        let entry = behaviour.eventMix[random.pickIndex(weights: eventWeights, total: eventWeightTotal)]
        let parameters = EventParameters.make(entry.parameters, kinds: entry.parameterKinds, random: &random)
        if entry.name == "screen_viewed", case .string(let screen)? = parameters["screen_name"] {
            currentScreen = screen
        }
        outputs.append(.intent(.userEvent(name: entry.name, parameters: parameters)))
    }

    private func nextActivityGap(random: inout SeededRandom) -> TimeSpan {
        let meanLength = behaviour.sessionLength.mean
        let perSession = max(behaviour.eventsPerSession, 0.01)
        return .seconds(max(1, random.nextExponential(mean: meanLength / perSession)))
    }

    private mutating func observePermission(into outputs: inout [Output]) {
        guard permission != .notDetermined, permission != observedPermission else { return }
        observedPermission = permission
        outputs.append(.intent(.pushPermissionChanged(isGranted: permission == .granted)))
    }

    private static func onboarding(random: inout SeededRandom) -> [ScriptStep] {
        var steps: [ScriptStep] = [.event("onboarding_displayed", ["screen_index", "variant"])]
        if random.chance(0.25) {
            steps.append(.event("onboarding_skipped", ["step"]))
        } else {
            steps.append(.event("onboarding_step_completed", ["step"]))
            steps.append(.event("onboarding_completed", ["duration_seconds", "steps_count"]))
        }
        return steps
    }

    // MARK: - Scheduling the user's day

    /// Draws the next session start from a Poisson process whose rate follows the device's local
    /// hour (thinning: propose at the peak rate, accept in proportion to the hour's weight).
    private func scheduleNextSession(after now: Instant, random: inout SeededRandom, into outputs: inout [Output]) {
        let weights = behaviour.activeHours
        let meanWeight = weights.reduce(0, +) / Double(weights.count)
        let peakWeight = weights.max() ?? 0
        guard profile.sessionsPerDay > 0, meanWeight > 0 else { return }
        let peakRate = profile.sessionsPerDay / 86_400 * peakWeight / meanWeight
        var candidate = now
        // Bounded: a device whose active hours are all zero but one still finds a slot within days.
        for _ in 0..<10_000 {
            candidate = candidate + .seconds(random.nextExponential(mean: 1 / peakRate))
            let hour = localHour(at: candidate)
            if random.nextUnit() * peakWeight < weights[hour] {
                outputs.append(.schedule(.sessionDue, at: candidate))
                return
            }
        }
    }

    private func localHour(at instant: Instant) -> Int {
        let seconds = instant.microseconds / 1_000_000 + Int64(profile.utcOffsetAtStart)
        let secondOfDay = ((seconds % 86_400) + 86_400) % 86_400
        return Int(secondOfDay / 3_600)
    }

    private func scheduleBackgroundChanges(after now: Instant, random: inout SeededRandom, into outputs: inout [Output]) {
        scheduleTokenRotation(after: now, random: &random, into: &outputs)
        schedulePermissionFlip(after: now, random: &random, into: &outputs)
    }

    private func scheduleTokenRotation(after now: Instant, random: inout SeededRandom, into outputs: inout [Output]) {
        guard profile.pushTokenStyle == .fcm, behaviour.tokenRotationsPerDay > 0 else { return }
        outputs.append(.schedule(.tokenRotation, at: now + .days(random.nextExponential(mean: 1 / behaviour.tokenRotationsPerDay))))
    }

    private func schedulePermissionFlip(after now: Instant, random: inout SeededRandom, into outputs: inout [Output]) {
        guard behaviour.permissionChangesPerDay > 0 else { return }
        outputs.append(.schedule(.permissionFlip, at: now + .days(random.nextExponential(mean: 1 / behaviour.permissionChangesPerDay))))
    }

    // MARK: - Push tokens

    private mutating func makeToken(random: inout SeededRandom) -> String {
        nextTokenSerial += 1
        switch profile.pushTokenStyle {
        case .stableID:
            return random.nextUUID()
        case .fcm:
            // An FCM registration token: an instance id, a colon, and "APA91b" with a long tail,
            // written as bytes into the string's own storage (one allocation).
            let middle: StaticString = ":APA91b"
            let tail = 22 + middle.utf8CodeUnitCount
            return String(utf8Count: tail + 134) { out in
                Self.base64URL(into: &out, 0..<22, random: &random)
                middle.withUTF8Span { out.copy($0, to: 22) }
                Self.base64URL(into: &out, tail..<out.count, random: &random)
            }
        }
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Fills `range` of `buffer` with random base64url characters, six bits of the stream each,
    /// mixed with the run's nonce (wall runs): a token no earlier run of the seed sent, where two
    /// nights once sent the same FCM tokens and a service de-duplicated the second. Simulated
    /// runs (nonce 0) stay the same for a seed.
    private static func base64URL(into buffer: inout MutableSpan<UInt8>, _ range: Range<Int>, random: inout SeededRandom) {
        var bits: UInt64 = 0
        var available = 0
        var word: UInt64 = 0
        for index in range {
            if available < 6 {
                word &+= 1
                bits = random.next() ^ (random.identifierNonce &* (word | 1))
                available = 64
            }
            buffer[index] = alphabet[Int(bits & 63)]
            bits >>= 6
            available -= 6
        }
    }
}

/// A group's behaviour and what is derived from it, made once per group and shared by reference by
/// every device of the group: settings cost memory per group, not per device.
public final class GroupBehaviour: Sendable {
    public let behaviour: Behaviour
    let eventWeights: [Double]
    let eventWeightTotal: Double

    public init(_ behaviour: Behaviour) {
        self.behaviour = behaviour
        eventWeights = behaviour.eventMix.map(\.weight)
        eventWeightTotal = eventWeights.reduce(0, +)
    }
}
