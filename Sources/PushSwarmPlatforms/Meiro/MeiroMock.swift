import PushSwarmCore
import PushSwarmMetrics

/// The built-in Meiro service: `POST /meiro_mobile`, validated as spec 004 describes, with its
/// 400 body `{message, status}`, and the registry of consented FCM tokens that campaigns go to.
struct MeiroMock: MockService {
    private struct Registration {
        var userID: String
        var os: OperatingSystem
    }

    /// Registered tokens, in registration order (campaigns pick from them reproducibly).
    private var tokens: [String] = []
    private var registrations: [String: Registration] = [:]

    func serves(path: String) -> Bool { path == MeiroMessages.path }

    mutating func handle(_ request: Request, from source: SourceAddress, at now: Instant) -> MockReply {
        let path = request.pathWithoutQuery
        guard path == MeiroMessages.path else {
            return MockReply(response: Self.error(404, "not found: \(request.method) \(path)"), operation: "meiro.unknown")
        }
        guard request.method == "POST" else {
            var response = Self.error(405, "\(path) takes POST, not \(request.method)")
            response.headers.append(Header("Allow", "POST"))
            return MockReply(response: response, operation: "meiro.unknown")
        }
        let body: JSONObject
        do {
            guard let object = try JSONParser.parse(request.body).objectValue else {
                return MockReply(response: Self.error(400, "validation: the body must be a JSON object"), operation: "meiro.invalid")
            }
            body = object
        } catch {
            return MockReply(response: Self.error(400, "validation: the body is not JSON (\(error))"), operation: "meiro.invalid")
        }
        let eventType = body["event_type"]?.stringValue
        let operation = eventType == MeiroMessages.EventType.refreshed ? MeiroMessages.Operation.refreshed
            : eventType == MeiroMessages.EventType.registered ? MeiroMessages.Operation.registered : "meiro.invalid"
        if let problem = Self.validate(body) {
            return MockReply(response: Self.error(400, "validation: \(problem)"), operation: operation)
        }
        let user = body["user_id"]?.stringValue ?? ""
        let timestamp = body["event_timestamp"]?.stringValue ?? ""
        let token = body["firebase"]?["registration_token"]?.stringValue ?? ""
        let os: OperatingSystem = body["os"]?["type"]?.stringValue == "ios" ? .ios : .android
        if registrations[token] == nil { tokens.append(token) }
        registrations[token] = Registration(userID: user, os: os)
        let key = MeiroMessages.eventKey(userID: user, eventType: eventType ?? "", timestamp: timestamp, token: token)
        return MockReply(response: Response(status: 200), accepted: key, operation: operation)
    }

    /// The first rule the body breaks, worded as the spec's example ("registration_token is
    /// required property"), nil when it is valid.
    static func validate(_ body: JSONObject) -> String? {
        func string(_ value: JSONValue?, _ name: String) -> String? {
            guard let value else { return "\(name) is required property" }
            guard let text = value.stringValue else { return "\(name) must be a string" }
            return text.isEmpty ? "\(name) must not be empty" : nil
        }
        func object(_ value: JSONValue?, _ name: String) -> (JSONObject?, String?) {
            guard let value else { return (nil, "\(name) is required property") }
            guard let object = value.objectValue else { return (nil, "\(name) must be an object") }
            return (object, nil)
        }
        for name in ["user_id", "event_type", "event_timestamp", "version"] {
            if let problem = string(body[name], name) { return problem }
        }
        // "user_id: … required string, UUID generated uniquely for each user of the application".
        guard Self.isUUID(body["user_id"]?.stringValue ?? "") else { return "user_id must be a UUID" }
        let eventType = body["event_type"]?.stringValue ?? ""
        guard eventType == MeiroMessages.EventType.registered || eventType == MeiroMessages.EventType.refreshed else {
            return "event_type must be \(MeiroMessages.EventType.registered) or \(MeiroMessages.EventType.refreshed)"
        }
        guard RFC3339.parse(body["event_timestamp"]?.stringValue ?? "") != nil else {
            return "event_timestamp must be an ISO 8601 date-time"
        }
        if let sessionValue = body["session_id"], sessionValue.stringValue == nil { return "session_id must be a string" }
        if eventType == MeiroMessages.EventType.refreshed {
            // "event_data: { // required object … fcm_registration_token_refresh_timestamp … //required".
            let (data, problem) = object(body["event_data"], "event_data")
            if let problem { return problem }
            if let problem = string(data?["fcm_registration_token_refresh_timestamp"], "fcm_registration_token_refresh_timestamp") { return problem }
        } else if let data = body["event_data"], data.objectValue == nil {
            return "event_data must be an object"
        }
        let (app, appProblem) = object(body["app"], "app")
        if let appProblem { return appProblem }
        for name in ["id", "name", "version"] {
            if let problem = string(app?[name], name) { return problem }
        }
        // "language: "en" // optional string, 2 characters ISO-639-1".
        if let language = app?["language"] {
            guard let code = language.stringValue, ISOCodes.isLanguage(code) else { return "app.language must be a 2-character ISO 639-1 code such as en" }
        }
        let (os, osProblem) = object(body["os"], "os")
        if let osProblem { return osProblem }
        if let problem = string(os?["type"], "type") { return problem }
        guard ["android", "ios"].contains(os?["type"]?.stringValue ?? "") else { return "os.type must be \"android\" or \"ios\"" }
        let (firebase, firebaseProblem) = object(body["firebase"], "firebase")
        if let firebaseProblem { return firebaseProblem }
        for name in ["project_id", "registration_token"] {
            if let problem = string(firebase?[name], name) { return problem }
        }
        return nil
    }

    /// 8-4-4-4-12 hexadecimal digits (RFC 9562's textual form).
    static func isUUID(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        return groups.map(\.count) == [8, 4, 4, 4, 12] && groups.allSatisfy { $0.allSatisfy(\.isHexDigit) }
    }

    mutating func knowDevice(_ device: KnownDevice) {
        guard device.pushPermissionGranted else { return }
        if registrations[device.pushToken] == nil { tokens.append(device.pushToken) }
        registrations[device.pushToken] = Registration(userID: device.userID ?? "", os: device.os)
    }

    /// The FCM data Meiro sends: "action", "url" (empty when the action is "app"), "message_id".
    mutating func launchCampaign(_ campaign: Campaign, at now: Instant, draws: CampaignDraws) -> [PushMessage] {
        var messages: [PushMessage] = []
        for token in tokens where registrations[token] != nil {
            var random = draws.random(for: token)
            guard random.chance(campaign.audience) else { continue }
            let deepLink = random.chance(0.5)
            messages.append(PushMessage(pushToken: token, data: [
                "action": deepLink ? "deeplink" : "app",
                "url": deepLink ? "https://example.com/launch?campaign=\(campaign.name)" : "",
                "message_id": random.nextUUID(),
            ]))
        }
        return messages
    }

    static func error(_ status: Int, _ message: String) -> Response {
        // "{ message: "validation: registration_token is required property", status: "error" }".
        Response(status: status, headers: Header.jsonContentType, body: JSONWriter.bytes(of: ["message": .string(message), "status": "error"]))
    }
}
