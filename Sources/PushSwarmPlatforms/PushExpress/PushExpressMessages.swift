public import PushSwarmCore
import PushSwarmMetrics

/// PushExpress's wire vocabulary (spec 003, "SDK and application instances API reference"; the
/// paths, lost from the spec's text, are from the research notes): app instances, their info, and
/// the two kinds of event.
public enum PushExpressMessages {
    public static let platformName = "pushexpress"

    public enum Operation {
        public static let createInstance = "pushexpress.create_instance"
        public static let updateInfo = "pushexpress.update_info"
        public static let lifecycleEvent = "pushexpress.lifecycle_event"
        public static let notificationEvent = "pushexpress.notification_event"
        public static let deactivate = "pushexpress.deactivate"
        public static let unknown = "pushexpress.unknown"
    }

    /// `POST /apps/{app_id}/instances`.
    /// The method and operation of a request for `path` (without its query): `/apps/{app}/instances`
    /// and what lies under an instance; nil: no such endpoint.
    public static func route(forPath path: String) -> (method: String, operation: String)? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        guard parts.count >= 3, parts[0] == "apps", parts[2] == "instances" else { return nil }
        switch parts.count {
        case 3: return ("POST", Operation.createInstance)
        case 5 where parts[4] == "info": return ("PUT", Operation.updateInfo)
        case 5 where parts[4] == "deactivate": return ("POST", Operation.deactivate)
        case 6 where parts[4] == "events" && parts[5] == "lifecycle": return ("POST", Operation.lifecycleEvent)
        case 6 where parts[4] == "events" && parts[5] == "notification": return ("POST", Operation.notificationEvent)
        default: return nil
        }
    }

    public static func instancesPath(appID: String) -> String { "/apps/\(appID)/instances" }
    /// `PUT /apps/{app_id}/instances/{ic_id}/info`.
    public static func infoPath(appID: String, instanceID: String) -> String { "/apps/\(appID)/instances/\(instanceID)/info" }
    /// `POST /apps/{app_id}/instances/{ic_id}/events/lifecycle`.
    public static func lifecyclePath(appID: String, instanceID: String) -> String { "/apps/\(appID)/instances/\(instanceID)/events/lifecycle" }
    /// `POST /apps/{app_id}/instances/{ic_id}/events/notification`.
    public static func notificationPath(appID: String, instanceID: String) -> String { "/apps/\(appID)/instances/\(instanceID)/events/notification" }
    /// `POST /apps/{app_id}/instances/{ic_id}/deactivate` (logout).
    public static func deactivatePath(appID: String, instanceID: String) -> String { "/apps/\(appID)/instances/\(instanceID)/deactivate" }

    /// "transport_type, required. Push transport type. One of fcm, onesignal, huawei, apns"
    /// (the research notes add `fcm.data`, which the Android SDK sends).
    public static let transportTypes: Set<String> = ["fcm", "fcm.data", "onesignal", "huawei", "apns"]
    /// "platform_type, required. Notification rendering platform. One of android, ios, browser".
    public static let platformTypes: Set<String> = ["android", "ios", "browser"]
    /// Lifecycle "event, required. Event name, one of: onscreen, background, closed".
    public static let lifecycleEvents: Set<String> = ["onscreen", "background", "closed"]
    /// Notification "event, required. Event name, one of: delivered, clicked".
    public static let notificationEvents: Set<String> = ["delivered", "clicked"]

    /// The FCM data keys: "Incoming message id MUST be registered by extracting data field
    /// px.msg_id"; title, body, image, icon and link ride along.
    public enum Data {
        public static let messageID = "px.msg_id"
        public static let title = "px.title"
        public static let body = "px.body"
        public static let image = "px.image"
        public static let icon = "px.icon"
        public static let link = "px.link"
    }

    /// The instance id the service gives an `ic_token`. The real service's ids are opaque; the
    /// mock derives them from the token so that both sides can name the instances of installs that
    /// existed before the run.
    public static func instanceID(icToken: String) -> String {
        let digest = SHA256.hash(Array("px-instance:\(icToken)".utf8))
        return Hex.string(Array(digest.bytes.prefix(12)))
    }

    /// The `ic_token` of an install from before the run, derived from its push token (both sides
    /// know that token from the start).
    public static func preRunICToken(pushToken: String) -> String {
        // "Generate UUIDv4 (or UUIDv7) to use as ic_token".
        Hex.uuidV4(SHA256.hash(Array("px-ic-token:\(pushToken)".utf8)).bytes)
    }

    /// Ledger key of an instance creation: one per `ic_token`.
    public static func instanceKey(icToken: String) -> LedgerKey {
        LedgerKey("px-instance", icToken)
    }

    /// Ledger key of a notification event: one per (instance, message, event), sent once.
    public static func notificationKey(instanceID: String, messageID: String, event: String) -> LedgerKey {
        LedgerKey("px-notification", instanceID, messageID, event).once
    }

}

