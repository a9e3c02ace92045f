import PushSwarmCore
import PushSwarmMetrics

/// The built-in PushExpress service (spec 003 and the research notes' paths).
///
/// - `POST /apps/{app_id}/instances` `{ic_token, ext_id?}` → 200 `{id, just_created}`; the same
///   `ic_token` (or a known `ext_id`) gets its existing instance back with `just_created` false.
/// - `PUT …/instances/{ic_id}/info` → 200 `{id, update_interval_sec}`.
/// - `POST …/events/lifecycle` and `…/events/notification` → "202 Accepted, with no content type
///   and empty body"; a lifecycle event with no body at all is accepted (the Android SDK sends none).
/// - `POST …/deactivate` → 200 (logout).
/// - "Backend errors, will always have content-type: application/json header and json response
///   body. Example: {"message": "validation error: ..."}": 400 for a bad body, 404 for an unknown
///   app or instance.
struct PushExpressMock: MockService {
    private struct Instance {
        var icToken: String
        var extID: String?
        var transportToken: String?
        var permissionGranted = true
        var isActive = true
    }

    let appID: String
    let updateIntervalSeconds: Int
    private var instances: [String: Instance] = [:]
    /// Instance ids in creation order (campaigns walk this order, reproducibly).
    private var order: [String] = []
    private var instanceByExtID: [String: String] = [:]

    init(appID: String, updateIntervalSeconds: Int) {
        self.appID = appID
        self.updateIntervalSeconds = updateIntervalSeconds
    }

    func serves(path: String) -> Bool { path.hasPrefix("/apps/") }

