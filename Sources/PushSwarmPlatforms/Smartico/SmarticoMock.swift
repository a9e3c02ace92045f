import PushSwarmCore
import PushSwarmMetrics

/// The built-in Smartico service (spec 000): the WebSocket session protocol, server PINGs,
/// popups and mini-games on open sessions, and the public HTTP API.
///
/// - A message with a bad field gets its reply cid with `errCode` 1 and `errMsg` naming the field
///   ("errCode … 0 > all good, 1 > Same error happened"); one without a reply is answered by
///   closing the session with 1008. Messages without `ts` and `uuid` are refused the same way.
/// - INIT with an empty `session_id` is refused and the address blocked for `blockDuration`
///   (research notes: "Empty session_id => backend rejects and blocks the IP ~60 min"): its
///   handshakes and HTTP calls get 403 until then.
/// - IDENTIFY only after INIT and "only once per WebSocket session"; it re-sends the user's pending
///   popups ("Server re-sends pending engagements on every IDENTIFY").
/// - A PING after `pingInterval` without a word from the client; a session that answered none of
///   the last `missedPongsBeforeClose` is closed (4000).
/// - The ledger holds LOGIN, language events and token registrations (by their `uuid`), popup
///   impressions (by `engagement_uid`), and the HTTP API's reports (by `uuid`) and registrations.
struct SmarticoMock: MockService {
    private struct Session {
        var source: SourceAddress
        var initialized = false
        var user: String?
        var unansweredPings = 0
        /// When the client last sent anything: the service pings only a silent client.
        var lastHeard: Instant
    }

    private struct User {
        var token: String?
        var permitted = false
        var sessions: Set<UInt64> = []
        /// Popups not yet shown, as sent (re-sent on each IDENTIFY until an impression arrives).
        var pendingPopups: [(uid: String, text: String)] = []
    }

    let settings: SmarticoSettings
    private var sessions: [UInt64: Session] = [:]
    private var users: [String: User] = [:]
    /// Users in the order the service first heard of them (campaigns walk this order).
    private var userOrder: [String] = []
    private var blockedUntil: [SourceAddress: Instant] = [:]
    private var campaignMessages: [SessionMessage] = []
    private var serial: UInt64 = 0

    init(settings: SmarticoSettings) {
        self.settings = settings
    }

    /// The calendar's start, Unix seconds: the scenario's in simulated time, today's in wall time.
    private var calendarStartUnixSeconds: Int64 = 0

    mutating func setCalendar(startUnixSeconds: Int64) { calendarStartUnixSeconds = startUnixSeconds }

    /// The server's clock at `now`, Unix milliseconds.
    private func serverMilliseconds(at now: Instant) -> Double {
        Double(calendarStartUnixSeconds * 1_000 + now.microseconds / 1_000)
    }

    func serves(path: String) -> Bool { path == SmarticoMessages.publicPath }

    func servesSocket(path: String) -> Bool { path == SmarticoMessages.socketPath }

    private func isBlocked(_ source: SourceAddress, at now: Instant) -> Bool {
        blockedUntil[source].map { now < $0 } ?? false
    }

    private static func blockedResponse() -> Response {
        Response(status: 403, headers: [Header("Content-Type", "application/json")], body: JSONWriter.bytes(of: ["errCode": 403, "errMsg": "this address is blocked after a session with an empty session_id"]))
    }

    // MARK: - WebSocket

    mutating func socketOpened(session: UInt64, path: String, from source: SourceAddress, at now: Instant) -> SocketReply {
        if isBlocked(source, at: now) { return SocketReply(refusal: Self.blockedResponse(), operation: "smartico.blocked") }
        // "…/websocket/services?master&domain={{your domain}}&version={{your client code version}}".
        guard let query = URLQuery.parameters(ofTarget: path), query["master"] != nil,
              let domain = query["domain"], !domain.isEmpty, let version = query["version"], !version.isEmpty
        else {
            let body = JSONWriter.bytes(of: ["errCode": 1, "errMsg": "the URL needs ?master&domain=<app id>&version=<app version>"])
            return SocketReply(refusal: Response(status: 400, headers: [Header("Content-Type", "application/json")], body: body), operation: SmarticoMessages.Operation.connect)
        }
        sessions[session] = Session(source: source, lastHeard: now)
        return SocketReply(wake: settings.mock.pingInterval, operation: SmarticoMessages.Operation.connect)
    }