/// How a group's PushExpress client backs off after an error: the spec's rule, or what one of the
/// vendor's SDKs does instead (research notes).
public enum PushExpressClientKind: String, Sendable, CaseIterable {
    /// "retry infinitely with exponential backoff algorithm, better with random initial value
    /// between 1-5s, capped at maximum delay of about 120s".
    case spec
    /// The Swift SDK: a fresh random 1–5 s before every retry; the delay never grows.
    case swift
    /// The Android SDK v1.4: 10 tries from 2 s doubling to a 64 s cap, then its 120 s loop; and
    /// each pass of that loop starts another info loop without cancelling the old one.
    case android

    /// The delay before retry `retry` (1 for the first) of an error episode; `first` is the
    /// episode's random initial delay, drawn once when it began.
    public func delay(beforeRetry retry: Int, first: TimeSpan, random: inout SeededRandom) -> TimeSpan {
        switch self {
        case .spec:
            let doublings = min(retry - 1, 16)
            return min(TimeSpan(microseconds: first.microseconds << Int64(doublings)), .seconds(120))
        case .swift:
            return Self.randomInitialDelay(random: &random)
        case .android:
            guard retry <= 10 else { return .seconds(120) }
            return .seconds(Double(min(64, 2 << min(retry - 1, 6))))
        }
    }

    /// "random initial value between 1-5s".
    public static func randomInitialDelay(random: inout SeededRandom) -> TimeSpan {
        TimeSpan(microseconds: 1_000_000 + Int64(random.nextUnit() * 4_000_000))
    }

    /// The agent name each sends in `agent_name`.
    var agentName: String {
        switch self {
        case .spec: "pushswarm_px_spec_1.0.0"
        case .swift: "px_swift_sdk_1.0.0"
        case .android: "px_android_sdk_1.4.0"
        }
    }
}

extension PushExpressSettings {
    /// Equal settings with storage of their own, for one partition (`String.partitionCopy`).
    func partitionCopy() -> PushExpressSettings {
        var copy = self
        copy.appID = appID.partitionCopy()
        copy.mockBehaviour = mockBehaviour.partitionCopy()
        return copy
    }
}

/// A scenario's `platforms.pushexpress` section.
public struct PushExpressSettings: Sendable {
    /// The app_id in every path ("app_id (which MUST be stored in app local storage)").
    public var appID = "pushswarm-demo"
    public var requestTimeout = TimeSpan.seconds(30)
    /// The interval the mock answers in `update_interval_sec` ("default 120 s").
    public var updateInterval = TimeSpan.seconds(120)
    /// Most info loops one Android v1.4 install may accumulate (the bug doubles them every pass);
    /// beyond it the run counts `pushexpress.loopsCapped` instead of starting another.
    public var maximumLoops = 64
    /// Events waiting for the instance id (before the first create succeeds); beyond this, dropped.
    public var eventBufferCapacity = 100
    public var mockBehaviour = MockBehaviour()

    public init() {}
}
