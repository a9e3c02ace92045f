import PushSwarmCore
public import PushSwarmMetrics

/// A Smartico-integrated app (spec 000): the WebSocket protocol while the app is in the
/// foreground, and the public HTTP API for push reporting.
///
/// The rules it follows, in the spec's words (and the research notes' where the spec is silent):
/// - "The native app is establishing WebSocket connection … sending INIT_SESSION_REQUEST and
///   waiting for the response … sending IDENTIFY_USER_REQUEST and waiting for the response".
/// - "user identification should be performed only once per WebSocket session"; "When the user
///   logs out, you will need to close the WebSocket and reopen it".
/// - LOGIN "can be sent when a new user session is created": after a login, and when the app
///   comes back after `logicalSessionGap` without activity.
/// - REGISTER_PUSH_NOTIFICATIONS_TOKEN_REQUEST "in case push token for notifications is obtained,
///   changed, or no longer valid"; when no session is active the change rides on the next IDENTIFY.
/// - "The server will periodically ping the client … the client should respond with a PONG";
///   the client pings after 29 s of silence; requests time out after 30 s.
/// - "Every request sent from client to server should contain … ts … uuid".
/// - The socket closes soon after the app goes to background and reopens in the foreground; a
///   socket the service or the network dropped reopens after a fixed 1 s, with no back-off.
/// - CLIENT_ENGAGEMENT_EVENT: "The client should look only for the "cid" with value 110"; popups
///   re-sent on every IDENTIFY are shown once (deduplicated by `engagement_uid`).
struct SmarticoClient: PlatformClient {
    enum Integration: String, Sendable, CaseIterable {
        /// Sections 1–5: the WebSocket session, and HTTP reporting of pushes.
        case full
        /// "if your goal is to support only push notifications, you can implement only point 4":
        /// token registration over HTTP POST, push reports over HTTP GET.
        case pushOnly
    }

    private enum Phase {
        case connecting
        case initSent
        case initialized
        case identifySent
        case identified
    }

    /// A request on the socket waiting for its reply.
    private struct Waiting {
        var uuid: String
        var operation: String
        var sentAt: Instant
        var key: LedgerKey?
        var deadline: Instant
    }

    private static let reconnectTimer: UInt64 = 1 << 60
    private static let backgroundCloseTimer: UInt64 = 2 << 60
    private static let silenceTimer: UInt64 = 3 << 60
    private static let timeoutTimer: UInt64 = 4 << 60
    private static let kindMask: UInt64 = 0xF << 60

    let settings: SmarticoSettings
    let integration: Integration
    let sendsEmptySessionID: Bool

    private(set) var deviceID: String?
    private var socket: UInt64?
    private var nextSocket: UInt64 = 0
    private var phase = Phase.connecting
    private var waiting: [Int: [Waiting]] = [:]
    private var isForeground = false
    /// Makes reconnect and background-close timers of an earlier state stale.
    private var generation: UInt64 = 0
    private var lastActivity = Instant.start
    private var silenceTimerArmed = false
    private var lastLogicalActivity: Instant?
    private var needsLogin = false
    private var reported: (token: String?, status: Int)?
    private var seenEngagements: Set<String> = []
    private var nextRequestID: UInt64 = 0
    private var httpInFlight: Set<UInt64> = []
    private var httpKeys: [UInt64: LedgerKey] = [:]
    private var pendingLanguage: String?

    init(settings: SmarticoSettings, integration: Integration, sendsEmptySessionID: Bool) {
        self.settings = settings
        self.integration = integration
        self.sendsEmptySessionID = sendsEmptySessionID
    }

    var pendingRequests: Int { waiting.values.reduce(0) { $0 + $1.count } + httpInFlight.count }

    mutating func dropOldestWaiting(reason: String, into actions: inout [DeviceAction]) -> Bool {
        // From the socket with the most waiting (sockets are few: one a device, rarely two).
        // Ties go to the lowest socket number, so that a seed's run is the same every time.
        guard let socket = waiting.filter({ !$0.value.isEmpty }).max(by: { ($0.value.count, -$0.key) < ($1.value.count, -$1.key) })?.key else { return false }
        waiting[socket]?.removeFirst()
        actions.append(.drop(reason: reason))
        return true
    }