    mutating func socketClosed(session: UInt64, at now: Instant) {
        guard let closed = sessions.removeValue(forKey: session), let user = closed.user else { return }
        users[user]?.sessions.remove(session)
    }

    mutating func socketTimer(session: UInt64, at now: Instant) -> SocketReply {
        guard let state = sessions[session] else { return SocketReply(operation: SmarticoMessages.Operation.ping) }
        let quietSince = now - state.lastHeard
        if quietSince < settings.mock.pingInterval {
            // The client spoke since: no PING needed yet.
            return SocketReply(wake: settings.mock.pingInterval - quietSince, operation: SmarticoMessages.Operation.ping)
        }
        if state.unansweredPings >= settings.mock.missedPongsBeforeClose {
            return SocketReply(close: (4000, "no PONG to the last \(settings.mock.missedPongsBeforeClose) PINGs"), operation: SmarticoMessages.Operation.ping)
        }
        sessions[session]?.unansweredPings += 1
        return SocketReply(messages: [serverMessage(cid: SmarticoMessages.Cid.ping, [:], at: now)], wake: settings.mock.pingInterval, operation: SmarticoMessages.Operation.ping)
    }

    mutating func socketMessage(session: UInt64, text: String, from source: SourceAddress, at now: Instant) -> SocketReply {
        guard sessions[session] != nil else { return SocketReply(close: (1008, "no such session"), operation: SmarticoMessages.Operation.unknown) }
        sessions[session]?.lastHeard = now
        sessions[session]?.unansweredPings = 0
        guard let message = try? JSONParser.parse(Array(text.utf8)), let object = message.objectValue else {
            return SocketReply(close: (1008, "messages are JSON objects"), operation: SmarticoMessages.Operation.unknown)
        }
        // A whole number an Int holds: `1e300` passed a check for roundness and trapped in `Int(_:)`.
        guard let cid = object["cid"]?.integerValue else {
            return SocketReply(close: (1008, "cid is required (an integer)"), operation: SmarticoMessages.Operation.unknown)
        }
        let operation = Self.operation(of: cid)
        // "Every request sent from client to server should contain two operations fields: ts … uuid".
        var problem: String?
        if object["ts"]?.numberValue == nil { problem = "ts is required (Unix time in milliseconds)" }
        else if (object["uuid"]?.stringValue ?? "").isEmpty { problem = "uuid is required" }
        if let problem { return refuse(cid: cid, problem, operation: operation, at: now) }
        let uuid = object["uuid"]?.stringValue ?? ""
        let initialized = sessions[session]?.initialized ?? false
        if cid != SmarticoMessages.Cid.initSession, cid != SmarticoMessages.Cid.pong, cid != SmarticoMessages.Cid.ping, !initialized {
            return refuse(cid: cid, "INIT_SESSION must come first on a socket", operation: operation, at: now)
        }

        switch cid {
        case SmarticoMessages.Cid.initSession:
            return initSession(session, object, from: source, at: now)
        case SmarticoMessages.Cid.identifyUser:
            return identify(session, object, at: now)
        case SmarticoMessages.Cid.pong:
            return SocketReply(operation: SmarticoMessages.Operation.pong)
        case SmarticoMessages.Cid.ping:
            return SocketReply(messages: [serverMessage(cid: SmarticoMessages.Cid.pong, [:], at: now)], operation: operation)
        case SmarticoMessages.Cid.login:
            guard sessions[session]?.user != nil else { return refuse(cid: cid, "LOGIN needs an identified user", operation: operation, at: now) }
            // "payload->ua: Same as UA object explained above": device_type, tzoffset and os are
            // required there ("Very important to send player timezone offset"), ua_-prefixed here.
            let payload = object["payload"]?.objectValue
            guard let deviceType = payload?["ua_device_type"]?.stringValue, !deviceType.isEmpty,
                  Self.integer(payload?["ua_tzoffset"], in: -840...840) != nil, !(payload?["ua_os"]?.stringValue ?? "").isEmpty
            else {
                return refuse(cid: cid, "payload needs ua_device_type, ua_tzoffset (minutes, GMT+3 = -180) and ua_os", operation: operation, at: now)
            }
            return SocketReply(messages: [reply(SmarticoMessages.Cid.loginResponse, at: now)], accepted: SmarticoMessages.messageKey(uuid: uuid), operation: operation)
        case SmarticoMessages.Cid.logout:
            return SocketReply(messages: [reply(SmarticoMessages.Cid.logoutResponse, at: now)], operation: operation)
        case SmarticoMessages.Cid.event:
            guard object["eventType"]?.stringValue == "core_language_changed" else { return refuse(cid: cid, "eventType must be core_language_changed", operation: operation, at: now) }
            // "payload -> language … ISO 639-1 code of user language (2 symbols code)".
            guard let language = object["payload"]?["language"]?.stringValue, language.count == 2 || language.contains("-") else {
                return refuse(cid: cid, "payload.language must be an ISO 639-1 code", operation: operation, at: now)
            }
            return SocketReply(messages: [reply(SmarticoMessages.Cid.eventResponse, at: now)], accepted: SmarticoMessages.messageKey(uuid: uuid), operation: operation)
        case SmarticoMessages.Cid.registerPushToken:
            guard let user = sessions[session]?.user else { return refuse(cid: cid, "REGISTER_PUSH_TOKEN needs an identified user", operation: operation, at: now) }
            // "token String *", "pushNotificationUserStatus Integer *".
            guard let token = object["token"]?.stringValue, !token.isEmpty else { return refuse(cid: cid, "token is required", operation: operation, at: now) }
            guard let status = Self.integer(object["pushNotificationUserStatus"], in: 0...4) else {
                return refuse(cid: cid, "pushNotificationUserStatus is required (0-4)", operation: operation, at: now)
            }
            if let platform = object["platform"], Self.integer(platform, in: 0...11) == nil { return refuse(cid: cid, "platform must be 0-11", operation: operation, at: now) }
            register(user: user, token: token, permitted: status == 0)
            return SocketReply(messages: [reply(SmarticoMessages.Cid.registerPushTokenResponse, at: now)], accepted: SmarticoMessages.messageKey(uuid: uuid), operation: operation)
        case SmarticoMessages.Cid.engagementImpression, SmarticoMessages.Cid.engagementAction, SmarticoMessages.Cid.engagementFailed:
            guard let uid = object["engagement_uid"]?.stringValue, !uid.isEmpty else {
                return SocketReply(close: (1008, "engagement_uid is required"), operation: operation)
            }
            if let user = sessions[session]?.user { users[user]?.pendingPopups.removeAll { $0.uid == uid } }
            let key = cid == SmarticoMessages.Cid.engagementImpression ? SmarticoMessages.impressionKey(engagementUID: uid) : SmarticoMessages.messageKey(uuid: uuid)
            return SocketReply(accepted: key, operation: operation)
        default:
            // Unknown classes are ignored, as the spec asks of clients.
            return SocketReply(operation: SmarticoMessages.Operation.unknown)
        }
    }

