import Foundation
import PushSwarmCore
public import PushSwarmMetrics

/// A Flocktory-integrated app (spec 001): no SDK, "5-7 HTTP requests".
///
/// The rules it follows, in the spec's words:
/// - "before making any request, you should first execute req. number 7 containg just the site-id
///   key in order to retrieve the values to be used after in every request": the
///   `__flocktory_web_session2` cookie, sent with every later request, and the `site-session-id`
///   from the JSONP body, "passed in all further request bodies". Requests raised before then wait.
/// - "If user authorizes while using the app, you should pass the email used to Flocktory"
///   (request 7 again, with `profile`).
/// - "the body parameter should be urlencoded"; every call is a GET.
/// - Push data "landingUrl … iconUrl": "the landing and icon urls may perform one or more
///   redirects … you should still execute the requests in order for the statistics to be collected
///   fully (iconUrl for show, landing url for click)": fetched, redirects followed one request at a time.
struct FlocktoryClient: PlatformClient {
    private enum Purpose {
        case setup
        case event(LedgerKey?)
        /// A hop of an icon or landing fetch: the ledger key of the first hop, and hops so far.
        case fetch(operation: String, key: LedgerKey, request: Request)
    }

    let settings: FlocktorySettings
    /// A broken integration: later calls go without the cookie and the `site-session-id`.
    let omitsSession: Bool

    private(set) var cookie: String?
    private(set) var siteSessionID: String?
    private var isSettingUp = false
    private var lastActivity: Instant?
    private var waiting: [(operation: String, key: LedgerKey?, build: @Sendable (String, String) -> Request)] = []
    private var inFlight: [UInt64: Purpose] = [:]
    private var nextID: UInt64 = 0
    /// The token Flocktory last heard attached to the session.
    private var attachedToken: String?

    init(settings: FlocktorySettings, omitsSession: Bool = false) {
        self.settings = settings
        self.omitsSession = omitsSession
    }

    var pendingRequests: Int { inFlight.count + waiting.count }

    mutating func dropOldestWaiting(reason: String, into actions: inout [DeviceAction]) -> Bool {
        guard !waiting.isEmpty else { return false }
        waiting.removeFirst()
        actions.append(.drop(reason: reason))
        return true
    }

    mutating func started(device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        // An install from before the run attached its token in an earlier session.
        if device.profile.isInstalledAtStart, device.pushPermissionGranted { attachedToken = device.pushToken }
        return []
    }

    mutating func handle(_ intent: LifecycleIntent, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        switch intent {
        case .installed:
            cookie = nil
            siteSessionID = nil
            attachedToken = nil
            return []
        case .appLaunched:
            return touch(now: now) + pageVisit(device.currentScreen, device: device, now: now)
        case .userEvent(let name, let parameters):
            return touch(now: now) + event(name, parameters, device: device, now: now)
        case .loggedIn(let user, _):
            // Request 7 with the profile: "Use this request when user authorizes in the app".
            let site = settings.siteID
            let profile: JSONValue = ["email": .string(Self.email(user)), "name": .string(user)]
            return touch(now: now) + send(FlocktoryMessages.Operation.setup, key: nil) { cookie, session in
                FlocktoryMessages.request(FlocktoryMessages.Path.setup, body: ["siteId": .string(site), "profile": profile, "site-session-id": .string(session)], callback: "flock_jsonp_1", cookie: cookie)
            }
        case .pushTokenIssued, .pushTokenRotated, .pushPermissionChanged:
            return attachPushIfNeeded(device: device, now: now)
        case .notificationDisplayed(let notification):
            // "iconUrl for show".
            return fetch(notification.data["iconUrl"], operation: FlocktoryMessages.Operation.show, key: notification.data["iconUrl"].map(Self.messageID).map(FlocktoryMessages.showKey))
        case .notificationTapped(let notification):
            // "landing url for click".
            return fetch(notification.data["landingUrl"], operation: FlocktoryMessages.Operation.click, key: notification.data["landingUrl"].map(Self.messageID).map(FlocktoryMessages.clickKey))
        case .appBackgrounded, .appClosed, .loggedOut, .notificationDismissed, .notificationNotDisplayed:
            return []
        }
    }