    var isSocketOpen: Bool { socket != nil && phase != .connecting }

    mutating func started(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        deviceID = random.nextUUID()
        // An install from before the run told the service its token long ago.
        if device.profile.isInstalledAtStart {
            reported = (device.pushToken, status(device))
        }
        return []
    }

    /// An install from before the run told the service its user's token long ago, over its socket
    /// or the public API. The warm-up tells it the way that needs no session (section 4,
    /// "Registering push token via POST Request"): the same registration (`cid` 1003), one request.
    mutating func warmUp(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        reported = nil
        return registerOverHTTPIfChanged(device: device, now: now)
    }

    mutating func handle(_ intent: LifecycleIntent, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        switch intent {
        case .installed:
            deviceID = random.nextUUID()
            reported = nil
            seenEngagements = []
            return []
        case .appLaunched:
            isForeground = true
            generation += 1
            if let last = lastLogicalActivity, now - last <= settings.logicalSessionGap {} else { needsLogin = true }
            lastLogicalActivity = now
            guard integration == .full else { return registerOverHTTPIfChanged(device: device, now: now) }
            var actions = socket == nil ? open(device: device, now: now) : []
            if random.chance(settings.languageChangePerSession) { actions += changeLanguage(device: device, now: now, random: &random) }
            return actions
        case .appBackgrounded:
            isForeground = false
            generation += 1
            guard socket != nil else { return [] }
            let delay = device.profile.os == .ios ? settings.backgroundSocketClose.ios : settings.backgroundSocketClose.android
            return [.schedule(token: Self.backgroundCloseTimer | generation, at: now + delay)]
        case .appClosed:
            isForeground = false
            generation += 1
            return closeSocket(now: now)
        case .userEvent:
            lastLogicalActivity = now
            return []
        case .loggedIn:
            lastLogicalActivity = now
            needsLogin = true
            guard integration == .full else { return registerOverHTTPIfChanged(device: device, now: now) }
            // Identify on this socket if it has not identified anyone yet.
            return phase == .initialized ? identify(device: device, now: now, random: &random) : []
        case .loggedOut:
            // "When the user logs out, you will need to close the WebSocket and reopen it."
            guard integration == .full, socket != nil else { return [] }
            var actions = closeSocket(now: now)
            if isForeground { actions += open(device: device, now: now) }
            return actions
        case .pushTokenIssued, .pushTokenRotated, .pushPermissionChanged:
            guard integration == .full else { return registerOverHTTPIfChanged(device: device, now: now) }
            return phase == .identified ? registerTokenIfChanged(device: device, now: now, random: &random) : []
        case .notificationDisplayed(let notification):
            // "Reporting Delivery" and "Reporting Impression".
            return report("engagement_delivered", notification, device: device, now: now, random: &random)
                + report("engagement_impression", notification, device: device, now: now, random: &random)
        case .notificationNotDisplayed(let notification):
            return report("engagement_delivered", notification, device: device, now: now, random: &random)
                + report("engagement_failed", notification, device: device, now: now, random: &random)
        case .notificationTapped(let notification):
            return report("engagement_action", notification, device: device, now: now, random: &random)
        case .notificationDismissed:
            return []
        }
    }

    mutating func handle(_ completion: ExchangeCompletion, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard httpInFlight.remove(completion.requestID) != nil else { return [] }
        let key = httpKeys.removeValue(forKey: completion.requestID)
        guard case .response(let response) = completion.outcome, response.status == 200, let key else { return [] }
        return [.confirmed(key)]
    }

    mutating func handle(_ event: SocketEvent, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard event.socket == socket else { return [] }
        lastActivity = now
        switch event {
        case .opened:
            return initSession(device: device, now: now, random: &random)
        case .failed, .closed:
            // Requests waiting on the socket end with it; a foreground app reconnects after the
            // SDK's fixed delay.
            var actions = failWaiting(now: now, reason: "socketClosed")
            socket = nil
            phase = .connecting
            actions.append(.count(event.isFailure ? .smarticoConnectFailed : .smarticoDroppedByService))
            if isForeground {
                generation += 1
                actions.append(.schedule(token: Self.reconnectTimer | generation, at: now + settings.reconnectDelay))
            }
            return actions
        case .message(_, let text):
            return received(text, device: device, now: now, random: &random)
        }
    }