    private mutating func initSession(_ session: UInt64, _ object: JSONObject, from source: SourceAddress, at now: Instant) -> SocketReply {
        let operation = SmarticoMessages.Operation.initSession
        if sessions[session]?.initialized == true { return refuse(cid: 3, "INIT_SESSION was already sent on this socket", operation: operation, at: now) }
        if let problem = Self.validateInit(object, labelKey: settings.labelKey) { return refuse(cid: 3, problem, operation: operation, at: now) }
        if object["session_id"]?.stringValue == "" {
            // The real backend's answer to an empty session id: refused, and the address blocked.
            blockedUntil[source] = now + settings.mock.blockDuration
            var answer = refuse(cid: 3, "session_id must not be empty; this address is blocked for \(Int(settings.mock.blockDuration.seconds / 60)) min", operation: operation, at: now)
            answer.close = (1008, "empty session_id")
            return answer
        }
        sessions[session]?.initialized = true
        var body = JSONObject()
        body["errCode"] = 0
        body["errMsg"] = .null
        body["products"] = [100]
        body["payload"] = ["country": "XX", "city": "Loopback", "ip": .string(source.description), "s": "mock01"]
        body["settings"] = ["FCM_SENDER_ID": "123", "DYNAMIC_IMAGE_DOMAIN": "https://img.smr.vc/"]
        return SocketReply(messages: [serverMessage(cid: SmarticoMessages.Cid.initSessionResponse, body, at: now)], operation: operation)
    }