    mutating func handle(_ completion: ExchangeCompletion, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] {
        guard let purpose = inFlight.removeValue(forKey: completion.requestID) else { return [] }
        let response: Response? = if case .response(let response) = completion.outcome { response } else { nil }
        switch purpose {
        case .setup:
            isSettingUp = false
            // A known visitor's cookie is not set again: the one held stays.
            guard let response, response.status == 200,
                  let value = Self.cookieValue(response) ?? cookie, let session = FlocktoryMessages.jsonpPayload(response.body)?["site-session-id"]?.stringValue
            else {
                // No session: what waited for it is given up, each one counted.
                let dropped = waiting.count
                waiting = []
                return Array(repeating: .drop(reason: "flocktoryNoSession"), count: dropped)
            }
            cookie = value
            siteSessionID = session
            var actions: [DeviceAction] = []
            let ready = waiting
            waiting = []
            for item in ready { actions += dispatch(item.operation, key: item.key, request: item.build(value, session)) }
            return actions + attachPushIfNeeded(device: device, now: now)
        case .event(let key):
            guard let response, (200..<300).contains(response.status) else { return [] }
            // A later answer may set a new session (a setup-api call with the user's profile): a
            // cookie jar replaces a cookie on Set-Cookie (RFC 6265 section 5.3, step 11), and the
            // answer's site-session-id replaces the one held. Before, devices kept the old pair.
            if let value = Self.cookieValue(response) { cookie = value }
            if let session = FlocktoryMessages.jsonpPayload(response.body)?["site-session-id"]?.stringValue, !session.isEmpty {
                siteSessionID = session
            }
            guard let key else { return [] }
            return [.confirmed(key)]
        case .fetch(let operation, let key, let sent):
            let hops = sent.locations.count
            guard let response else { return [] }
            var actions: [DeviceAction] = []
            // The service counted the show or click at the first hop.
            if hops == 0, (200..<400).contains(response.status) { actions.append(.confirmed(key)) }
            guard (300..<400).contains(response.status), let location = response.header("Location") else { return actions }
            guard hops < settings.maximumRedirects else { return actions + [.count(.flocktoryTooManyRedirects)] }
            nextID += 1
            // The Location is resolved against the URL it answered, by the transport, which knows
            // that URL (a target may have a path); a URL leaving the target's host goes to the target.
            let request = Request(method: "GET", path: sent.path, headers: sent.headers, locations: sent.locations + [location])
            inFlight[nextID] = .fetch(operation: operation, key: key, request: request)
            return actions + [.send(OutgoingRequest(id: nextID, operation: operation, request: request, timeout: settings.requestTimeout, retryNumber: 0))]
        }
    }

    mutating func timerFired(_ timer: UInt64, device: DeviceSnapshot, now: Instant, random: inout SeededRandom) -> [DeviceAction] { [] }

    // MARK: - Session

    /// A new web session after `sessionGap` of inactivity (or none yet): request 7 first.
    private mutating func touch(now: Instant) -> [DeviceAction] {
        defer { lastActivity = now }
        if let last = lastActivity, now - last <= settings.sessionGap, siteSessionID != nil { return [] }
        siteSessionID = nil
        return setup()
    }

    private mutating func setup() -> [DeviceAction] {
        guard !isSettingUp else { return [] }
        isSettingUp = true
        // "containg just the site-id key"; a cookie already held is sent, so the service keeps the visitor.
        let request = FlocktoryMessages.request(FlocktoryMessages.Path.setup, body: ["siteId": .string(settings.siteID)], callback: "flock_jsonp", cookie: cookie)
        nextID += 1
        inFlight[nextID] = .setup
        return [.send(OutgoingRequest(id: nextID, operation: FlocktoryMessages.Operation.setup, request: request, timeout: settings.requestTimeout, retryNumber: 0))]
    }

    /// Sends now if the session is set up, else once it is.
    private mutating func send(_ operation: String, key: LedgerKey?, build: @escaping @Sendable (String, String) -> Request) -> [DeviceAction] {
        if let cookie, let siteSessionID, !isSettingUp { return dispatch(operation, key: key, request: build(cookie, siteSessionID)) }
        guard waiting.count < settings.waitingCapacity else { return [.drop(reason: "flocktoryWaitingFull")] }
        waiting.append((operation, key, build))
        return isSettingUp ? [] : setup()
    }

