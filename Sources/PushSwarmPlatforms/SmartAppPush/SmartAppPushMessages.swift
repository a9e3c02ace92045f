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
    public static func fingerprint(
        tenantID: String, appID: String, appUserID: String?, eventName: String, eventTime: String,
        deviceToken: String, context: JSONValue?, params: JSONValue?
    ) -> SHA256Digest {
        let user = (appUserID?.isEmpty ?? true) ? "anon:\(deviceToken)" : (appUserID ?? "")
        let canonical: JSONValue = [
            .string(tenantID), .string(appID), .string(user), .string(eventName), .string(eventTime),
            .string(deviceToken), context ?? .null, params ?? .null,
        ]
        return SHA256.hash(JSONWriter.bytes(of: canonical, sortingKeys: true))
    }

    /// The ledger key of a push open: one per (tenant, tracking token); a second report of the
    /// same tap is a duplicate.
    public static func openKey(tenantID: String, trackingToken: String) -> SHA256Digest {
        SHA256.hash(JSONWriter.bytes(of: ["pushes/opened", .string(tenantID), .string(trackingToken)]))
    }

    /// The ledger key of a token refresh.
    public static func refreshKey(tenantID: String, oldToken: String, newToken: String) -> SHA256Digest {
        SHA256.hash(JSONWriter.bytes(of: ["devices/refresh-token", .string(tenantID), .string(oldToken), .string(newToken)]))
    }

    static let jsonHeaders = [Header("Content-Type", "application/json")]
}
