import PushSwarmCore
public import PushSwarmMetrics

/// A PushExpress-integrated app (spec 003), with the back-off of the spec or of one of the SDKs.
///
/// The rules it follows, in the spec's words:
/// - "Access some variable from app persistent local storage, for example ic_id … If non-nil and
///   non-empty variable found, assume it is existing install"; otherwise create the instance from
///   the `ic_token`, and "Store aquired ic_id in local storage. Storage MUST be resistant to app
///   updates and MUST be cleared on app removal": kept across launches, cleared on a new install.
/// - "As soon as possible after app startup issue first update app info request … Periodically
///   update app info with received update_interval_sec interval": an info loop per running app.
/// - "In case of any error (non-200 response or invalid response object), retry infinitely with
///   exponential backoff": creation and info updates never give up while the app runs.
/// - Events ("delivered", "clicked"; "onscreen", "background", "closed") are sent once: "errors do
///   not require attention and do not need to be handled in any way".
struct PushExpressClient: PlatformClient {
    private enum Purpose {
        case create
        /// An info update from loop `loop` (nil: a one-off after a login or token change).
        case info(loop: Int?)
        case event(LedgerKey?)
        case deactivate
    }

    /// One info loop: its retry state within the current error episode.
    private struct Loop {
        var retries = 0
        var firstDelay = TimeSpan.zero
    }

    private static let createTimer: UInt64 = 1 << 60
    private static let loopTimer: UInt64 = 2 << 60
    private static let kindMask: UInt64 = 0xF << 60

    let settings: PushExpressSettings
    let kind: PushExpressClientKind
    let omittedFields: Set<String>

    private(set) var icToken: String?
    private(set) var instanceID: String?
    private var onscreenCount = 0
    /// The last info update's body, hashed (one-offs that repeat it are not sent).
    private var lastInfoDigest: Int?
    private var onscreenSeconds = 0.0
    private var foregroundSince: Instant?
    /// Whether the app's process runs (its loops with it). A new generation makes the timers of
    /// the previous process stale.
    private var isRunning = false
    private var generation: UInt64 = 0
    private var loops: [Loop] = []
    private var createRetries = 0
    private var createFirstDelay = TimeSpan.zero
    private var isCreating = false
    private var waitingForInstance: [(operation: String, build: EventBuilder)] = []
    private var inFlight: [UInt64: Purpose] = [:]
    private var nextID: UInt64 = 0
    private var updateInterval: TimeSpan
    /// The warm-up's install: it creates its instance and sends its info once, no loop after.
    private var isWarmingUp = false
    /// After a warm-up (`remember(warmUp:)`): the ic_token it made and the `ic_id` the service
    /// issued, if it issued one.
    private var remembered: String?

    /// An event's request and ledger key, built once the instance id is known.
    private typealias EventBuilder = @Sendable (String) -> (Request, LedgerKey?)

    init(settings: PushExpressSettings, kind: PushExpressClientKind, omittedFields: Set<String>) {
        self.settings = settings
        self.kind = kind
        self.omittedFields = omittedFields
        updateInterval = settings.updateInterval
    }

    var pendingRequests: Int { inFlight.count + waitingForInstance.count }

    mutating func dropOldestWaiting(reason: String, into actions: inout [DeviceAction]) -> Bool {
        guard !waitingForInstance.isEmpty else { return false }
        waitingForInstance.removeFirst()
        actions.append(.drop(reason: reason))
        return true
    }

    /// Info loops this install runs now (more than one only with the Android SDK's bug).
    var loopCount: Int { loops.count }

    mutating func started(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        // An install from before the run created its instance long ago.
        guard device.profile.isInstalledAtStart, let token = device.pushToken else { return [] }
        if let remembered {
            // After a warm-up against a real service: the ic_token it made and the ic_id the
            // service issued. Without an ic_id the install creates its instance when its app
            // starts ("retry infinitely"); it never makes one up.
            let parts = remembered.split(separator: " ")
            icToken = parts.first.map(String.init)
            instanceID = parts.count > 1 ? String(parts[1]) : nil
            if instanceID == nil {
                // Its app's process is still creating its instance: it goes on doing so.
                onscreenCount = 1
                return startProcess(device: device, now: now, random: &random)
            }
        } else {
            // Known to the built-in mock from before the run (`knowDevice`), which derives the same.
            icToken = PushExpressMessages.preRunICToken(pushToken: token)
            instanceID = icToken.map(PushExpressMessages.instanceID(icToken:))
        }
        onscreenCount = 1 + random.nextIndex(below: 40)
        onscreenSeconds = Double(onscreenCount) * (60 + random.nextUnit() * 600)
        return []
    }