    private mutating func dispatch(_ operation: String, key: LedgerKey?, request: Request) -> [DeviceAction] {
        var request = request
        if omitsSession {
            request.headers.removeAll { $0.name == "Cookie" }
            if let body = URLQuery.parameters(ofTarget: request.path)?["body"], var object = (try? JSONParser.parse(Array(body.utf8)))?.objectValue {
                object["site-session-id"] = nil
                let path = request.pathWithoutQuery
                request.path = "\(path)?\(URLQuery.build([("body", JSONWriter.text(of: .object(object)))]))"
            }
        }
        nextID += 1
        inFlight[nextID] = .event(key)
        return [.send(OutgoingRequest(id: nextID, operation: operation, request: request, timeout: settings.requestTimeout, retryNumber: 0))]
    }

    // MARK: - Events

    private mutating func pageVisit(_ screen: String, device: DeviceSnapshot, now: Instant) -> [DeviceAction] {
        // Request 4: "payload.ga - leave these values blank, as in the example".
        let payload: JSONValue = [
            "resolution": .string(device.profile.os == .ios ? "1170x2532" : "1080x2400"),
            "ga": ["utmcsr": "", "utmccn": "", "utmcmd": "", "h_utmcsr": "", "h_utmccn": "", "h_utmcmd": ""],
            "url": .string("\(settings.deepLinkBase)\(screen)"),
        ]
        return track("session.page_visit", links: [:], payload: payload)
    }

    private mutating func event(_ name: String, _ parameters: JSONObject, device: DeviceSnapshot, now: Instant) -> [DeviceAction] {
        func text(_ key: String) -> String {
            switch parameters[key] {
            case .string(let value)?: value
            case .number(let value)?: Int(exactly: value).map { String($0) } ?? String(value)
            default: "1"
            }
        }
        let base = settings.deepLinkBase
        switch name {
        case "screen_viewed":
            return pageVisit(text("screen_name"), device: device, now: now)
        case "product_viewed":
            // Request 2: "links.yandex_offer - product ID … payload.url - product deep-link".
            return track("customer.item_visit", links: ["yandex_offer": .string(text("product_id"))], payload: ["url": .string("\(base)product/\(text("product_id"))")])
        case "category_browsed", "product_list_viewed":
            let category = text(name == "category_browsed" ? "category_name" : "category")
            return track("customer.category_visit", links: ["yandex_category": .string(category)], payload: ["url": .string("\(base)category/\(URLQuery.encode(category))")])
        case "add_to_cart", "remove_from_cart":
            // Requests 5 and 6: "payload.count - the amont of product being added".
            let count = Double(parameters["quantity"]?.numberValue ?? 1)
            var custom: JSONObject = ["id": .string(text("product_id")), "count": .number(count)]
            if name == "add_to_cart" { custom["price"] = .number(parameters["price"]?.numberValue ?? 0) }
            return track("customer.\(name)", links: ["yandex_offer": .string(text("product_id"))], payload: ["count": .number(count), "custom_data": .object(custom), "url": .string("\(base)cart")])
        case "purchase_completed":
            return order(text("order_id"), parameters: parameters, device: device)
        case "search_performed", "wishlist_added", "begin_checkout":
            let site = settings.siteID
            return send(FlocktoryMessages.Operation.customEvent, key: nil) { cookie, session in
                FlocktoryMessages.request(FlocktoryMessages.Path.customEvent, body: ["event": .string(name), "site-id": .string(site), "site-session-id": .string(session)], callback: "flock_jsonp", cookie: cookie)
            }
        default:
            return []
        }
    }

    private mutating func track(_ action: String, links: JSONObject, payload: JSONValue) -> [DeviceAction] {
        var allLinks = links
        allLinks["site"] = .number(Double(settings.siteID) ?? 0)
        let data: JSONValue = ["action": .string(action), "links": .object(allLinks), "payload": payload]
        return send(FlocktoryMessages.Operation.track, key: nil) { cookie, session in
            FlocktoryMessages.request(FlocktoryMessages.Path.track, body: ["data": data, "site-session-id": .string(session)], callback: nil, cookie: cookie)
        }
    }

