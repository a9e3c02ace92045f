public import PushSwarmCore
import PushSwarmMetrics
import PushSwarmSystem

/// The SmartAppPush service as spec 002 describes it, in process.
///
/// - `POST /events`: every field of the field reference is checked; a bad request gets "`400`
///   Validation error — missing required fields, invalid format, or unknown API key. Response
///   contains `errors` array with details", one entry per bad field. An accepted event answers
///   `{"fingerprint": …}`, and a repeat of a fingerprint "is silently ignored" (answered the same,
///   counted as a duplicate in the ledger).
/// - `POST /pushes/opened`: "`400` Missing required fields (tenant_id, api_key, tracking_token)",
///   "`401` Invalid tenant_id or api_key".
/// - `POST /devices/refresh-token` (FCM integrations, from the research notes): 400 missing or
///   identical tokens, 401, 404 device not found, 409 token of another user.
/// - "`POST /events` 10 requests/second per IP", "`POST /pushes/opened` 10 requests/second per
///   IP": 429 with `Retry-After` beyond that.
public struct SmartAppPushMock: MockService {
    private struct DeviceRecord: Sendable {
        var token: String
        var userID: String?
        var isPushPermissionGranted: Bool
    }

    /// A source address and the limited endpoint (0: events, 1: opens): hashed per request, so
    /// kept to two integers.
    private struct LimitKey: Hashable, Sendable {
        var source: UInt32
        var endpoint: UInt8
    }

    /// A handful at most: found by comparing the request's bytes, without making strings. Held
    /// by reference: a found tenant copied as a struct retained and released its three strings,
    /// for every request.
    private final class Tenant: Sendable {
        let tenantID: String
        let apiKey: String
        let appID: String

        init(_ tenant: SmartAppPushTenant) {
            (tenantID, apiKey, appID) = (tenant.tenantID, tenant.apiKey, tenant.appID)
        }
    }

    private let tenants: [Tenant]
    private var limiter: SlidingWindowLimiter<LimitKey>
    /// Devices in the order the service first saw them (campaigns walk this order).
    private var devices: [DeviceRecord] = []
    private var slotByToken = TokenIndex()
    private var knownZones = KnownZones()
    /// Computes each accepted event's fingerprint and ledger key, reusing its buffers.
    private var identity = SmartAppPushMessages.EventIdentity()
    /// The last request's body, parsed: the next parse reuses its room.
    private var fields = JSONFields()
    private static let fingerprintAnswerPrefix: StaticString = #"{"fingerprint":""#

    public init(tenants: [SmartAppPushTenant], rateLimitPerSecond: Int) {
        self.tenants = tenants.map(Tenant.init)
        limiter = SlidingWindowLimiter(limit: rateLimitPerSecond, window: .seconds(1))
    }

    /// Devices the service knows, for tests and reports.
    public var knownDeviceCount: Int { slotByToken.count }

    public func serves(path: String) -> Bool {
        [SmartAppPushMessages.Path.events, SmartAppPushMessages.Path.pushesOpened, SmartAppPushMessages.Path.refreshToken].contains(path)
    }

    public mutating func handle(_ request: Request, from source: SourceAddress, at now: Instant) -> MockReply {
        let path = request.pathWithoutQuery
        guard let operation = SmartAppPushMessages.operation(forPath: path) else {
            return MockReply(response: Self.error(404, "no such endpoint: \(request.method) \(path)"), operation: "smartapppush.unknown")
        }
        guard request.method == "POST" else {
            var response = Self.error(405, "\(path) takes POST, not \(request.method)")
            response.headers.append(Header("Allow", "POST"))
            return MockReply(response: response, operation: operation)
        }
        if path != SmartAppPushMessages.Path.refreshToken {
            if case .limited(let retryAfter) = limiter.admit(LimitKey(source: source.index, endpoint: path == SmartAppPushMessages.Path.events ? 0 : 1), at: now) {
                let seconds = max(1, Int((retryAfter.seconds).rounded(.up)))
                var response = Self.error(429, "rate limit exceeded: \(limiter.limit) requests/second per IP on \(path)")
                response.headers.append(Header("Retry-After", String(seconds)))
                return MockReply(response: response, operation: operation)
            }
        }
        do {
            try Self.parseObject(request.body, into: &fields)
        } catch {
            return MockReply(response: Self.validationError([error]), operation: operation)
        }
        // A copy for the call (the parse reuses `fields`' room once it is released again).
        let body = fields
        switch path {
        case SmartAppPushMessages.Path.events: return acceptEvent(body, operation: operation)
        case SmartAppPushMessages.Path.pushesOpened: return acceptOpen(body, operation: operation)
        default: return refreshToken(body, operation: operation)
        }
    }

