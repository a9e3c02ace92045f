import PushSwarmCore
import PushSwarmMetrics
import PushSwarmSystem

/// A SmartAppPush-integrated app's side of the protocol (spec 002).
///
/// Every event goes through the offline queue ("Event happens → write to local DB … Attempt HTTP
/// send"), one request at a time, with the spec's retry table. Sessions follow the spec's rule:
/// "Generate a new `session_id` (UUID) on each app cold start. Reuse it for all events until the
/// app is backgrounded or terminated", and on Android "A full background → foreground transition
/// creates a new session".
struct SmartAppPushClient: PlatformClient {
    private let shared: SharedSettings
    var settings: SmartAppPushSettings { shared.value }
    let variant: SmartAppPushClientProfile.Variant
    /// The fields this client leaves out, one bit per `EventField` (by its place in `allCases`).
    private let omitted: UInt16
    private var queue: OfflineQueue
    /// The session's id, kept as its 16 bytes (written as text into each event), where its text
    /// took a string of 80 bytes more per device. All zero while there is none: a version-4
    /// UUID never is. (Two words rather than an optional, which would take a third.)
    private var session = UUIDValue(high: 0, low: 0)
    var sessionID: String? { session.high == 0 ? nil : session.string }

    init(settings: SmartAppPushSettings, variant: SmartAppPushClientProfile.Variant, omittedFields: Set<SmartAppPushMessages.EventField>) {
        self.init(settings: SharedSettings(settings), variant: variant, omittedFields: omittedFields)
    }

    init(settings: SharedSettings, variant: SmartAppPushClientProfile.Variant, omittedFields: Set<SmartAppPushMessages.EventField>) {
        self.shared = settings
        self.variant = variant
        omitted = omittedFields.reduce(0) { $0 | $1.bit }
        queue = OfflineQueue(policy: settings.queuePolicy)
    }

    var pendingRequests: Int { queue.count }

    mutating func dropOldestWaiting(reason: String, into actions: inout [DeviceAction]) -> Bool {
        queue.dropOldestWaiting(reason: reason, into: &actions)
    }

    mutating func handle(_ intent: LifecycleIntent, device: DeviceSnapshot, now: Instant, random: inout SeededRandom, into actions: inout [DeviceAction]) {
        switch intent {
        case .installed, .appBackgrounded, .appClosed, .pushTokenIssued, .notificationDismissed, .notificationNotDisplayed:
            // No call: the token travels with every event ("Registers or updates the device").
            return
        case .appLaunched(let isColdStart, let source, _):
            session = random.nextUUIDValue()
            if isColdStart { queue.appLaunched(now: now, into: &actions) }
            sendEvent("app_opened", parameters: ["source": .string(source.rawValue)], device: device, now: now, random: &random, into: &actions)
        case .userEvent(let name, let parameters):
            sendEvent(name, parameters: parameters, device: device, now: now, random: &random, into: &actions)
        case .loggedIn(_, let method):
            sendEvent("logged_in", parameters: ["method": .string(method)], device: device, now: now, random: &random, into: &actions)
        case .loggedOut(let userID):
            // Sent as the user who is leaving; later events are anonymous again.
            var leaving = device
            leaving.userID = userID
            sendEvent("logged_out", parameters: [:], device: leaving, now: now, random: &random, into: &actions)
        case .pushPermissionChanged(let isGranted):
            sendEvent(isGranted ? "push_permission_granted" : "push_permission_denied", parameters: [:], device: device, now: now, random: &random, into: &actions)
        case .pushTokenRotated(let oldToken, let newToken):
            // "The `POST /devices/refresh-token` endpoint exists for FCM integrations where tokens
            // can rotate. **OneSignal apps do not need this endpoint.**"
            guard variant == .fcm else { return }
            refreshToken(old: oldToken, new: newToken, device: device, now: now, into: &actions)
        case .notificationDisplayed(let notification):
            guard settings.sendsPushReceived else { return }
            sendEvent("push_received", parameters: ["campaign_id": .string(notification.campaign)], device: device, now: now, random: &random, into: &actions)
        case .notificationTapped(let notification):
            // "Don't send open tracking for every push received — only when the user **taps**".
            if let token = notification.data["tracking_token"] {
                reportOpened(trackingToken: token, now: now, into: &actions)
            }
            sendEvent("push_opened", parameters: ["campaign_id": .string(notification.campaign)], device: device, now: now, random: &random, into: &actions)
        }
    }