    /// Request 1: "i - order ID, e - user's email, n - user's name, p - order price, t - order
    /// products array structured like this {"0":{},"1":{} ... }".
    private mutating func order(_ orderID: String, parameters: JSONObject, device: DeviceSnapshot) -> [DeviceAction] {
        let site = settings.siteID
        let user = device.userID ?? "guest-\(device.profile.index)"
        // "p - order price", "t-*-p - price of the product", "t-*-с - amount": the order's price is
        // what its lines add up to, each unit priced at least 1. Up to 10 lines carry the units.
        let amount = parameters["amount"]?.numberValue ?? 0
        let units = max(1, min(parameters["item_count"]?.integerValue ?? 1, 1_000))
        let lines = min(units, 10)
        let unitPrice = max(1, Int((amount / Double(units)).rounded()))
        var products = JSONObject()
        for index in 0..<lines {
            let count = units / lines + (index < units % lines ? 1 : 0)
            products[String(index)] = ["i": .number(Double(7_000_000 + index)), "t": .string("Item \(index + 1)"), "c": .number(Double(count)), "p": .number(Double(unitPrice))]
        }
        let body: JSONObject = [
            "site_id": .number(Double(site) ?? 0), "jsapi_version": "2.0", "i": .string(orderID), "e": .string(Self.email(user)),
            "n": .string(user), "p": .number(Double(unitPrice * units)), "t": .object(products),
        ]
        return send(FlocktoryMessages.Operation.order, key: FlocktoryMessages.orderKey(site: site, order: orderID)) { cookie, session in
            var full = body
            full["site-session-id"] = .string(session)
            return FlocktoryMessages.request(FlocktoryMessages.Path.order, body: .object(full), callback: "flock_jsonp", cookie: cookie)
        }
    }

    /// Request 8, when the app has a token and permission the service has not heard of.
    private mutating func attachPushIfNeeded(device: DeviceSnapshot, now: Instant) -> [DeviceAction] {
        guard device.pushPermissionGranted, let token = device.pushToken, token != attachedToken else { return [] }
        attachedToken = token
        let site = settings.siteID
        let os = device.profile.os == .ios ? "ios" : "android"
        return send(FlocktoryMessages.Operation.attachPush, key: nil) { cookie, session in
            let body: JSONValue = [
                "from-mobile-app": true, "platform": "firebase", "os": .string(os), "site-id": .string(site),
                "token": .string(token), "site-session-id": .string(session),
            ]
            return FlocktoryMessages.request(FlocktoryMessages.Path.attachPush, body: body, callback: "flock_jsonp", cookie: cookie)
        }
    }

    /// Fetches a push's icon or landing URL; each redirect is the next request.
    private mutating func fetch(_ url: String?, operation: String, key: LedgerKey?) -> [DeviceAction] {
        guard let url, let key else { return [.count(.flocktoryPushWithoutURL)] }
        nextID += 1
        let request = Request(method: "GET", path: Self.path(of: url), headers: [Header("Accept", "*/*")])
        inFlight[nextID] = .fetch(operation: operation, key: key, request: request)
        return [.send(OutgoingRequest(id: nextID, operation: operation, request: request, timeout: settings.requestTimeout, retryNumber: 0))]
    }

    // MARK: - Helpers

    /// The path and query of a URL (`https://api.flocktory.com/t/show/1?x` → `/t/show/1?x`): every
    /// fetch goes to the platform's target.
    static func path(of url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url.hasPrefix("/") ? url : "/" + url }
        let rest = url[scheme.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return "/" }
        return String(rest[slash...])
    }

    /// The message id at the end of a tracked link's path (`/t/show/<id>`).
    static func messageID(_ url: String) -> String {
        let path = path(of: url).split(separator: "?").first.map(String.init) ?? ""
        return path.split(separator: "/").last.map(String.init) ?? path
    }

    static func cookieValue(_ response: Response) -> String? {
        for header in response.headers where header.name.lowercased() == "set-cookie" {
            let pair = header.value.split(separator: ";", maxSplits: 1).first ?? ""
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == FlocktoryMessages.cookieName { return String(parts[1]) }
        }
        return nil
    }

    static func email(_ user: String) -> String { "\(user.lowercased())@example.com" }
}

/// Flocktory's client's own run counters.
extension CounterKey {
    public static let flocktoryPushWithoutURL = CounterKey("flocktory.pushWithoutURL")
    public static let flocktoryTooManyRedirects = CounterKey("flocktory.tooManyRedirects")
}
