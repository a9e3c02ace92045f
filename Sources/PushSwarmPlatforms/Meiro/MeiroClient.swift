import PushSwarmCore
import PushSwarmMetrics

/// A Meiro-integrated app's side of mobile push (spec 004).
///
/// The rules it follows, in the spec's words:
/// - "this event should be sent once the user gives consent to receive mobile push
///   notifications": `fcm_registration_token_registered` only with permission and a token.
/// - "periodically sending the FCM Registration Token Refreshed event once a month, regardless of
///   the application's running state": a timer every `refreshInterval`, from a random phase for
///   installs that existed before the run.
/// - "user_id … store it persistently within the app's storage … In case user_id is removed from
///   the app storage, it should be regenerated": one per install, a new one on a new install.
/// - session_id: "Its ID changes once the user is inactive for more than 30 minutes."
struct MeiroClient: PlatformClient {
    static let refreshTimer: UInt64 = 1 << 62
    static let sessionTimeout = TimeSpan.minutes(30)

    let settings: MeiroSettings
    /// Fields a deliberately broken integration leaves out (`user_id`, `registration_token`, …).
    let omittedFields: Set<String>
    private var queue: OfflineQueue
    private(set) var userID: String?
    private(set) var sessionID: String?
    private var lastActivity: Instant?
    /// The token the service last heard registered (nil: none yet).
    private(set) var registeredToken: String?
    /// The user_id this install's warm-up registered with (`remember(warmUp:)`; empty: a warm-up
    /// ran and did not register it).
    private var remembered: String?
    /// Whether the service answered a registration of this install with a success.
    private var registrationTaken = false

    init(settings: MeiroSettings, omittedFields: Set<String> = [], queuePolicy: OfflineQueue.Policy? = nil) {
        self.settings = settings
        self.omittedFields = omittedFields
        queue = OfflineQueue(policy: queuePolicy ?? settings.makeQueuePolicy())
    }

    var pendingRequests: Int { queue.count }

    mutating func dropOldestWaiting(reason: String, into actions: inout [DeviceAction]) -> Bool {
        queue.dropOldestWaiting(reason: reason, into: &actions)
    }

    mutating func started(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard device.profile.isInstalledAtStart else { return [] }
        let drawn = random.nextUUID()
        // The user_id its warm-up registered under, if it had one: the same install's storage.
        userID = remembered.flatMap { $0.isEmpty ? nil : $0 } ?? drawn
        let phase = TimeSpan(microseconds: Int64(random.nextUnit() * Double(settings.refreshInterval.microseconds)))
        var actions: [DeviceAction] = [.schedule(token: Self.refreshTimer, at: now + phase)]
        guard device.pushPermissionGranted, let token = device.pushToken else { return actions }
        if remembered == "" {
            // A warm-up ran and the service never took this install's registration: it is still
            // in the SDK's queue, and goes out now.
            actions += register(token, device: device, now: now, random: &random)
        } else {
            // An install from before the run registered when its user consented.
            registeredToken = token
        }
        return actions
    }

    mutating func handle(_ intent: LifecycleIntent, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        switch intent {
        case .installed:
            // A new install has empty storage: a new user_id, nothing registered.
            userID = random.nextUUID()
            registeredToken = nil
            return [.schedule(token: Self.refreshTimer, at: now + settings.refreshInterval)]
        case .appLaunched(let isColdStart, _, _):
            touch(now: now, device: device)
            return isColdStart ? queue.appLaunched(now: now) : []
        case .userEvent, .loggedIn, .loggedOut:
            touch(now: now, device: device)
            return []
        case .pushPermissionChanged(let isGranted):
            guard isGranted, let token = device.pushToken else { return [] }
            return register(token, device: device, now: now, random: &random)
        case .pushTokenIssued(let token), .pushTokenRotated(_, let token):
            guard device.pushPermissionGranted else { return [] }
            return register(token, device: device, now: now, random: &random)
        case .appBackgrounded, .appClosed, .notificationDisplayed, .notificationNotDisplayed, .notificationDismissed, .notificationTapped:
            return []
        }
    }