    public mutating func knowDevice(_ device: KnownDevice) {
        register(token: device.pushToken, userID: device.userID, isPushPermissionGranted: device.pushPermissionGranted)
    }

    /// Targets `audience` of the devices whose latest event said `push_permission_granted: true`;
    /// each push carries a fresh `tracking_token` (UUID), as "When SmartAppPush delivers a push
    /// notification, it includes a `tracking_token` (UUID) in the push payload's additional data".
    public mutating func launchCampaign(_ campaign: Campaign, at now: Instant, draws: CampaignDraws) -> [PushMessage] {
        var messages: [PushMessage] = []
        for device in devices where device.isPushPermissionGranted && slotByToken[device.token] != nil {
            var random = draws.random(for: device.token)
            guard random.chance(campaign.audience) else { continue }
            messages.append(PushMessage(pushToken: device.token, data: ["tracking_token": random.nextUUID(), "campaign_id": campaign.name]))
        }
        return messages
    }

    // MARK: - Endpoints

    private mutating func acceptEvent(_ body: JSONFields, operation: String) -> MockReply {
        var problems: [FieldProblem] = []
        // Looked up in the spec's order, the order clients write them: each found at first look.
        var next = 0
        let tenantID = requireString(body, Self.names.tenantId, &problems, next: &next)
        let apiKey = requireString(body, Self.names.apiKey, &problems, next: &next)
        var appUserID: JSONFields.Text?
        switch body.value(named: Self.names.appUserId, next: &next) {
        case nil, .null?: break
        case .string(let text)?: appUserID = text
        default: problems.append(FieldProblem("app_user_id", "must be a string"))
        }
        let eventName = requireString(body, Self.names.eventName, &problems, next: &next)
        let eventTime = requireString(body, Self.names.eventTime, &problems, next: &next)
        if let eventTime, body.withUTF8(eventTime, { RFC3339.parse(utf8: $0) }) == nil {
            problems.append(FieldProblem("event_time", "must be an RFC 3339 timestamp with a timezone offset, such as 2026-03-29T14:30:00+03:00"))
        }
        let deviceToken = requireString(body, Self.names.deviceToken, &problems, next: &next)
        // "platform — One of: android, ios, web" (literals: no set that partitions share).
        if let platform = requireString(body, Self.names.platform, &problems, next: &next),
            !(body.text(platform, equals: "android") || body.text(platform, equals: "ios") || body.text(platform, equals: "web"))
        {
            problems.append(FieldProblem("platform", "must be one of: android, ios, web"))
        }
        var permission = false
        switch body.value(named: Self.names.pushPermissionGranted, next: &next) {
        case .bool(let flag)?: permission = flag
        case nil: problems.append(FieldProblem("push_permission_granted", "is required"))
        default: problems.append(FieldProblem("push_permission_granted", "must be a boolean"))
        }
        if let zone = requireString(body, Self.names.timezone, &problems, next: &next), !body.withUTF8(zone, { knownZones.contains(utf8: $0) }) {
            problems.append(FieldProblem("timezone", "must be an IANA time zone such as Europe/Istanbul"))
        }
        if let language = requireString(body, Self.names.language, &problems, next: &next), !body.withUTF8(language, ISOCodes.isLanguage(utf8:)) {
            problems.append(FieldProblem("language", "must be an ISO 639-1 language code such as en"))
        }
        if let country = requireString(body, Self.names.country, &problems, next: &next), !body.withUTF8(country, ISOCodes.isCountry(utf8:)) {
            problems.append(FieldProblem("country", "must be an ISO 3166-1 alpha-2 country code such as US"))
        }
        _ = requireString(body, Self.names.sessionId, &problems, next: &next)
        let context = optionalObject(body, Self.names.context, &problems, next: &next)
        let params = optionalObject(body, Self.names.params, &problems, next: &next)
        var tenant: Tenant?
        if let apiKey {
            tenant = self.tenant(apiKey: apiKey, in: body)
            if tenant == nil { problems.append(FieldProblem("api_key", "unknown API key")) }
        }
        if let tenant, let tenantID, !body.text(tenantID, equals: tenant.tenantID) {
            problems.append(FieldProblem("tenant_id", "does not match the API key's tenant"))
        }
        guard problems.isEmpty, let tenant, let eventName, let eventTime, let deviceToken else {
            return MockReply(response: Self.validationError(problems), operation: operation)
        }
        func field(_ text: JSONFields.Text) -> ArraySlice<UInt8> { body.utf8(text) }
        let (fingerprint, key) = identity.identify(
            tenantID: tenant.tenantID, appID: tenant.appID, appUserID: appUserID.map(field), eventName: field(eventName),
            eventTime: field(eventTime), deviceToken: field(deviceToken),
            context: { writer in Self.writeCanonical(context, of: body, into: &writer) },
            params: { writer in Self.writeCanonical(params, of: body, into: &writer) }
        )
        // "Registers or updates the device (token + push permission status)".
        let user = appUserID.flatMap { $0.content.isEmpty ? nil : body.text($0) }
        body.withUTF8(deviceToken) { token in
            register(token: token, makeToken: { body.text(deviceToken) }, userID: user, isPushPermissionGranted: permission)
        }
        // {"fingerprint":"…"}, written straight into the body: the prefix from a literal (a
        // static array would be one object every partition's mock retains), then 64 hex digits.
        let prefix = Self.fingerprintAnswerPrefix
        let length = prefix.utf8CodeUnitCount
        var answer = [UInt8](repeating: 0, count: length + 64 + 2)
        do {
            var out = answer.mutableSpan
            prefix.withUTF8Span { out.copy($0, to: 0) }
            fingerprint.writeHex(into: &out, at: length)
            out[length + 64] = UInt8(ascii: "\"")
            out[length + 65] = UInt8(ascii: "}")
        }
        let response = Response(status: 200, headers: Header.jsonContentType, body: answer)
        return MockReply(response: response, accepted: key, operation: operation)
    }