    mutating func timerFired(_ timer: UInt64, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        let payload = timer & ~Self.kindMask
        switch timer & Self.kindMask {
        case Self.reconnectTimer:
            guard payload == generation, isForeground, socket == nil else { return [] }
            return [.count(.smarticoReconnects)] + open(device: device, now: now)
        case Self.backgroundCloseTimer:
            guard payload == generation, !isForeground else { return [] }
            return closeSocket(now: now)
        case Self.silenceTimer:
            silenceTimerArmed = false
            guard let socket, phase != .connecting else { return [] }
            let due = lastActivity + settings.silenceBeforePing
            guard now >= due else { return armSilenceTimer() }
            return request(cid: SmarticoMessages.Cid.ping, body: [:], operation: SmarticoMessages.Operation.ping, on: socket, device: device, now: now, random: &random)
        case Self.timeoutTimer:
            return expire(now: now)
        default:
            return []
        }
    }

    // MARK: - The socket

    private mutating func open(device: DeviceSnapshot, now: Instant) -> [DeviceAction] {
        nextSocket += 1
        socket = nextSocket
        phase = .connecting
        let query = URLQuery.build([("master", nil), ("domain", settings.appID), ("version", device.profile.appVersion)])
        return [.openSocket(SocketOpen(id: nextSocket, operation: SmarticoMessages.Operation.connect, path: "\(SmarticoMessages.socketPath)?\(query)", timeout: settings.requestTimeout))]
    }

    private mutating func closeSocket(now: Instant) -> [DeviceAction] {
        guard let socket else { return [] }
        var actions = failWaiting(now: now, reason: "socketClosedByApp")
        actions.append(.closeSocket(socket))
        self.socket = nil
        phase = .connecting
        return actions
    }

    private mutating func armSilenceTimer() -> [DeviceAction] {
        guard !silenceTimerArmed else { return [] }
        silenceTimerArmed = true
        return [.schedule(token: Self.silenceTimer, at: lastActivity + settings.silenceBeforePing)]
    }

    /// Sends a message that waits for its reply (`cid`'s entry in `Cid.replies`).
    private mutating func request(cid: Int, body: JSONObject, operation: String, key: Bool = false, on socket: UInt64, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        let (text, uuid) = message(cid: cid, body: body, device: device, now: now, random: &random)
        let reply = SmarticoMessages.Cid.replies[cid] ?? cid
        let deadline = now + settings.requestTimeout
        waiting[reply, default: []].append(Waiting(uuid: uuid, operation: operation, sentAt: now, key: key ? SmarticoMessages.messageKey(uuid: uuid) : nil, deadline: deadline))
        lastActivity = now
        return [.sendOnSocket(socket: socket, text: text, operation: operation), .schedule(token: Self.timeoutTimer, at: deadline)] + armSilenceTimer()
    }