    /// An install from before the run once created its instance ("create instance from
    /// ic_token") and sent its first info ("As soon as possible after app startup issue first
    /// update app info request"), carrying its transport token: the warm-up does both, retrying
    /// as the SDK does, and keeps the `ic_id` the service issued.
    mutating func warmUp(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard device.pushToken != nil else { return [] }
        // "Generate UUIDv4 (or UUIDv7) to use as ic_token": a version 4 UUID, unique to the run.
        icToken = random.nextUUID()
        instanceID = nil
        isWarmingUp = true
        isRunning = true
        generation += 1
        return createInstance(now: now)
    }

    /// The ic_token the warm-up made and, after a space, the ic_id the service issued (none: it
    /// issued none).
    var warmUpMemory: String? {
        guard isWarmingUp, let icToken else { return nil }
        return instanceID.map { "\(icToken) \($0)" } ?? icToken
    }

    mutating func remember(warmUp memory: String) { remembered = memory }

    mutating func handle(_ intent: LifecycleIntent, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        switch intent {
        case .installed:
            // "Generate UUIDv4 … to use as ic_token. Store ic_token in local storage": a new
            // install has empty storage, so no ic_id either.
            icToken = random.nextUUID()
            instanceID = nil
            onscreenCount = 0
            onscreenSeconds = 0
            return []
        case .appLaunched(let isColdStart, _, _):
            onscreenCount += 1
            foregroundSince = now
            var actions: [DeviceAction] = []
            // iOS suspends a backgrounded app: its loops start again on resume, as on a cold start.
            if isColdStart || !isRunning { actions += startProcess(device: device, now: now, random: &random) }
            actions += lifecycleEvent("onscreen", device: device, now: now)
            return actions
        case .appBackgrounded:
            accumulateScreenTime(now: now)
            let actions = lifecycleEvent("background", device: device, now: now)
            if device.profile.os == .ios { stopProcess() }
            return actions
        case .appClosed:
            accumulateScreenTime(now: now)
            // "closed -- app closed (if can be detected)": Android's process sees its end; a
            // suspended iOS app does not.
            let actions = isRunning && device.profile.os == .android ? lifecycleEvent("closed", device: device, now: now) : []
            stopProcess()
            return actions
        case .loggedIn, .pushTokenIssued, .pushTokenRotated, .pushPermissionChanged:
            guard isRunning, instanceID != nil else { return [] }
            return sendInfo(loop: nil, device: device, now: now)
        case .loggedOut:
            guard isRunning, let instanceID else { return [] }
            let request = Request(method: "POST", path: PushExpressMessages.deactivatePath(appID: settings.appID, instanceID: instanceID), headers: Header.jsonContentType, body: Array("{}".utf8))
            return send(request, operation: PushExpressMessages.Operation.deactivate, purpose: .deactivate)
        case .notificationDisplayed(let notification):
            // "delivered -- if possible, send after the notification has been successfully
            // displayed to the user".
            return notificationEvent("delivered", notification, device: device, now: now)
        case .notificationTapped(let notification):
            // "clicked -- MUST be sent after the user clicks on the notification".
            return notificationEvent("clicked", notification, device: device, now: now)
        case .userEvent, .notificationDismissed, .notificationNotDisplayed:
            return []
        }
    }

    mutating func handle(_ completion: ExchangeCompletion, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard let purpose = inFlight.removeValue(forKey: completion.requestID) else { return [] }
        let response: Response? = if case .response(let response) = completion.outcome { response } else { nil }
        // "All HTTP response codes above 400 MUST be considered as error"; 2xx is success.
        let isSuccess = response.map { (200..<300).contains($0.status) } ?? false
        switch purpose {
        case .create:
            isCreating = false
            guard isSuccess, let body = response?.body, let id = (try? JSONParser.parse(body))?["id"]?.stringValue, !id.isEmpty else {
                guard isRunning else { return [] }
                return retryCreate(now: now, random: &random)
            }
            instanceID = id
            createRetries = 0
            var actions: [DeviceAction] = []
            if let icToken { actions.append(.confirmed(PushExpressMessages.instanceKey(icToken: icToken))) }
            guard isRunning else { return actions }
            loops = [Loop()]
            actions += sendInfo(loop: 0, device: device, now: now)
            for waiting in waitingForInstance {
                let (request, key) = waiting.build(id)
                actions += send(request, operation: waiting.operation, purpose: .event(key))
            }
            waitingForInstance = []
            return actions
        case .info(let loop):
            if isSuccess, let seconds = response.flatMap({ try? JSONParser.parse($0.body) })?["update_interval_sec"]?.numberValue, seconds >= 1 {
                updateInterval = .seconds(seconds)
            }
            guard let loop, isRunning, loop < loops.count else { return [] }
            if isSuccess {
                // The warm-up's one update went through: its loop ends there.
                if isWarmingUp { loops = []; return [] }
                return loopSucceeded(loop, now: now)
            }
            return retryLoop(loop, now: now, random: &random)
        case .event(let key):
            guard isSuccess, let key else { return [] }
            return [.confirmed(key)]
        case .deactivate:
            return []
        }
    }