    /// "This event should be sent once the user gives consent to receive mobile push
    /// notifications": an install from before the run whose user consented registered its token.
    mutating func warmUp(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard device.pushPermissionGranted, let token = device.pushToken else { return [] }
        return register(token, device: device, now: now, random: &random)
    }

    /// The user_id, once the service took the registration (an answer of 2xx).
    var warmUpMemory: String? { registrationTaken ? userID : nil }

    mutating func remember(warmUp memory: String) { remembered = memory }

    mutating func handle(_ completion: ExchangeCompletion, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        if completion.operation == MeiroMessages.Operation.registered && completion.isSuccess { registrationTaken = true }
        return queue.complete(completion, now: now, random: &random, unixNow: device.clock.realUnixSeconds(now))
    }

    mutating func timerFired(_ timer: UInt64, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard timer == Self.refreshTimer else { return queue.timerFired(timer, now: now) }
        var actions: [DeviceAction] = [.schedule(token: Self.refreshTimer, at: now + settings.refreshInterval)]
        // Only a registered token is refreshed; the background task sends no session.
        if let token = registeredToken, device.pushToken == token, device.pushPermissionGranted {
            let timestamp = utc(now, device: device)
            actions += send(
                eventType: MeiroMessages.EventType.refreshed, operation: MeiroMessages.Operation.refreshed, token: token,
                eventData: ["fcm_registration_token_refresh_timestamp": .string(timestamp)], session: nil,
                device: device, now: now, random: &random
            )
        }
        return actions
    }

    // MARK: - Requests

    private mutating func touch(now: Instant, device: DeviceSnapshot) {
        if let lastActivity, now - lastActivity <= Self.sessionTimeout, sessionID != nil {
            self.lastActivity = now
            return
        }
        lastActivity = now
        sessionID = userID.map { MeiroMessages.sessionID(unixMilliseconds: device.clock.unixMicroseconds(now) / 1_000, userID: $0) }
    }

    private mutating func register(_ token: String, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard registeredToken != token else { return [] }
        registeredToken = token
        touch(now: now, device: device)
        return send(
            eventType: MeiroMessages.EventType.registered, operation: MeiroMessages.Operation.registered, token: token,
            eventData: nil, session: sessionID, device: device, now: now, random: &random
        )
    }

    private func utc(_ now: Instant, device: DeviceSnapshot) -> String {
        RFC3339.format(unixMicroseconds: device.clock.unixMicroseconds(now), offsetSeconds: 0, utcAsZ: true)
    }

    private mutating func send(
        eventType: String, operation: String, token: String, eventData: JSONObject?, session: String?,
        device: DeviceSnapshot, now: Instant, random: inout SeededRandom
    ) -> [DeviceAction] {
        if userID == nil { userID = random.nextUUID() }
        let user = userID ?? ""
        let profile = device.profile
        let timestamp = utc(now, device: device)
        var body = JSONObject()
        body["user_id"] = .string(user)
        body["event_type"] = .string(eventType)
        body["event_timestamp"] = .string(timestamp)
        body["version"] = .string(MeiroMessages.eventVersion)
        if let session { body["session_id"] = .string(session) }
        if let eventData { body["event_data"] = .object(eventData) }
        body["app"] = [
            "id": .string(settings.appID), "name": .string(settings.appName), "version": .string(profile.appVersion),
            "language": .string(profile.locale.language),
        ]
        body["os"] = ["type": .string(profile.os.rawValue), "version": .string(profile.osVersion)]
        body["firebase"] = ["project_id": .string(settings.projectID), "registration_token": .string(token)]
        for field in omittedFields {
            body[field] = nil
            if var firebase = body["firebase"]?.objectValue, firebase[field] != nil {
                firebase[field] = nil
                body["firebase"] = .object(firebase)
            }
        }
        let request = Request(method: "POST", path: MeiroMessages.path, headers: Header.jsonContentType, body: JSONWriter.bytes(of: .object(body)))
        let key = MeiroMessages.eventKey(userID: user, eventType: eventType, timestamp: timestamp, token: token)
        return queue.enqueue(OfflineQueue.Item(operation: operation, request: request, ledgerKey: key), now: now)
    }
}