    /// The first INIT_SESSION field that breaks the spec's table, nil when valid.
    static func validateInit(_ object: JSONObject, labelKey: String) -> String? {
        func string(_ name: String) -> String? {
            guard let value = object[name] else { return "\(name) is required" }
            return value.stringValue == nil ? "\(name) must be a string" : nil
        }
        for name in ["label_key", "device_id", "page", "tracker_version", "session_id"] {
            if let problem = string(name) { return problem }
        }
        // "brand_key … or null if the label is standalone": present, a string or null.
        guard let brand = object["brand_key"] else { return "brand_key is required (null for a standalone label)" }
        if brand != .null, brand.stringValue == nil { return "brand_key must be a string or null" }
        guard object["label_key"]?.stringValue == labelKey else { return "unknown label_key" }
        if (object["device_id"]?.stringValue ?? "").isEmpty { return "device_id must not be empty" }
        // "The version of the library … Format X.Y.Z".
        let version = (object["tracker_version"]?.stringValue ?? "").split(separator: ".", omittingEmptySubsequences: false)
        if version.count != 3 || !version.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) }) { return "tracker_version must be X.Y.Z" }
        guard let ua = object["ua"]?.objectValue else { return "ua is required (an object)" }
        // "device_type String * NATIVE_PHONE or NATIVE_TABLET", "tzoffset Integer *", "os String *".
        guard let deviceType = ua["device_type"]?.stringValue, !deviceType.isEmpty else { return "ua.device_type is required" }
        guard integer(ua["tzoffset"], in: -840...840) != nil else { return "ua.tzoffset is required (minutes, GMT+3 = -180)" }
        guard let os = ua["os"]?.stringValue, !os.isEmpty else { return "ua.os is required" }
        return nil
    }

    private mutating func identify(_ session: UInt64, _ object: JSONObject, at now: Instant) -> SocketReply {
        let operation = SmarticoMessages.Operation.identifyUser
        // "user identification should be performed only once per WebSocket session".
        guard sessions[session]?.user == nil else { return refuse(cid: 5, "IDENTIFY_USER was already sent on this socket; reopen it to identify again", operation: operation, at: now) }
        guard let user = object["ext_user_id"]?.stringValue, !user.isEmpty else { return refuse(cid: 5, "ext_user_id is required", operation: operation, at: now) }
        if let platform = object["platform"], Self.integer(platform, in: 0...11) == nil { return refuse(cid: 5, "platform must be 0-11", operation: operation, at: now) }
        let status = object["pushNotificationUserStatus"].flatMap { Self.integer($0, in: 0...4) }
        if object["pushNotificationUserStatus"] != nil, status == nil { return refuse(cid: 5, "pushNotificationUserStatus must be 0-4", operation: operation, at: now) }
        sessions[session]?.user = user
        if users[user] == nil {
            users[user] = User()
            userOrder.append(user)
        }
        users[user]?.sessions.insert(session)
        if let token = object["token"]?.stringValue, !token.isEmpty { register(user: user, token: token, permitted: status == 0) }
        var body = JSONObject()
        body["errCode"] = 0
        body["errMsg"] = .null
        body["public_username"] = .string(user)
        body["avatar_id"] = .string(Hex.string(Array(SHA256.hash(Array(user.utf8)).bytes.prefix(6))))
        body["native_app_gf_url"] = .string("https://libs.smartico.ai/wrapper-gf.html?label_key=\(settings.labelKey)&user_ext_id=\(URLQuery.encode(user))")
        body["native_app_popup_url"] = .string("https://libs.smartico.ai/wrapper-popup.html?label_key=\(settings.labelKey)&user_ext_id=\(URLQuery.encode(user))")
        body["props"] = ["core_is_test_account": false]
        let pending = users[user]?.pendingPopups.map(\.text) ?? []
        return SocketReply(messages: [serverMessage(cid: SmarticoMessages.Cid.identifyUserResponse, body, at: now)] + pending, operation: operation)
    }

    private mutating func register(user: String, token: String, permitted: Bool) {
        if users[user] == nil {
            users[user] = User()
            userOrder.append(user)
        }
        users[user]?.token = token
        users[user]?.permitted = permitted
    }

    /// The request's reply cid with errCode 1; a request without a reply closes the session.
    private func refuse(cid: Int, _ problem: String, operation: String, at now: Instant) -> SocketReply {
        guard let reply = SmarticoMessages.Cid.replies[cid] else { return SocketReply(close: (1008, problem), operation: operation) }
        return SocketReply(messages: [serverMessage(cid: reply, ["errCode": 1, "errMsg": .string(problem)], at: now)], operation: operation)
    }

    private func reply(_ cid: Int, at now: Instant) -> String {
        serverMessage(cid: cid, ["errCode": 0, "errMsg": .null], at: now)
    }

    private func serverMessage(cid: Int, _ body: JSONObject, at now: Instant) -> String {
        var object = body
        object["cid"] = .number(Double(cid))
        // "ts": the server's time, Unix milliseconds ("ts": 1632835680057 in the spec's replies).
        object["ts"] = .number(serverMilliseconds(at: now))
        object["uuid"] = .string(Hex.uuidV4(SHA256.hash(Array("\(cid):\(now.microseconds):\(body.count)".utf8)).bytes))
        return JSONWriter.text(of: .object(object))
    }

    static func operation(of cid: Int) -> String {
        switch cid {
        case SmarticoMessages.Cid.initSession: SmarticoMessages.Operation.initSession
        case SmarticoMessages.Cid.identifyUser: SmarticoMessages.Operation.identifyUser
        case SmarticoMessages.Cid.login: SmarticoMessages.Operation.login
        case SmarticoMessages.Cid.event: SmarticoMessages.Operation.languageChanged
        case SmarticoMessages.Cid.registerPushToken: SmarticoMessages.Operation.registerPushToken
        case SmarticoMessages.Cid.ping: SmarticoMessages.Operation.ping
        case SmarticoMessages.Cid.pong: SmarticoMessages.Operation.pong
        case SmarticoMessages.Cid.engagementImpression: SmarticoMessages.Operation.popupImpression
        default: SmarticoMessages.Operation.unknown
        }
    }

    static func integer(_ value: JSONValue?, in range: ClosedRange<Int>) -> Int? {
        guard let number = value?.integerValue, range.contains(number) else { return nil }
        return number
    }

    // MARK: - HTTP public API

    mutating func handle(_ request: Request, from source: SourceAddress, at now: Instant) -> MockReply {
        let path = request.pathWithoutQuery
        guard path == SmarticoMessages.publicPath else {
            return MockReply(response: Self.httpError(404, "not found: \(request.method) \(path)"), operation: SmarticoMessages.Operation.unknown)
        }
        if isBlocked(source, at: now) { return MockReply(response: Self.blockedResponse(), operation: "smartico.blocked") }
        switch request.method {
        case "POST": return registerOverHTTP(request, at: now)
        case "GET": return report(request)
        default:
            var response = Self.httpError(405, "\(path) takes GET or POST, not \(request.method)")
            response.headers.append(Header("Allow", "GET, POST"))
            return MockReply(response: response, operation: SmarticoMessages.Operation.unknown)
        }
    }

    /// "Registering push token via POST Request".
    private mutating func registerOverHTTP(_ request: Request, at now: Instant) -> MockReply {
        let operation = SmarticoMessages.Operation.httpRegisterToken
        guard let body = (try? JSONParser.parse(request.body))?.objectValue else { return MockReply(response: Self.httpError(400, "the body must be a JSON object"), operation: operation) }
        guard body["api_key"]?.stringValue == settings.labelKey else { return MockReply(response: Self.httpError(401, "unknown api_key"), operation: operation) }
        // "cid": 1003, // always 1003.
        guard Self.integer(body["cid"], in: 1003...1003) != nil else { return MockReply(response: Self.httpError(400, "cid must be 1003"), operation: operation) }
        guard let user = body["ext_user_id"]?.stringValue, !user.isEmpty else { return MockReply(response: Self.httpError(400, "ext_user_id is required"), operation: operation) }
        guard let token = body["token"]?.stringValue, !token.isEmpty else { return MockReply(response: Self.httpError(400, "token is required"), operation: operation) }
        guard Self.integer(body["platform"], in: 6...7) != nil else { return MockReply(response: Self.httpError(400, "platform must be 6 (iOS) or 7 (Android)"), operation: operation) }
        // "pushNotificationUserStatus": 0, // this is always 0
        guard Self.integer(body["pushNotificationUserStatus"], in: 0...0) != nil else {
            return MockReply(response: Self.httpError(400, "pushNotificationUserStatus must be 0 (it is always 0 here)"), operation: operation)
        }
        register(user: user, token: token, permitted: true)
        let answer: JSONValue = ["errCode": 0, "errMsg": .null, "cid": 2003, "ts": .number(serverMilliseconds(at: now)), "uuid": .string(token.prefix(8) + "-0000-4000-8000-000000000000")]
        return MockReply(response: Response(status: 200, headers: [Header("Content-Type", "application/json")], body: JSONWriter.bytes(of: answer)), accepted: SmarticoMessages.httpTokenKey(user: user, token: token), operation: operation)
    }

    /// Section 5's GET reports, and the GET token registration.
    private mutating func report(_ request: Request) -> MockReply {
        guard let query = URLQuery.parameters(ofTarget: request.path) else {
            return MockReply(response: Self.httpError(400, "the query is not valid URL encoding"), operation: SmarticoMessages.Operation.unknown)
        }
        guard query["api_key"] == settings.labelKey else { return MockReply(response: Self.httpError(401, "unknown api_key"), operation: SmarticoMessages.Operation.unknown) }
        guard let eventText = query["event"], let event = (try? JSONParser.parse(Array(eventText.utf8)))?.objectValue else {
            return MockReply(response: Self.httpError(400, "event must be URL-encoded JSON"), operation: SmarticoMessages.Operation.unknown)
        }
        let eventType = event["event_type"]?.stringValue ?? ""
        let operation = SmarticoMessages.reportTypes.contains(eventType) || eventType == "register_push_token" ? SmarticoMessages.Operation.report(eventType) : SmarticoMessages.Operation.unknown
        guard let uuid = event["uuid"]?.stringValue, !uuid.isEmpty else { return MockReply(response: Self.httpError(400, "uuid is required"), operation: operation) }
        guard event["ts"]?.numberValue != nil else { return MockReply(response: Self.httpError(400, "ts is required"), operation: operation) }
        guard event["user_ext_id"] != nil else { return MockReply(response: Self.httpError(400, "user_ext_id is required"), operation: operation) }
        guard let payload = event["payload"]?.objectValue else { return MockReply(response: Self.httpError(400, "payload is required"), operation: operation) }
        if eventType == "register_push_token" {
            guard let token = payload["token"]?.stringValue, !token.isEmpty else { return MockReply(response: Self.httpError(400, "payload.token is required"), operation: operation) }
            register(user: event["user_ext_id"]?.stringValue ?? "", token: token, permitted: true)
        } else {
            guard SmarticoMessages.reportTypes.contains(eventType) else {
                return MockReply(response: Self.httpError(400, "event_type must be one of \(SmarticoMessages.reportTypes.sorted().joined(separator: ", ")), register_push_token"), operation: operation)
            }
            guard (payload["engagement_uid"]?.stringValue ?? "").isEmpty == false else { return MockReply(response: Self.httpError(400, "payload.engagement_uid is required"), operation: operation) }
            // "message_id: parseInt(message.data.message_id)", "activity_type: 40, // it should be always 40 for push notifications".
            guard Self.integer(payload["message_id"], in: 0...Int.max) != nil else { return MockReply(response: Self.httpError(400, "payload.message_id must be an integer"), operation: operation) }
            guard Self.integer(payload["activity_type"], in: 40...40) != nil else { return MockReply(response: Self.httpError(400, "payload.activity_type must be 40 for push notifications"), operation: operation) }
            // The click's body: "action: message.data.action".
            if eventType == "engagement_action", (payload["action"]?.stringValue ?? "").isEmpty {
                return MockReply(response: Self.httpError(400, "payload.action is required for engagement_action"), operation: operation)
            }
        }
        let answer: JSONValue = ["errCode": 0, "detailMessage": "", "stackTrace": [], "suppressedExceptions": []]
        return MockReply(response: Response(status: 200, headers: [Header("Content-Type", "application/json")], body: JSONWriter.bytes(of: answer)), accepted: SmarticoMessages.messageKey(uuid: uuid), operation: operation)
    }

    static func httpError(_ status: Int, _ message: String) -> Response {
        Response(status: status, headers: [Header("Content-Type", "application/json")], body: JSONWriter.bytes(of: ["errCode": .number(Double(status)), "detailMessage": .string(message)]))
    }

    // MARK: - Campaigns and known installs

    mutating func knowDevice(_ device: KnownDevice) {
        guard let user = device.userID else { return }
        if users[user] == nil {
            users[user] = User()
            userOrder.append(user)
        }
        users[user]?.token = device.pushToken
        users[user]?.permitted = device.pushPermissionGranted
    }

    /// A campaign reaches each user in its audience twice over: an FCM push with the engagement's
    /// data ("engagement_uid", "message_id", "user_ext_id"), and a popup (or a mini-game) on their
    /// open sessions, kept for their next IDENTIFY when they have none.
    mutating func launchCampaign(_ campaign: Campaign, at now: Instant, draws: CampaignDraws) -> [PushMessage] {
        var pushes: [PushMessage] = []
        campaignMessages = []
        for name in userOrder {
            var random = draws.random(for: name)
            guard var user = users[name], random.chance(campaign.audience) else { continue }
            serial += 1
            let engagement = random.nextUUID()
            if let token = user.token, user.permitted {
                pushes.append(PushMessage(pushToken: token, data: [
                    "engagement_uid": engagement, "message_id": String(serial), "user_ext_id": name,
                    "action": random.chance(0.5) ? "dp:gf_missions" : "dp:ok", "title": campaign.name,
                ]))
            }
            if random.chance(settings.mock.miniGameShare) {
                let text = serverMessage(cid: SmarticoMessages.Cid.sawShowSpinPush, ["saw_template_id": .number(Double(1 + serial % 9))], at: now)
                for session in user.sessions.sorted() { campaignMessages.append(SessionMessage(session: session, text: text)) }
            } else {
                let text = serverMessage(cid: SmarticoMessages.Cid.clientEngagementEvent, [
                    "engagement_uid": .string(engagement), "activityType": 30, "engagement_id": .number(Double(serial)),
                    "template_html": .string("<div>\(campaign.name)</div>"), "source_product_id": 0,
                ], at: now)
                for session in user.sessions.sorted() { campaignMessages.append(SessionMessage(session: session, text: text)) }
                if user.pendingPopups.count >= settings.mock.pendingPopupsPerUser { user.pendingPopups.removeFirst() }
                user.pendingPopups.append((engagement, text))
                users[name] = user
            }
        }
        return pushes
    }

    mutating func campaignSocketMessages(_ campaign: Campaign, at now: Instant) -> [SessionMessage] {
        defer { campaignMessages = [] }
        return campaignMessages
    }
}