    mutating func timerFired(_ timer: UInt64, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        let timerGeneration = (timer & ~Self.kindMask) >> 20
        guard isRunning, timerGeneration == generation & 0xFF_FFFF_FFFF else { return [] }
        switch timer & Self.kindMask {
        case Self.createTimer:
            return createInstance(now: now)
        case Self.loopTimer:
            let loop = Int(timer & 0xF_FFFF)
            guard loop < loops.count else { return [] }
            return sendInfo(loop: loop, device: device, now: now)
        default:
            return []
        }
    }

    // MARK: - The app's process and its loops

    private mutating func startProcess(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        isRunning = true
        generation += 1
        loops = []
        createRetries = 0
        if icToken == nil { icToken = random.nextUUID() }
        guard instanceID != nil else { return createInstance(now: now) }
        loops = [Loop()]
        return sendInfo(loop: 0, device: device, now: now)
    }

    private mutating func stopProcess() {
        isRunning = false
        generation += 1
        loops = []
        isCreating = false
    }

    private mutating func accumulateScreenTime(now: Instant) {
        if let since = foregroundSince { onscreenSeconds += (now - since).seconds }
        foregroundSince = nil
    }

    private func timerToken(_ kind: UInt64, index: Int = 0) -> UInt64 {
        kind | (generation & 0xFF_FFFF_FFFF) << 20 | UInt64(index)
    }

    private mutating func loopSucceeded(_ loop: Int, now: Instant) -> [DeviceAction] {
        loops[loop].retries = 0
        var actions: [DeviceAction] = [.schedule(token: timerToken(Self.loopTimer, index: loop), at: now + updateInterval)]
        if kind == .android {
            // v1.4's loop starts another info loop on every pass and never cancels the old one.
            if loops.count < settings.maximumLoops {
                loops.append(Loop())
                actions.append(.schedule(token: timerToken(Self.loopTimer, index: loops.count - 1), at: now + updateInterval))
                actions.append(.count(.pushExpressLoopsStarted))
            } else {
                actions.append(.count(.pushExpressLoopsCapped))
            }
        }
        return actions
    }

    private mutating func retryLoop(_ loop: Int, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        loops[loop].retries += 1
        if loops[loop].retries == 1 { loops[loop].firstDelay = PushExpressClientKind.randomInitialDelay(random: &random) }
        let retry = loops[loop].retries
        let delay = kind.delay(beforeRetry: retry, first: loops[loop].firstDelay, random: &random)
        return [.backoff(delay: delay, retryNumber: retry), .schedule(token: timerToken(Self.loopTimer, index: loop), at: now + delay)]
    }

    private mutating func retryCreate(now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        createRetries += 1
        if createRetries == 1 { createFirstDelay = PushExpressClientKind.randomInitialDelay(random: &random) }
        let delay = kind.delay(beforeRetry: createRetries, first: createFirstDelay, random: &random)
        return [.backoff(delay: delay, retryNumber: createRetries), .schedule(token: timerToken(Self.createTimer), at: now + delay)]
    }

    // MARK: - Requests

    private mutating func createInstance(now: Instant) -> [DeviceAction] {
        guard !isCreating, let icToken else { return [] }
        isCreating = true
        var body = JSONObject()
        // "ic_token, required … ext_id, optional".
        if !omittedFields.contains("ic_token") { body["ic_token"] = .string(icToken) }
        let request = Request(method: "POST", path: PushExpressMessages.instancesPath(appID: settings.appID), headers: Header.jsonContentType, body: JSONWriter.bytes(of: .object(body)))
        return send(request, operation: PushExpressMessages.Operation.createInstance, purpose: .create, retryNumber: createRetries)
    }

