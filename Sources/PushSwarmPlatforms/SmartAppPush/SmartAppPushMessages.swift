public import PushSwarmCore
public import PushSwarmMetrics
import PushSwarmSystem

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

    /// The operation of a request for `path` (without its query); nil: no such endpoint.
    public static func operation(forPath path: String) -> String? {
        switch path {
        case Path.events: Operation.events
        case Path.pushesOpened: Operation.pushesOpened
        case Path.refreshToken: Operation.refreshToken
        default: nil
        }
    }

    public enum Path {
        public static let events = "/events"
        public static let pushesOpened = "/pushes/opened"
        public static let refreshToken = "/devices/refresh-token"
    }

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
        var identity = EventIdentity()
        func field(_ text: String) -> ArraySlice<UInt8> { Array(text.utf8)[...] }
        return identity.identify(
            tenantID: tenantID, appID: appID, appUserID: appUserID.map(field), eventName: field(eventName),
            eventTime: field(eventTime), deviceToken: field(deviceToken),
            context: { $0.write(context ?? .null, sortingKeys: true) }, params: { $0.write(params ?? .null, sortingKeys: true) }
        ).fingerprint
    }

    /// The ledger key of an event: the fingerprint's fields, in its order and with its rules
    /// (objects in canonical form, the anonymous user resolved), so two events share a key
    /// exactly when the service would call them duplicates.
    public static func eventKey(
        tenantID: String, appID: String, appUserID: String?, eventName: String, eventTime: String,
        deviceToken: String, context: JSONValue?, params: JSONValue?
    ) -> LedgerKey {
        var key = EventKey(
            tenantID: tenantID, appID: appID, appUserID: appUserID, eventName: eventName, eventTime: eventTime, deviceToken: deviceToken)
        key.add(context)
        key.add(params)
        return key.key
    }

    /// An event's fingerprint and ledger key together, from its fields' UTF-8 as the mock reads
    /// them out of a request body: one pass over the fields, no `String` made of them, and a
    /// canonical buffer kept from one event to the next (the mock holds one identity).
    ///
    /// `context` and `params` write their field's canonical form (`JSONWriter.write(_:sortingKeys:
    /// true)`, null when absent) into the writer they are given; the ledger key hashes that text.
    public struct EventIdentity: Sendable {
        private var canonical = JSONWriter()
        private var builder = LedgerKey.Builder()

        public init() {}

        /// The fields are each string's UTF-8 as read out of a request body, written into the
        /// fingerprint's text escaped where they need it (the writer looks; nothing is promised
        /// plain).
        public mutating func identify(
            tenantID: String, appID: String, appUserID: ArraySlice<UInt8>?, eventName: ArraySlice<UInt8>, eventTime: ArraySlice<UInt8>,
            deviceToken: ArraySlice<UInt8>, context: (inout JSONWriter) -> Void, params: (inout JSONWriter) -> Void
        ) -> (fingerprint: SHA256Digest, key: LedgerKey) {
            canonical.removeAll()
            builder = LedgerKey.Builder()
            builder.add("events")
            canonical.beginArray()
            tenantID.withUTF8Span { add($0) }
            appID.withUTF8Span { add($0) }
            if let appUserID, !appUserID.isEmpty {
                add(appUserID)
            } else {
                withAnonymousUser(of: deviceToken.span) { add($0) }
            }
            add(eventName)
            add(eventTime)
            add(deviceToken)
            add(context)
            add(params)
            canonical.endArray()
            return (canonical.withBytes { SHA256.hash($0) }, builder.key.once)
        }

        private mutating func add(_ field: ArraySlice<UInt8>) {
            add(field.span)
        }

        private mutating func add(_ utf8: Span<UInt8>) {
            canonical.string(utf8: utf8)
            builder.add(utf8: utf8)
        }

        private mutating func add(_ write: (inout JSONWriter) -> Void) {
            let text = canonical.writeValue(write)
            canonical.withBytes { builder.add(canonicalJSON: $0.extracting(text)) }
        }
    }

    /// `eventKey` in steps, for a client that writes the context and params into its request body
    /// in canonical form and hashes those bytes: the scalar fields, then the context, then the
    /// params.
    public struct EventKey {
        private var builder = LedgerKey.Builder()

        public init(tenantID: String, appID: String, appUserID: String?, eventName: String, eventTime: String, deviceToken: String) {
            self = eventTime.withUTF8Span { Self(tenantID: tenantID, appID: appID, appUserID: appUserID, eventName: eventName, eventTime: $0, deviceToken: deviceToken) }
        }

        /// The same, with the event's time as its UTF-8 (`RFC3339.Text`).
        public init(tenantID: String, appID: String, appUserID: String?, eventName: String, eventTime: Span<UInt8>, deviceToken: String) {
            builder.add("events")
            builder.add(tenantID)
            builder.add(appID)
            if let appUserID, !appUserID.isEmpty {
                builder.add(appUserID)
            } else {
                deviceToken.withUTF8Span { token in withAnonymousUser(of: token) { builder.add(utf8: $0) } }
            }
            builder.add(eventName)
            builder.add(utf8: eventTime)
            builder.add(deviceToken)
        }

        /// A field given as its canonical JSON text (`JSONWriter.write(_:sortingKeys: true)`).
        public mutating func add(canonicalJSON text: Span<UInt8>) { builder.add(canonicalJSON: text) }

        /// A field given as a value (nil: absent, hashed as null).
        public mutating func add(_ value: JSONValue?) {
            add(canonicalJSON: JSONWriter.bytes(of: value ?? .null, sortingKeys: true).span)
        }

        /// An event is sent once: its time is in its key.
        public var key: LedgerKey { builder.key.once }
    }

    /// Calls `body` with "anon:{device_token}", the user the service makes up for an event without
    /// one, written into a temporary buffer (on the stack for a token of ordinary length: an
    /// FCM token is 163 bytes).
    private static func withAnonymousUser<Result>(of token: Span<UInt8>, _ body: (Span<UInt8>) -> Result) -> Result {
        let prefix: StaticString = "anon:"
        let count = prefix.utf8CodeUnitCount + token.count
        if count <= 256 {
            var buffer = InlineArray<256, UInt8>(repeating: 0)
            do {
                var out = buffer.mutableSpan
                prefix.withUTF8Span { out.copy($0, to: 0) }
                out.copy(token, to: prefix.utf8CodeUnitCount)
            }
            return body(buffer.span.extracting(..<count))
        }
        var buffer = [UInt8](repeating: 0, count: count)
        do {
            var out = buffer.mutableSpan
            prefix.withUTF8Span { out.copy($0, to: 0) }
            out.copy(token, to: prefix.utf8CodeUnitCount)
        }
        return body(buffer.span)
    }

    /// The ledger key of a push open: one per (tenant, tracking token); a second report of the
    /// same tap is a duplicate. Sent once.
    public static func openKey(tenantID: String, trackingToken: String) -> LedgerKey {
        LedgerKey("pushes/opened", tenantID, trackingToken).once
    }

    /// The ledger key of a token refresh.
    public static func refreshKey(tenantID: String, oldToken: String, newToken: String) -> LedgerKey {
        LedgerKey("devices/refresh-token", tenantID, oldToken, newToken)
    }

}