    mutating func handle(_ request: Request, from source: SourceAddress, at now: Instant) -> MockReply {
        let path = request.pathWithoutQuery
        guard let route = PushExpressMessages.route(forPath: path) else {
            return MockReply(response: Self.error(404, "not found: \(request.method) \(path)"), operation: PushExpressMessages.Operation.unknown)
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        let operation = route.operation
        guard request.method == route.method else {
            var response = Self.error(405, "\(path) takes \(route.method), not \(request.method)")
            response.headers.append(Header("Allow", route.method))
            return MockReply(response: response, operation: operation)
        }
        guard parts[1] == appID else {
            return MockReply(response: Self.error(404, "app not found: \(parts[1])"), operation: operation)
        }
        let body: JSONObject
        if request.body.isEmpty, operation == PushExpressMessages.Operation.lifecycleEvent {
            body = [:]
        } else {
            guard let parsed = try? JSONParser.parse(request.body), let object = parsed.objectValue else {
                return MockReply(response: Self.error(400, "validation error: the body must be a JSON object"), operation: operation)
            }
            body = object
        }
        if parts.count == 3 { return createInstance(body, operation: operation) }

        let instanceID = parts[3]
        guard instances[instanceID] != nil else {
            return MockReply(response: Self.error(404, "app instance not found: \(instanceID)"), operation: operation)
        }
        switch operation {
        case PushExpressMessages.Operation.updateInfo:
            if let problem = Self.validateInfo(body) {
                return MockReply(response: Self.error(400, "validation error: \(problem)"), operation: operation)
            }
            updateInstance(instanceID, body)
            let answer: JSONValue = ["id": .string(instanceID), "update_interval_sec": .number(Double(updateIntervalSeconds))]
            return MockReply(response: Response(status: 200, headers: Header.jsonContentType, body: JSONWriter.bytes(of: answer)), operation: operation)
        case PushExpressMessages.Operation.lifecycleEvent:
            if let event = body["event"] {
                guard let name = event.stringValue, PushExpressMessages.lifecycleEvents.contains(name) else {
                    return MockReply(response: Self.error(400, "validation error: event must be one of onscreen, background, closed"), operation: operation)
                }
            }
            return MockReply(response: Response(status: 202), operation: operation)
        case PushExpressMessages.Operation.notificationEvent:
            guard let messageID = body["msg_id"]?.stringValue, !messageID.isEmpty else {
                return MockReply(response: Self.error(400, "validation error: msg_id is required"), operation: operation)
            }
            guard let event = body["event"]?.stringValue, PushExpressMessages.notificationEvents.contains(event) else {
                return MockReply(response: Self.error(400, "validation error: event must be one of delivered, clicked"), operation: operation)
            }
            let key = PushExpressMessages.notificationKey(instanceID: instanceID, messageID: messageID, event: event)
            return MockReply(response: Response(status: 202), accepted: key, operation: operation)
        default:
            if let extID = instances[instanceID]?.extID, instanceByExtID[extID] == instanceID { instanceByExtID[extID] = nil }
            instances[instanceID]?.extID = nil
            instances[instanceID]?.isActive = false
            return MockReply(response: Response(status: 200, headers: Header.jsonContentType, body: Array("{}".utf8)), operation: operation)
        }
    }

    private mutating func createInstance(_ body: JSONObject, operation: String) -> MockReply {
        // "ic_token, required. Globally unique, local-generated app instance installation token".
        guard let value = body["ic_token"] else {
            return MockReply(response: Self.error(400, "validation error: ic_token is required"), operation: operation)
        }
        guard let icToken = value.stringValue, !icToken.isEmpty else {
            return MockReply(response: Self.error(400, "validation error: ic_token must be a non-empty string"), operation: operation)
        }
        let extID = body["ext_id"]?.stringValue
        var id = PushExpressMessages.instanceID(icToken: icToken)
        var justCreated = instances[id] == nil
        if justCreated, let extID, let existing = instanceByExtID[extID] {
            // "Logged in to existing instance (via ext_id) or created new device".
            id = existing
            justCreated = false
        }
        if justCreated {
            instances[id] = Instance(icToken: icToken, extID: extID)
            order.append(id)
            if let extID { instanceByExtID[extID] = id }
        }
        let answer: JSONValue = ["id": .string(id), "just_created": .bool(justCreated)]
        return MockReply(
            response: Response(status: 200, headers: Header.jsonContentType, body: JSONWriter.bytes(of: answer)),
            accepted: PushExpressMessages.instanceKey(icToken: icToken), operation: operation
        )
    }

    /// The first rule an info body breaks, nil when it is valid.
    static func validateInfo(_ body: JSONObject) -> String? {
        // "transport_type, required … One of fcm, onesignal, huawei, apns".
        guard let transport = body["transport_type"] else { return "transport_type is required" }
        guard let transportType = transport.stringValue, PushExpressMessages.transportTypes.contains(transportType) else {
            return "transport_type must be one of \(PushExpressMessages.transportTypes.sorted().joined(separator: ", "))"
        }
        // "platform_type, required. Notification rendering platform. One of android, ios, browser".
        guard let platform = body["platform_type"] else { return "platform_type is required" }
        guard let platformType = platform.stringValue, PushExpressMessages.platformTypes.contains(platformType) else {
            return "platform_type must be one of android, browser, ios"
        }
        for name in ["transport_token", "platform_name", "country", "lang", "agent_name", "ext_id", "tz_name"] {
            if let value = body[name], value.stringValue == nil { return "\(name) must be a string" }
        }
        // "country … Accepts ISO3166-1, alpha-2 country code".
        if let country = body["country"]?.stringValue, !country.isEmpty, country.count != 2 { return "country must be an ISO 3166-1 alpha-2 code" }
        for name in ["tz_sec", "onscreen_count", "onscreen_sec"] {
            if let value = body[name] {
                guard let number = value.numberValue, number == number.rounded() else { return "\(name) must be an integer" }
                if name != "tz_sec", number < 0 { return "\(name) must not be negative" }
            }
        }
        if let tags = body["tags"] {
            guard let object = tags.objectValue, object.members.allSatisfy({ $0.value.stringValue != nil }) else { return "tags must be a map of strings" }
        }
        if let granted = body["notif_perm_granted"], granted.boolValue == nil { return "notif_perm_granted must be a boolean" }
        return nil
    }

    private mutating func updateInstance(_ id: String, _ body: JSONObject) {
        instances[id]?.transportToken = body["transport_token"]?.stringValue
        if let granted = body["notif_perm_granted"]?.boolValue { instances[id]?.permissionGranted = granted }
        instances[id]?.isActive = true
        if let extID = body["ext_id"]?.stringValue {
            instances[id]?.extID = extID
            instanceByExtID[extID] = id
        }
    }

    mutating func knowDevice(_ device: KnownDevice) {
        let icToken = PushExpressMessages.preRunICToken(pushToken: device.pushToken)
        let id = PushExpressMessages.instanceID(icToken: icToken)
        guard instances[id] == nil else { return }
        instances[id] = Instance(icToken: icToken, extID: device.userID, transportToken: device.pushToken, permissionGranted: device.pushPermissionGranted)
        order.append(id)
        if let user = device.userID { instanceByExtID[user] = id }
    }

    /// "FCM transport message format": the px.* data fields, with a fresh `px.msg_id` per message.
    mutating func launchCampaign(_ campaign: Campaign, at now: Instant, draws: CampaignDraws) -> [PushMessage] {
        var messages: [PushMessage] = []
        for id in order {
            guard let instance = instances[id], instance.isActive, instance.permissionGranted, let token = instance.transportToken else { continue }
            var random = draws.random(for: token)
            guard random.chance(campaign.audience) else { continue }
            var data = [
                PushExpressMessages.Data.messageID: random.nextUUID(),
                PushExpressMessages.Data.title: "\(campaign.name)",
                PushExpressMessages.Data.body: "A message from the \(campaign.name) campaign",
                PushExpressMessages.Data.icon: "https://cdn.push.express/icons/default.png",
            ]
            if random.chance(0.5) { data[PushExpressMessages.Data.link] = "https://example.com/offer?campaign=\(campaign.name)" }
            if random.chance(0.3) { data[PushExpressMessages.Data.image] = "https://cdn.push.express/images/\(campaign.name).jpg" }
            // The SDKs build the notification from the px.* data themselves: a data-only message.
            messages.append(PushMessage(pushToken: token, data: data, isDataOnly: true))
        }
        return messages
    }

    static func error(_ status: Int, _ message: String) -> Response {
        Response(status: status, headers: Header.jsonContentType, body: JSONWriter.bytes(of: ["message": .string(message)]))
    }
}