    /// An event "Registers or updates the device (token + push permission status)": an install from
    /// before the run once sent the first event every new install sends, its first `app_opened`.
    mutating func warmUp(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        sendEvent("app_opened", parameters: ["source": .string("organic")], device: device, now: now, random: &random, into: &actions)
        return actions
    }

    mutating func handle(_ completion: ExchangeCompletion, device: DeviceSnapshot, now: Instant, random: inout SeededRandom, into actions: inout [DeviceAction]) {
        queue.complete(completion, now: now, random: &random, unixNow: device.clock.realUnixSeconds(now), into: &actions)
    }

    mutating func timerFired(_ timer: UInt64, device: DeviceSnapshot, now: Instant, random: inout SeededRandom, into actions: inout [DeviceAction]) {
        queue.timerFired(timer, now: now, into: &actions)
    }

    // The array-returning forms, for tests: they wrap the ones above.

    mutating func handle(_ intent: LifecycleIntent, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        handle(intent, device: device, now: now, random: &random, into: &actions)
        return actions
    }

    mutating func handle(_ completion: ExchangeCompletion, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        handle(completion, device: device, now: now, random: &random, into: &actions)
        return actions
    }

    mutating func timerFired(_ timer: UInt64, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        timerFired(timer, device: device, now: now, random: &random, into: &actions)
        return actions
    }

    // MARK: - Requests

    private static let null: StaticString = "null"