    private func acceptOpen(_ body: JSONFields, operation: String) -> MockReply {
        var problems: [FieldProblem] = []
        let tenantID = requireString(body, "tenant_id", &problems)
        let apiKey = requireString(body, "api_key", &problems)
        let trackingToken = requireString(body, "tracking_token", &problems).map(body.text)
        guard problems.isEmpty, let tenantID, let apiKey, let trackingToken else {
            return MockReply(response: Self.validationError(problems), operation: operation)
        }
        guard let tenant = tenant(apiKey: apiKey, in: body), body.text(tenantID, equals: tenant.tenantID) else {
            return MockReply(response: Self.error(401, "invalid tenant_id or api_key"), operation: operation)
        }
        let response = Response(status: 200, headers: Header.jsonContentType, body: JSONWriter.bytes(of: ["success": true]))
        return MockReply(response: response, accepted: SmartAppPushMessages.openKey(tenantID: tenant.tenantID, trackingToken: trackingToken), operation: operation)
    }

    private mutating func refreshToken(_ body: JSONFields, operation: String) -> MockReply {
        var problems: [FieldProblem] = []
        let tenantID = requireString(body, "tenant_id", &problems)
        let apiKey = requireString(body, "api_key", &problems)
        let oldToken = requireString(body, "old_token", &problems).map(body.text)
        let newToken = requireString(body, "new_token", &problems).map(body.text)
        if let oldToken, oldToken == newToken { problems.append(FieldProblem("new_token", "is the same as old_token")) }
        guard problems.isEmpty, let tenantID, let apiKey, let oldToken, let newToken else {
            return MockReply(response: Self.validationError(problems), operation: operation)
        }
        guard let tenant = tenant(apiKey: apiKey, in: body), body.text(tenantID, equals: tenant.tenantID) else {
            return MockReply(response: Self.error(401, "invalid tenant_id or api_key"), operation: operation)
        }
        guard let slot = slotByToken[oldToken] else {
            return MockReply(response: Self.error(404, "no device with old_token"), operation: operation)
        }
        if let other = slotByToken[newToken], devices[other].userID != devices[slot].userID {
            return MockReply(response: Self.error(409, "new_token belongs to another user"), operation: operation)
        }
        slotByToken[oldToken] = nil
        slotByToken[newToken] = slot
        devices[slot].token = newToken
        if case .string(let user)? = body["app_user_id"], !user.content.isEmpty { devices[slot].userID = body.text(user) }
        let response = Response(status: 200, headers: Header.jsonContentType, body: JSONWriter.bytes(of: ["success": true]))
        return MockReply(
            response: response,
            accepted: SmartAppPushMessages.refreshKey(tenantID: tenant.tenantID, oldToken: oldToken, newToken: newToken),
            operation: operation
        )
    }

    // MARK: - Helpers

    private mutating func register(token: String, userID: String?, isPushPermissionGranted: Bool) {
        token.withUTF8Span { register(token: $0, makeToken: { token }, userID: userID, isPushPermissionGranted: isPushPermissionGranted) }
    }