    /// A message with no reply (PONG, a popup's impression).
    private mutating func notify(cid: Int, body: JSONObject, on socket: UInt64, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> DeviceAction {
        lastActivity = now
        return .sendOnSocket(socket: socket, text: message(cid: cid, body: body, device: device, now: now, random: &random).text, operation: nil)
    }

    /// "Every request sent from client to server should contain two operations fields: ts - is a
    /// Unix timestamp with milliseconds; uuid - random unique identifier of the request".
    private func message(cid: Int, body: JSONObject, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> (text: String, uuid: String) {
        var object: JSONObject = ["cid": .number(Double(cid))]
        for member in body.members { object[member.key] = member.value }
        let uuid = random.nextUUID()
        object["ts"] = .number(Double(device.clock.unixMicroseconds(now) / 1_000))
        object["uuid"] = .string(uuid)
        return (JSONWriter.text(of: .object(object)), uuid)
    }

    private func ua(_ device: DeviceSnapshot) -> JSONValue {
        let profile = device.profile
        return [
            "fp": .number(Double(profile.index % 2_000_000_000)),
            "agent": .string("\(settings.appID)/\(profile.appVersion) (\(profile.osVersion))"),
            "device_type": "NATIVE_PHONE",
            // "Very important to send player timezone offset in the same format web browser does it (GMT+3 = -180)".
            "tzoffset": .number(Double(-profile.utcOffsetAtStart / 60)),
            "os": .string(profile.os == .ios ? "iOS" : "Android"),
        ]
    }

    /// LOGIN's payload: the UA object's members, each named with `ua_` before it.
    private func loginPayload(_ device: DeviceSnapshot) -> JSONValue {
        guard case .object(let members) = ua(device) else { return .object([:]) }
        return .object(JSONObject(members.members.map { (key: "ua_" + $0.key, value: $0.value) }))
    }

    private func status(_ device: DeviceSnapshot) -> Int {
        SmarticoMessages.userStatus(granted: device.pushPermissionGranted, asked: device.profile.isInstalledAtStart || device.pushToken != nil)
    }

    // MARK: - Protocol steps

    private mutating func initSession(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard let socket else { return [] }
        phase = .initSent
        var body = JSONObject()
        body["label_key"] = .string(settings.labelKey)
        body["brand_key"] = settings.brandKey.map(JSONValue.string) ?? .null
        body["device_id"] = .string(deviceID ?? "")
        body["ua"] = ua(device)
        body["page"] = .string("app://\(settings.appID)")
        body["tracker_version"] = .string(settings.trackerVersion)
        // "session_id … Unique session ID generated on the client side"; an empty one is the
        // deliberately broken client the research notes warn of.
        body["session_id"] = .string(sendsEmptySessionID ? "" : random.nextUUID())
        return request(cid: SmarticoMessages.Cid.initSession, body: body, operation: SmarticoMessages.Operation.initSession, on: socket, device: device, now: now, random: &random)
    }

    private mutating func identify(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard let socket, phase == .initialized, let user = device.userID else { return [] }
        phase = .identifySent
        var body = JSONObject()
        body["ext_user_id"] = .string(user)
        if let token = device.pushToken { body["token"] = .string(token) }
        body["platform"] = .number(Double(SmarticoMessages.platformCode(device.profile.os)))
        body["pushNotificationUserStatus"] = .number(Double(status(device)))
        body["ua"] = ua(device)
        body["tracker_version"] = .string(device.profile.appVersion)
        body["payload"] = [:]
        // The token and status ride on the IDENTIFY: the service knows them once it answers.
        reported = (device.pushToken, status(device))
        return request(cid: SmarticoMessages.Cid.identifyUser, body: body, operation: SmarticoMessages.Operation.identifyUser, on: socket, device: device, now: now, random: &random)
    }

    private mutating func registerTokenIfChanged(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard let socket, phase == .identified, let token = device.pushToken else { return [] }
        let current = status(device)
        if let reported, reported.token == token, reported.status == current { return [] }
        reported = (token, current)
        let body: JSONObject = [
            "token": .string(token), "platform": .number(Double(SmarticoMessages.platformCode(device.profile.os))),
            "pushNotificationUserStatus": .number(Double(current)),
        ]
        return request(cid: SmarticoMessages.Cid.registerPushToken, body: body, operation: SmarticoMessages.Operation.registerPushToken, key: true, on: socket, device: device, now: now, random: &random)
    }

    /// "In case the user changes the language in the native application (not wrapper) Client
    /// should send to Server the core_language_change event": now if the session is up, else
    /// once it is.
    private mutating func changeLanguage(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        let choices = ["en", "de", "es", "pt", "fr", "it", "pl"]
        pendingLanguage = choices[random.nextIndex(below: choices.count)]
        return sendPendingLanguage(device: device, now: now, random: &random)
    }

    private mutating func sendPendingLanguage(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard let socket, phase == .identified || phase == .initialized, let language = pendingLanguage else { return [] }
        pendingLanguage = nil
        // "ISO 639-1 code of user language (2 symbols code)".
        let body: JSONObject = ["eventType": "core_language_changed", "payload": ["language": .string(language)]]
        return request(cid: SmarticoMessages.Cid.event, body: body, operation: SmarticoMessages.Operation.languageChanged, key: true, on: socket, device: device, now: now, random: &random)
    }

    private mutating func received(_ text: String, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard let socket, let message = try? JSONParser.parse(Array(text.utf8)), let cid = message["cid"]?.integerValue else {
            return [.count(.smarticoUnreadableMessages)]
        }
        var actions: [DeviceAction] = armSilenceTimer()
        switch cid {
        case SmarticoMessages.Cid.ping:
            // "The client should send this message when the server sends a PING."
            actions.append(notify(cid: SmarticoMessages.Cid.pong, body: [:], on: socket, device: device, now: now, random: &random))
            actions.append(.count(.smarticoServerPingsAnswered))
        case SmarticoMessages.Cid.clientEngagementEvent:
            guard let uid = message["engagement_uid"]?.stringValue else { return actions + [.count(.smarticoPopupsWithoutUID)] }
            guard seenEngagements.insert(uid).inserted else { return actions + [.count(.smarticoPopupsRepeated)] }
            actions.append(.count(.smarticoPopupsShown))
            actions.append(notify(cid: SmarticoMessages.Cid.engagementImpression, body: ["engagement_uid": .string(uid)], on: socket, device: device, now: now, random: &random))
        case SmarticoMessages.Cid.sawShowSpinPush:
            actions.append(.count(.smarticoMiniGamesShown))
        default:
            guard var queue = waiting[cid], !queue.isEmpty else { return actions + [.count(.smarticoUnexpectedReplies)] }
            let exchange = queue.removeFirst()
            waiting[cid] = queue.isEmpty ? nil : queue
            let errorCode = message["errCode"]?.numberValue ?? 0
            let isSuccess = errorCode == 0
            // A socket reply is counted as 200 when errCode is 0, 400 otherwise.
            actions.append(.completed(ExchangeCompletion(
                requestID: 0, operation: exchange.operation, sentAt: exchange.sentAt,
                outcome: .response(Response(status: isSuccess ? 200 : 400, body: Array(text.utf8)))
            )))
            if isSuccess, let key = exchange.key { actions.append(.confirmed(key)) }
            actions += advance(after: cid, isSuccess: isSuccess, device: device, now: now, random: &random)
        }
        return actions
    }

    /// The next protocol step after a reply.
    private mutating func advance(after reply: Int, isSuccess: Bool, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard let socket else { return [] }
        switch reply {
        case SmarticoMessages.Cid.initSessionResponse:
            guard isSuccess else { return [.count(.smarticoInitRefused)] }
            phase = .initialized
            return identify(device: device, now: now, random: &random) + sendPendingLanguage(device: device, now: now, random: &random)
        case SmarticoMessages.Cid.identifyUserResponse:
            guard isSuccess else { return [.count(.smarticoIdentifyRefused)] }
            phase = .identified
            var actions: [DeviceAction] = []
            if needsLogin {
                needsLogin = false
                // "payload->ua: Same as UA object explained above", its members prefixed ua_ as in
                // the spec's example (ua_fp, ua_agent, ua_device_type, ua_tzoffset, ua_os).
                actions += request(cid: SmarticoMessages.Cid.login, body: ["payload": loginPayload(device)], operation: SmarticoMessages.Operation.login, key: true, on: socket, device: device, now: now, random: &random)
            }
            actions += registerTokenIfChanged(device: device, now: now, random: &random)
            return actions
        default:
            return []
        }
    }

    /// Requests past their deadline end as timeouts.
    private mutating func expire(now: Instant) -> [DeviceAction] {
        var actions: [DeviceAction] = []
        for (reply, queue) in waiting {
            let (late, onTime) = (queue.filter { $0.deadline <= now }, queue.filter { $0.deadline > now })
            for exchange in late {
                actions.append(.completed(ExchangeCompletion(requestID: 0, operation: exchange.operation, sentAt: exchange.sentAt, outcome: .timeout)))
            }
            waiting[reply] = onTime.isEmpty ? nil : onTime
        }
        return actions
    }

    private mutating func failWaiting(now: Instant, reason: String) -> [DeviceAction] {
        let actions: [DeviceAction] = waiting.values.flatMap { $0 }.sorted { $0.sentAt < $1.sentAt }.map { exchange in
            .completed(ExchangeCompletion(requestID: 0, operation: exchange.operation, sentAt: exchange.sentAt, outcome: .transportError(reason: reason)))
        }
        waiting = [:]
        return actions
    }

    // MARK: - HTTP public API

    /// Section 4, "Registering push token via POST Request", for push-only integrations.
    private mutating func registerOverHTTPIfChanged(device: DeviceSnapshot, now: Instant) -> [DeviceAction] {
        guard let user = device.userID, let token = device.pushToken, device.pushPermissionGranted else { return [] }
        let current = status(device)
        if let reported, reported.token == token, reported.status == current { return [] }
        reported = (token, current)
        let body: JSONValue = [
            "app_package_id": .string(settings.appID), "brand_key": settings.brandKey.map(JSONValue.string) ?? .null,
            "api_key": .string(settings.labelKey), "ext_user_id": .string(user),
            "pushNotificationUserStatus": 0, "platform": .number(Double(SmarticoMessages.platformCode(device.profile.os))),
            "cid": .number(Double(SmarticoMessages.Cid.registerPushToken)), "token": .string(token),
        ]
        let request = Request(method: "POST", path: SmarticoMessages.publicPath, headers: [Header("Content-Type", "application/json")], body: JSONWriter.bytes(of: body))
        return sendHTTP(request, operation: SmarticoMessages.Operation.httpRegisterToken, key: SmarticoMessages.httpTokenKey(user: user, token: token))
    }

    /// Section 5: a GET with the event as URL-encoded JSON.
    private mutating func report(_ eventType: String, _ notification: PushNotification, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard let engagement = notification.data["engagement_uid"], let messageID = notification.data["message_id"].flatMap({ Int($0) }) else {
            return [.count(.smarticoPushWithoutEngagement)]
        }
        let uuid = random.nextUUID()
        var payload: JSONObject = ["engagement_uid": .string(engagement), "message_id": .number(Double(messageID)), "activity_type": 40]
        if eventType == "engagement_action" { payload["action"] = .string(notification.data["action"] ?? "dp:ok") }
        let event: JSONValue = [
            "uuid": .string(uuid), "ts": .number(Double(device.clock.unixMicroseconds(now) / 1_000)), "event_type": .string(eventType),
            "user_ext_id": .string(notification.data["user_ext_id"] ?? device.userID ?? ""), "payload": .object(payload),
        ]
        var items: [(String, String?)] = [("api_key", settings.labelKey)]
        if let brand = settings.brandKey { items.append(("brand_key", brand)) }
        items += [("version", device.profile.appVersion), ("event", JSONWriter.text(of: event))]
        let request = Request(method: "GET", path: "\(SmarticoMessages.publicPath)?\(URLQuery.build(items))")
        return sendHTTP(request, operation: SmarticoMessages.Operation.report(eventType), key: SmarticoMessages.messageKey(uuid: uuid))
    }

    private mutating func sendHTTP(_ request: Request, operation: String, key: LedgerKey) -> [DeviceAction] {
        nextRequestID += 1
        httpInFlight.insert(nextRequestID)
        httpKeys[nextRequestID] = key
        return [.send(OutgoingRequest(id: nextRequestID, operation: operation, request: request, timeout: settings.requestTimeout, retryNumber: 0))]
    }
}

extension SocketEvent {
    var isFailure: Bool { if case .failed = self { true } else { false } }
}

/// Smartico's client's own run counters.
extension CounterKey {
    public static let smarticoConnectFailed = CounterKey("smartico.connectFailed")
    public static let smarticoDroppedByService = CounterKey("smartico.droppedByService")
    public static let smarticoIdentifyRefused = CounterKey("smartico.identifyRefused")
    public static let smarticoInitRefused = CounterKey("smartico.initRefused")
    public static let smarticoMiniGamesShown = CounterKey("smartico.miniGamesShown")
    public static let smarticoPopupsRepeated = CounterKey("smartico.popupsRepeated")
    public static let smarticoPopupsShown = CounterKey("smartico.popupsShown")
    public static let smarticoPopupsWithoutUID = CounterKey("smartico.popupsWithoutUID")
    public static let smarticoPushWithoutEngagement = CounterKey("smartico.pushWithoutEngagement")
    public static let smarticoReconnects = CounterKey("smartico.reconnects")
    public static let smarticoServerPingsAnswered = CounterKey("smartico.serverPingsAnswered")
    public static let smarticoUnexpectedReplies = CounterKey("smartico.unexpectedReplies")
    public static let smarticoUnreadableMessages = CounterKey("smartico.unreadableMessages")
}
