public import PushSwarmCore
import PushSwarmMetrics

/// Smartico's wire vocabulary (spec 000, "iOS/Android clients integration guide"; the cids the
/// spec leaves out are from the research notes): JSON messages keyed by `cid` on a WebSocket, and
/// the public HTTP API for push tokens and push reporting.
public enum SmarticoMessages {
    public static let platformName = "smartico"

    /// "wss://api.smartico.ai/websocket/services?master&domain={{your domain}}&version={{your client code version}}".
    public static let socketPath = "/websocket/services"
    /// "https://papi2.smartico.ai/services/public".
    public static let publicPath = "/services/public"

    /// Class ids.
    public enum Cid {
        public static let ping = 1
        public static let pong = 2
        public static let initSession = 3
        public static let initSessionResponse = 4
        public static let identifyUser = 5
        public static let identifyUserResponse = 6
        public static let login = 7
        public static let logout = 8
        public static let event = 9
        public static let eventResponse = 10
        public static let loginResponse = 11
        public static let logoutResponse = 12
        // 103, 104, 106 are not in spec 000: the vendor's SDK sends them on the socket for a
        // popup (CLIENT_ENGAGEMENT_EVENT 110) it showed, acted on or failed to show
        // (docs/platforms.md, "Smartico": "engagement impression/action/failed 103/104/106").
        public static let engagementImpression = 103
        public static let engagementAction = 104
        public static let engagementFailed = 106
        public static let clientEngagementEvent = 110
        public static let sawShowSpinPush = 707
        public static let registerPushToken = 1003
        public static let registerPushTokenResponse = 2003

        /// The reply each request waits for.
        public static let replies: [Int: Int] = [
            ping: pong, initSession: initSessionResponse, identifyUser: identifyUserResponse, login: loginResponse,
            logout: logoutResponse, event: eventResponse, registerPushToken: registerPushTokenResponse,
        ]
    }

    public enum Operation {
        public static let connect = "smartico.connect"
        /// A call of the public HTTP API, as a log without bodies sees it.
        public static let publicAPI = "smartico.public_api"
        public static let initSession = "smartico.init_session"
        public static let identifyUser = "smartico.identify_user"
        public static let login = "smartico.login"
        public static let languageChanged = "smartico.language_changed"
        public static let registerPushToken = "smartico.register_push_token"
        public static let ping = "smartico.ping"
        public static let pong = "smartico.pong"
        public static let popupImpression = "smartico.popup_impression"
        public static let unknown = "smartico.unknown"
        /// The HTTP public API.
        public static let httpRegisterToken = "smartico.http_register_token"
        public static func report(_ eventType: String) -> String { "smartico.\(eventType)" }
    }

    /// The push reports of section 5, by `event_type`.
    public static let reportTypes: Set<String> = ["engagement_delivered", "engagement_impression", "engagement_action", "engagement_failed"]

    /// "enum PushClientPlatform { … NATIVE_IOS = 6, NATIVE_ANDROID = 7 … }".
    public static func platformCode(_ os: OperatingSystem) -> Int { os == .ios ? 6 : 7 }

    /// "enum PushNotificationUserStatus { ALLOWED = 0, ASK = 1, BLOCKED = 2, SUSPENDED = 3, NOT_SUPPORTED = 4 }".
    public static func userStatus(granted: Bool, asked: Bool) -> Int { granted ? 0 : (asked ? 2 : 1) }

    /// The ledger key of a message carrying `uuid` ("random unique identifier of the request"):
    /// sent once.
    public static func messageKey(uuid: String) -> LedgerKey {
        LedgerKey("smartico", uuid).once
    }

    /// The ledger key of a popup's impression (one per engagement).
    public static func impressionKey(engagementUID: String) -> LedgerKey {
        LedgerKey("smartico-impression", engagementUID)
    }

    /// The ledger key of a token registered over HTTP POST (which carries no uuid).
    public static func httpTokenKey(user: String, token: String) -> LedgerKey {
        LedgerKey("smartico-http-token", user, token)
    }
}

extension SmarticoSettings {
    /// Equal settings with storage of their own, for one partition (`String.partitionCopy`).
    func partitionCopy() -> SmarticoSettings {
        var copy = self
        copy.labelKey = labelKey.partitionCopy()
        copy.brandKey = brandKey.partitionCopy()
        copy.appID = appID.partitionCopy()
        copy.trackerVersion = trackerVersion.partitionCopy()
        copy.mock.behaviour = mock.behaviour.partitionCopy()
        return copy
    }
}

/// A scenario's `platforms.smartico` section.
public struct SmarticoSettings: Sendable {
    /// "label_key … A unique key represents the label on smartico side"; the public API's `api_key`.
    public var labelKey = "6816ba80-2967-4efb-a60c-694c72b03197"
    /// "brand_key … or null if the label is standalone".
    public var brandKey: String? = "c24a284e"
    /// The app id passed as `domain` ("you can pass the application ID (e.g. myapp.company.com)").
    public var appID = "com.pushswarm.demo"
    /// The tracker library's version ("Format X.Y.Z").
    public var trackerVersion = "1.1.277"
    /// Research notes: "request timeout 30 s".
    public var requestTimeout = TimeSpan.seconds(30)
    /// Research notes: "Client sends its own PING after 29 s silence".
    public var silenceBeforePing = TimeSpan.seconds(29)
    /// Research notes: "reconnect fixed 1 s after close (no backoff!)".
    public var reconnectDelay = TimeSpan.seconds(1)
    /// How long after going to background the socket closes: "iOS: 5 s after entering background,
    /// then suspended: sockets die within seconds of backgrounding"; Android apps keep the process
    /// (and the socket) a while longer.
    public var backgroundSocketClose = PerOS<TimeSpan>(android: .minutes(5), ios: .seconds(5))
    /// A new logical session (and a LOGIN message) after this long without activity ("In the web
    /// context, Smartico sends a "Login" event automatically when the user comes online after a
    /// minimum of 30 minutes of inactivity").
    public var logicalSessionGap = TimeSpan.minutes(30)
    /// Chance per session that the user changes the app's language (CORE_LANGUAGE_CHANGE).
    public var languageChangePerSession = 0.01
    public var mock = SmarticoMockSettings()

    public init() {}
}

/// The built-in Smartico service's settings.
public struct SmarticoMockSettings: Sendable {
    public var behaviour = MockBehaviour()
    /// "The server will periodically ping the client": after this long without a message from it
    /// (shorter than the client's own 29 s, so that the service's PINGs keep a quiet socket alive).
    public var pingInterval = TimeSpan.seconds(25)
    /// A session that answered none of the last two PINGs is closed.
    public var missedPongsBeforeClose = 2
    /// Research notes: "Empty session_id => backend rejects and blocks the IP ~60 min".
    public var blockDuration = TimeSpan.minutes(60)
    /// Share of a campaign's popups sent as mini-games (SAW_SHOW_SPIN_PUSH) instead.
    public var miniGameShare = 0.2
    /// Popups kept per user for their next IDENTIFY ("Server re-sends pending engagements on every IDENTIFY").
    public var pendingPopupsPerUser = 20

    public init() {}
}