    private mutating func sendInfo(loop: Int?, device: DeviceSnapshot, now: Instant) -> [DeviceAction] {
        guard let instanceID else { return [] }
        let profile = device.profile
        var screenSeconds = onscreenSeconds
        if let since = foregroundSince { screenSeconds += (now - since).seconds }
        var body = JSONObject()
        if !omittedFields.contains("transport_type") { body["transport_type"] = "fcm" }
        if let token = device.pushToken { body["transport_token"] = .string(token) }
        if !omittedFields.contains("platform_type") { body["platform_type"] = .string(profile.os == .ios ? "ios" : "android") }
        body["platform_name"] = .string(Self.platformName(profile))
        if let user = device.userID { body["ext_id"] = .string(user) }
        body["lang"] = .string(profile.locale.language)
        body["country"] = .string(profile.locale.country)
        body["tz_sec"] = .number(Double(profile.utcOffsetAtStart))
        body["tz_name"] = .string(profile.locale.timeZone)
        body["onscreen_count"] = .number(Double(onscreenCount))
        body["onscreen_sec"] = .number(screenSeconds.rounded(.down))
        body["notif_perm_granted"] = .bool(device.pushPermissionGranted)
        body["agent_name"] = .string(kind.agentName)
        let bytes = JSONWriter.bytes(of: .object(body))
        // A one-off update (a login, a token, a permission seen at launch) that says nothing the
        // last update did not: not sent. At app start the loop's first update and such a one-off
        // once went out within a millisecond of each other, identical. The loop's own periodic
        // updates always go ("Periodically update app info with received update_interval_sec").
        var hasher = Hasher()
        hasher.combine(bytes)
        let digest = hasher.finalize()
        if loop == nil, digest == lastInfoDigest { return [.count(.pushExpressInfoUnchanged)] }
        lastInfoDigest = digest
        let request = Request(method: "PUT", path: PushExpressMessages.infoPath(appID: settings.appID, instanceID: instanceID), headers: Header.jsonContentType, body: bytes)
        return send(request, operation: PushExpressMessages.Operation.updateInfo, purpose: .info(loop: loop), retryNumber: loop.map { loops[$0].retries } ?? 0)
    }

    private mutating func lifecycleEvent(_ event: String, device: DeviceSnapshot, now: Instant) -> [DeviceAction] {
        // The Android SDK v1.4 posts lifecycle events with no body at all (research notes).
        let body: [UInt8] = kind == .android ? [] : JSONWriter.bytes(of: ["event": .string(event)])
        let appID = settings.appID
        return sendEvent(operation: PushExpressMessages.Operation.lifecycleEvent) { instanceID in
            (Request(method: "POST", path: PushExpressMessages.lifecyclePath(appID: appID, instanceID: instanceID), headers: body.isEmpty ? [] : Header.jsonContentType, body: body), nil)
        }
    }

    private mutating func notificationEvent(_ event: String, _ notification: PushNotification, device: DeviceSnapshot, now: Instant) -> [DeviceAction] {
        guard let messageID = notification.data[PushExpressMessages.Data.messageID] else { return [.count(.pushExpressNotificationWithoutMsgID)] }
        var body = JSONObject()
        if !omittedFields.contains("msg_id") { body["msg_id"] = .string(messageID) }
        body["event"] = .string(event)
        let bytes = JSONWriter.bytes(of: .object(body))
        let appID = settings.appID
        return sendEvent(operation: PushExpressMessages.Operation.notificationEvent) { instanceID in
            let request = Request(method: "POST", path: PushExpressMessages.notificationPath(appID: appID, instanceID: instanceID), headers: Header.jsonContentType, body: bytes)
            return (request, PushExpressMessages.notificationKey(instanceID: instanceID, messageID: messageID, event: event))
        }
    }

    /// Sends an event now, or keeps it until the instance exists.
    private mutating func sendEvent(operation: String, build: @escaping EventBuilder) -> [DeviceAction] {
        if let instanceID {
            let (request, key) = build(instanceID)
            return send(request, operation: operation, purpose: .event(key))
        }
        guard waitingForInstance.count < settings.eventBufferCapacity else { return [.drop(reason: "pushexpressEventBufferFull")] }
        waitingForInstance.append((operation, build))
        return []
    }

    private mutating func send(_ request: Request, operation: String, purpose: Purpose, retryNumber: Int = 0) -> [DeviceAction] {
        nextID += 1
        inFlight[nextID] = purpose
        return [.send(OutgoingRequest(id: nextID, operation: operation, request: request, timeout: settings.requestTimeout, retryNumber: retryNumber))]
    }

    /// "platform_name, optional. Readable platform name and version, like, android_api_33".
    static func platformName(_ profile: DeviceProfile) -> String {
        let version = profile.osVersion.split(separator: " ").last.map(String.init) ?? profile.osVersion
        if profile.os == .ios { return "ios_\(version)" }
        let major = Int(version.split(separator: ".").first ?? "") ?? 14
        return "android_api_\(major + 20)"
    }
}

/// PushExpress's client's own run counters.
extension CounterKey {
    public static let pushExpressInfoUnchanged = CounterKey("pushexpress.infoUnchanged")
    public static let pushExpressLoopsCapped = CounterKey("pushexpress.loopsCapped")
    public static let pushExpressLoopsStarted = CounterKey("pushexpress.loopsStarted")
    public static let pushExpressNotificationWithoutMsgID = CounterKey("pushexpress.notificationWithoutMsgID")
}