    /// The event's body is written field by field straight into bytes, in the spec's order: no
    /// JSON tree is built for it. Its ledger key hashes the fingerprint's fields as the mock will
    /// read them back.
    private mutating func sendEvent(_ name: String, parameters: JSONObject, device: DeviceSnapshot, now: Instant, random: inout SeededRandom, into actions: inout [DeviceAction]) {
        // An event outside any session (the app woken in the background) starts one.
        if session.high == 0 { session = random.nextUUIDValue() }
        let profile = device.profile
        let token = device.pushToken ?? ""
        let eventTime = device.clock.timestampText(now, zone: profile.locale.timeZone)

        // An event with an FCM token is about 600 bytes: room for it at once.
        var body = JSONWriter(capacity: 768)
        // Where the context and the params are in the body: in canonical form, as the mock will
        // write them for the fingerprint, so the ledger key hashes those bytes.
        var contextBytes: Range<Int>?
        var paramsBytes: Range<Int>?
        body.beginObject()
        for (position, field) in SmartAppPushMessages.EventField.ordered.enumerated() where omitted & 1 << position == 0 {
            let fieldName = shared.quotedFieldNames[position]
            switch field {
            case .tenantID: body.key(fieldName); body.string(shared.quotedTenantID)
            case .apiKey: body.key(fieldName); body.string(shared.quotedAPIKey)
            case .appUserID:
                // "Before that, omit it — SmartAppPush auto-generates anon:{device_token}."
                if let user = device.userID { body.member(fieldName, string: user) }
            case .eventName: body.member(fieldName, string: name)
            // Digits and RFC 3339's separators; a token's base64url characters and colon, or a
            // UUID (`DeviceLifecycle.makeToken`): nothing JSON escapes, so not looked through.
            case .eventTime: eventTime.withUTF8 { body.member(fieldName, utf8: $0) }
            case .deviceToken: token.withUTF8Span { body.member(fieldName, utf8: $0) }
            case .platform: body.member(fieldName, string: profile.os.rawValue)
            // "Send `push_permission_granted` with every event."
            case .pushPermissionGranted: body.key(fieldName); body.bool(device.pushPermissionGranted)
            case .timezone: body.member(fieldName, string: profile.locale.timeZone)
            case .language: body.member(fieldName, string: profile.locale.language)
            case .country: body.member(fieldName, string: profile.locale.country)
            case .sessionID: session.withUTF8 { body.member(fieldName, utf8: $0) }
            case .params:
                if !parameters.isEmpty {
                    body.key(fieldName)
                    let start = body.valueStart()
                    body.write(.object(parameters), sortingKeys: true)
                    paramsBytes = start..<body.count
                }
            case .context:
                body.key(fieldName)
                // Its members in byte order of their names: its canonical form.
                let start = body.valueStart()
                body.beginObject()
                body.member(shared.quotedContextMembers.appVersion, string: profile.appVersion)
                body.member(shared.quotedContextMembers.osVersion, string: profile.osVersion)
                body.member(shared.quotedContextMembers.screen, string: device.currentScreen)
                body.endObject()
                contextBytes = start..<body.count
            }
        }
        body.endObject()

        var key = eventTime.withUTF8 { eventTime in
            SmartAppPushMessages.EventKey(
                tenantID: shared.value.tenantID, appID: shared.value.appID, appUserID: device.userID, eventName: name,
                eventTime: eventTime, deviceToken: token
            )
        }
        body.withBytes { written in
            Self.null.withUTF8Span { null in
                if let contextBytes { key.add(canonicalJSON: written.extracting(contextBytes)) } else { key.add(canonicalJSON: null) }
                if let paramsBytes { key.add(canonicalJSON: written.extracting(paramsBytes)) } else { key.add(canonicalJSON: null) }
            }
        }
        let request = Request(
            method: "POST", path: SmartAppPushMessages.Path.events, headers: Header.jsonContentType, body: body.takeBytes()
        )
        queue.enqueue(OfflineQueue.Item(operation: SmartAppPushMessages.Operation.events, request: request, ledgerKey: key.key), now: now, into: &actions)
    }

    private mutating func reportOpened(trackingToken: String, now: Instant, into actions: inout [DeviceAction]) {
        let body: JSONValue = [
            "tenant_id": .string(settings.tenantID), "api_key": .string(settings.apiKey), "tracking_token": .string(trackingToken),
        ]
        let request = Request(
            method: "POST", path: SmartAppPushMessages.Path.pushesOpened, headers: Header.jsonContentType,
            body: JSONWriter.bytes(of: body)
        )
        let key = SmartAppPushMessages.openKey(tenantID: settings.tenantID, trackingToken: trackingToken)
        queue.enqueue(OfflineQueue.Item(operation: SmartAppPushMessages.Operation.pushesOpened, request: request, ledgerKey: key), now: now, into: &actions)
    }

    private mutating func refreshToken(old: String, new: String, device: DeviceSnapshot, now: Instant, into actions: inout [DeviceAction]) {
        var body = JSONObject()
        body["tenant_id"] = .string(settings.tenantID)
        body["api_key"] = .string(settings.apiKey)
        body["old_token"] = .string(old)
        body["new_token"] = .string(new)
        if let user = device.userID { body["app_user_id"] = .string(user) }
        body["platform"] = .string(device.profile.os.rawValue)
        let request = Request(
            method: "POST", path: SmartAppPushMessages.Path.refreshToken, headers: Header.jsonContentType,
            body: JSONWriter.bytes(of: .object(body))
        )
        let key = SmartAppPushMessages.refreshKey(tenantID: settings.tenantID, oldToken: old, newToken: new)
        queue.enqueue(OfflineQueue.Item(operation: SmartAppPushMessages.Operation.refreshToken, request: request, ledgerKey: key), now: now, into: &actions)
    }
}
