public import PushSwarmCore
public import PushSwarmMetrics

/// Flocktory's mobile-push API (spec 001, "Mobile Push Integration"): every call a GET whose
/// `body` parameter is URL-encoded JSON, answered with JSONP; a session cookie and a
/// `site-session-id` from the first call carried by every later one.
public enum FlocktoryMessages {
    public static let platformName = "flocktory"

    public enum Path {
        /// Request 7: the first call of all ("containing just the site-id key"), and the email on login.
        public static let setup = "/u_shaman/setup-api.js"
        /// Requests 2–6: page, item and category views, cart add and remove.
        public static let track = "/underworld/tracks/ultimate.js"
        /// Request 1: an order.
        public static let order = "/1/postcheckout/offer.js"
        /// Request 8: the push subscription.
        public static let attachPush = "/u_flockman/attach-push-to-session.js"
        public static let customEvent = "/u_shaman/custom-events.js"
        public static let profileMeta = "/u_flockman/set-profile-custom-meta.js"
        /// The mock's tracked icon and landing links (a push's `iconUrl` and `landingUrl`).
        public static let show = "/t/show/"
        public static let click = "/t/click/"
    }

    /// The operation of a request for `path` (without its query), tracked links' redirects
    /// included; nil: no such endpoint.
    public static func operation(forPath path: String) -> String? {
        switch path {
        case Path.setup: return Operation.setup
        case Path.track: return Operation.track
        case Path.order: return Operation.order
        case Path.attachPush: return Operation.attachPush
        case Path.customEvent: return Operation.customEvent
        case Path.profileMeta: return Operation.profileMeta
        default: break
        }
        if path.hasPrefix(Path.show) || path.hasPrefix("/static/") { return Operation.show }
        if path.hasPrefix(Path.click) || path.hasPrefix("/r/") || path.hasPrefix("/landing/") { return Operation.click }
        return nil
    }

    public enum Operation {
        public static let setup = "flocktory.setup"
        public static let track = "flocktory.track"
        public static let order = "flocktory.order"
        public static let attachPush = "flocktory.attach_push"
        public static let customEvent = "flocktory.custom_event"
        public static let profileMeta = "flocktory.profile_meta"
        /// Fetching a push's icon ("iconUrl for show"), each redirect a request.
        public static let show = "flocktory.push_show"
        /// Fetching a push's landing URL ("landing url for click"), each redirect a request.
        public static let click = "flocktory.push_click"
        public static let unknown = "flocktory.unknown"
    }

    /// "value of the `__flocktory_web_session2` cookie (will be contained in a `set-cookie` header".
    public static let cookieName = "__flocktory_web_session2"

    /// The `data.action` values of `ultimate.js`.
    public static let trackActions: Set<String> = [
        "session.page_visit", "customer.item_visit", "customer.category_visit", "customer.add_to_cart", "customer.remove_from_cart",
    ]

    /// A GET request to `path` with `body` as URL-encoded JSON and an optional JSONP callback.
    public static func request(_ path: String, body: JSONValue, callback: String?, cookie: String?) -> Request {
        var items: [(String, String?)] = [("body", JSONWriter.text(of: body))]
        if let callback { items.append(("callback", callback)) }
        var headers = [Header("Accept", "*/*")]
        if let cookie { headers.append(Header("Cookie", "\(cookieName)=\(cookie)")) }
        return Request(method: "GET", path: "\(path)?\(URLQuery.build(items))", headers: headers)
    }

    /// The JSON inside a JSONP answer (`flock_jsonp({...})`), or the body itself when it is JSON.
    public static func jsonpPayload(_ body: [UInt8]) -> JSONValue? {
        let text = String(decoding: body, as: UTF8.self)
        if let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")"), open < close {
            return try? JSONParser.parse(Array(text[text.index(after: open)..<close].utf8))
        }
        return try? JSONParser.parse(body)
    }

    // A message's show and click, and an order, are sent once; a subscription may come again.
    public static func showKey(_ message: String) -> LedgerKey { LedgerKey("flocktory-show", message).once }
    public static func clickKey(_ message: String) -> LedgerKey { LedgerKey("flocktory-click", message).once }
    public static func orderKey(site: String, order: String) -> LedgerKey { LedgerKey("flocktory-order", site, order).once }
    public static func subscriptionKey(session: String, token: String) -> LedgerKey {
        LedgerKey("flocktory-push", session, token)
    }
}

extension FlocktorySettings {
    /// Equal settings with storage of their own, for one partition (`String.partitionCopy`).
    func partitionCopy() -> FlocktorySettings {
        var copy = self
        copy.siteID = siteID.partitionCopy()
        copy.deepLinkBase = deepLinkBase.partitionCopy()
        copy.mockBehaviour = mockBehaviour.partitionCopy()
        return copy
    }
}

/// A scenario's `platforms.flocktory` section.
public struct FlocktorySettings: Sendable {
    /// "The site/site-id/site_id should contain the id of your site in Flocktory system".
    public var siteID = "1833"
    /// Deep links the app passes as `payload.url` start with this.
    public var deepLinkBase = "demoshop://"
    public var requestTimeout = TimeSpan.seconds(15)
    /// A new web session (a new setup call) after this long without activity.
    public var sessionGap = TimeSpan.minutes(30)
    /// Requests an install keeps while its session is being set up; beyond this, dropped.
    public var waitingCapacity = 100
    /// Redirects a client follows for an icon or landing URL before it gives up.
    public var maximumRedirects = 5
    public var mockBehaviour = MockBehaviour()

    public init() {}
}
