public import PushSwarmCore
public import PushSwarmMetrics

/// SmartAppPush's wire vocabulary (spec 002, the OneSignal integration guide, and the FCM
/// refresh-token call described in the research notes): paths, operation names, field names,
/// and the keys both sides use to account for accepted items.
public enum SmartAppPushMessages {
    public static let platformName = "smartapppush"

    public enum Operation {
        public static let events = "smartapppush.events"
        public static let pushesOpened = "smartapppush.pushes_opened"
        public static let refreshToken = "smartapppush.refresh_token"
    }

    public enum Path {
        public static let events = "/events"
        public static let pushesOpened = "/pushes/opened"
        public static let refreshToken = "/devices/refresh-token"
    }

    /// "platform — One of: android, ios, web".
    public static let platforms: Set<String> = ["android", "ios", "web"]

    /// The fields of `POST /events`, in the order of the spec's field reference.
    public enum EventField: String, CaseIterable, Sendable {
        /// The fields in the spec's order, held once (`allCases` builds a new array per call).
        static let ordered: [EventField] = allCases

        /// The field's bit in a set of fields kept as a mask (its place in the spec's order).
        var bit: UInt16 { 1 << UInt16(Self.ordered.firstIndex(of: self)!) }

        case tenantID = "tenant_id"
        case apiKey = "api_key"
        case appUserID = "app_user_id"
        case eventName = "event_name"
        case eventTime = "event_time"
        case deviceToken = "device_token"
        case platform
        case pushPermissionGranted = "push_permission_granted"
        case timezone
        case language
        case country
        case sessionID = "session_id"
        case params
        case context
    }

    /// The de-duplication fingerprint. The spec: "Every event gets a SHA-256 fingerprint generated
    /// from: tenant_id, app_id, app_user_id, event_name, event_time, device_token, context, and
    /// params." It does not say how they are joined; PushSwarm hashes the canonical JSON array of
    /// them in that order (objects with sorted keys, absent ones as null), with `app_user_id` as the
    /// service resolves it: "If empty, an anonymous ID is generated as anon:{device_token}".
    /// The mock answers with it ("The fingerprint is returned in the response for debugging").
    public static func fingerprint(
        tenantID: String, appID: String, appUserID: String?, eventName: String, eventTime: String,
        deviceToken: String, context: JSONValue?, params: JSONValue?
    ) -> SHA256Digest {
        var canonical = JSONWriter()
        canonical.beginArray()
        for field in [tenantID, appID, resolvedUser(appUserID, deviceToken: deviceToken), eventName, eventTime, deviceToken] {
            canonical.string(field)
        }
        canonical.write(context ?? .null, sortingKeys: true)
        canonical.write(params ?? .null, sortingKeys: true)
        canonical.endArray()
        return SHA256.hash(canonical.bytes)
    }

    /// The ledger key of an event: the fingerprint's fields, in its order and with its rules
    /// (objects by sorted member names, the anonymous user resolved), so two events share a key
    /// exactly when the service would call them duplicates.
    public static func eventKey(
        tenantID: String, appID: String, appUserID: String?, eventName: String, eventTime: String,
        deviceToken: String, context: JSONValue?, params: JSONValue?
    ) -> LedgerKey {
        var key = EventKey(
            tenantID: tenantID, appID: appID, appUserID: appUserID, eventName: eventName, eventTime: eventTime, deviceToken: deviceToken)
        key.add(context ?? .null)
        key.add(params: params)
        return key.key
    }

    /// `eventKey` in steps, for a client that has the context as plain strings and would rather
    /// not build a JSON tree to hash it: the scalar fields, then the context, then the params.
    public struct EventKey {
        private var builder = LedgerKey.Builder()

        public init(tenantID: String, appID: String, appUserID: String?, eventName: String, eventTime: String, deviceToken: String) {
            builder.add("events")
            builder.add(tenantID)
            builder.add(appID)
            builder.add(resolvedUser(appUserID, deviceToken: deviceToken))
            builder.add(eventName)
            builder.add(eventTime)
            builder.add(deviceToken)
        }

        public mutating func add(_ context: JSONValue) { builder.add(context) }

        public mutating func addNull() { builder.addNull() }

        /// A context object of string members, given in byte order of their names.
        public mutating func add(context members: [(String, String)]) {
            builder.addObjectHeader(memberCount: members.count)
            for (name, value) in members {
                builder.add(name)
                builder.add(value)
            }
        }

        public mutating func add(params: JSONValue?) { builder.add(params ?? .null) }

        public var key: LedgerKey { builder.key }
    }

    private static func resolvedUser(_ appUserID: String?, deviceToken: String) -> String {
        (appUserID?.isEmpty ?? true) ? "anon:\(deviceToken)" : (appUserID ?? "")
    }

    /// The ledger key of a push open: one per (tenant, tracking token); a second report of the
    /// same tap is a duplicate.
    public static func openKey(tenantID: String, trackingToken: String) -> LedgerKey {
        LedgerKey("pushes/opened", tenantID, trackingToken)
    }

    /// The ledger key of a token refresh.
    public static func refreshKey(tenantID: String, oldToken: String, newToken: String) -> LedgerKey {
        LedgerKey("devices/refresh-token", tenantID, oldToken, newToken)
    }

    static let jsonHeaders = [Header("Content-Type", "application/json")]
}