    /// Registers a device by its token's UTF-8, as the request holds it: a `String` of the token
    /// is made (`makeToken`) only for a device the service has not seen.
    private mutating func register(token: Span<UInt8>, makeToken: () -> String, userID: String?, isPushPermissionGranted: Bool) {
        if let slot = slotByToken.value(utf8: token) {
            devices[slot].isPushPermissionGranted = isPushPermissionGranted
            if let userID { devices[slot].userID = userID }
        } else {
            let text = makeToken()
            slotByToken[text] = devices.count
            devices.append(DeviceRecord(token: text, userID: userID, isPushPermissionGranted: isPushPermissionGranted))
        }
    }

    struct FieldProblem: Error, Sendable, Equatable {
        var field: String
        var message: String

        init(_ field: String, _ message: String) {
            self.field = field
            self.message = message
        }
    }

    /// The (first) tenant whose API key the request gives.
    private func tenant(apiKey: JSONFields.Text, in body: JSONFields) -> Tenant? {
        tenants.first { body.text(apiKey, equals: $0.apiKey) }
    }

    /// A field's canonical form for the fingerprint, null when it is absent.
    private static func writeCanonical(_ object: JSONFields.Nested?, of body: JSONFields, into writer: inout JSONWriter) {
        if let object { body.writeCanonical(object, into: &writer) } else { writer.null() }
    }

    /// The event's member names, each with its key made once (`JSONFields.Name`): plain values,
    /// nothing any partition's mock retains.
    private struct EventNames {
        let tenantId = JSONFields.Name("tenant_id"), apiKey = JSONFields.Name("api_key"), appUserId = JSONFields.Name("app_user_id")
        let eventName = JSONFields.Name("event_name"), eventTime = JSONFields.Name("event_time"), deviceToken = JSONFields.Name("device_token")
        let platform = JSONFields.Name("platform"), pushPermissionGranted = JSONFields.Name("push_permission_granted")
        let timezone = JSONFields.Name("timezone"), language = JSONFields.Name("language"), country = JSONFields.Name("country")
        let sessionId = JSONFields.Name("session_id"), context = JSONFields.Name("context"), params = JSONFields.Name("params")
    }

    private static let names = EventNames()

    private func optionalObject(_ body: JSONFields, _ field: JSONFields.Name, _ problems: inout [FieldProblem], next: inout Int) -> JSONFields.Nested? {
        switch body.value(named: field, next: &next) {
        case nil, .null?: return nil
        case .object(let object)?: return object
        default:
            problems.append(FieldProblem(field.string, "must be an object"))
            return nil
        }
    }

    private func requireString(_ body: JSONFields, _ field: String, _ problems: inout [FieldProblem]) -> JSONFields.Text? {
        var next = 0
        return Self.requireString(body.value(named: field, next: &next), field, &problems)
    }

    private func requireString(_ body: JSONFields, _ field: JSONFields.Name, _ problems: inout [FieldProblem], next: inout Int) -> JSONFields.Text? {
        Self.requireString(body.value(named: field, next: &next), field.string, &problems)
    }

    /// A required, non-empty string member's text, or a problem with `field`.
    private static func requireString(_ value: JSONFields.Value?, _ field: @autoclosure () -> String, _ problems: inout [FieldProblem]) -> JSONFields.Text? {
        switch value {
        case .string(let text)? where !text.content.isEmpty:
            return text
        case .string?:
            problems.append(FieldProblem(field(), "must not be empty"))
        case nil, .null?:
            problems.append(FieldProblem(field(), "is required"))
        default:
            problems.append(FieldProblem(field(), "must be a string"))
        }
        return nil
    }

    private static func parseObject(_ bytes: [UInt8], into fields: inout JSONFields) throws(FieldProblem) {
        let isObject: Bool
        do {
            isObject = try fields.parse(bytes)
        } catch {
            throw FieldProblem("body", "is not valid JSON: \(error)")
        }
        guard isObject else { throw FieldProblem("body", "must be a JSON object") }
    }

    private static func validationError(_ problems: [FieldProblem]) -> Response {
        let errors = JSONValue.array(problems.map { ["field": .string($0.field), "message": .string($0.message)] })
        return Response(status: 400, headers: Header.jsonContentType, body: JSONWriter.bytes(of: ["errors": errors]))
    }

    private static func error(_ status: Int, _ message: String) -> Response {
        Response(status: status, headers: Header.jsonContentType, body: JSONWriter.bytes(of: ["error": .string(message)]))
    }
}
