import PushSwarmCore
import PushSwarmMetrics

/// The built-in Flocktory service (spec 001): JSONP over GET, a web-session cookie, and tracked
/// icon and landing links that redirect.
///
/// - `u_shaman/setup-api.js` sets `__flocktory_web_session2` (a new visitor when the request has
///   none) and answers `callback({"site-session-id": …})`; with `profile` it records the email.
/// - Every other call needs that cookie and the `site-session-id` of its session in the body:
///   without them, 400 naming what is missing. Each call's required fields are the spec's.
/// - A push's `iconUrl` (`/t/show/<id>`) redirects once to the icon (an absolute URL on the
///   vendor's static host), its `landingUrl` (`/t/click/<id>`) twice to the landing page ("may
///   perform one or more redirects"), by relative references (`../../r/<id>`, then
///   `../landing/<id>`) that hold wherever the mock is mounted; the show or click is counted at
///   the first hop.
/// - The ledger holds orders (by order id), subscriptions (session and token), shows and clicks
///   (by message); page and item views carry nothing unique and are counted, not ledgered.
struct FlocktoryMock: MockService {
    private struct Visitor {
        var session: String
        var email: String?
        var token: String?
        var os: String?
    }

    let settings: FlocktorySettings
    private var visitors: [String: Visitor] = [:]
    /// Push tokens in the order they were first attached (campaigns walk this order), and the
    /// visitor each belongs to now.
    private var subscribers: [String] = []
    private var visitorByToken: [String: String] = [:]
    private var serial: UInt64 = 0

    init(settings: FlocktorySettings) {
        self.settings = settings
    }

    func serves(path: String) -> Bool { FlocktoryMessages.operation(forPath: path) != nil }

    mutating func handle(_ request: Request, from source: SourceAddress, at now: Instant) -> MockReply {
        let path = request.pathWithoutQuery
        guard request.method == "GET" else {
            var response = Self.plain(405, "every Flocktory call is a GET")
            response.headers.append(Header("Allow", "GET"))
            return MockReply(response: response, operation: FlocktoryMessages.Operation.unknown)
        }
        if let reply = trackedLink(path) { return reply }
        // Tracked links are answered above: what is left are the API's calls.
        guard let operation = FlocktoryMessages.operation(forPath: path) else {
            return MockReply(response: Self.plain(404, "not found: \(path)"), operation: FlocktoryMessages.Operation.unknown)
        }
        guard let query = URLQuery.parameters(ofTarget: request.path) else {
            return MockReply(response: Self.plain(400, "the query is not valid URL encoding"), operation: operation)
        }
        let callback = query["callback"]
        // "the body parameter should be urlencoded".
        guard let bodyText = query["body"] else { return MockReply(response: Self.jsonp(400, callback, ["error": "body is required (URL-encoded JSON)"]), operation: operation) }
        guard let body = (try? JSONParser.parse(Array(bodyText.utf8)))?.objectValue else {
            return MockReply(response: Self.jsonp(400, callback, ["error": "body must be a JSON object"]), operation: operation)
        }
        let cookie = Self.cookie(request)
        if operation == FlocktoryMessages.Operation.setup { return setup(body, cookie: cookie, callback: callback, operation: operation) }

        // "This cookie should be used with any request to be executed since" and "site-session-id
        // … should be passed in all further request bodies".
        guard let cookie, let visitor = visitors[cookie] else {
            return MockReply(response: Self.jsonp(400, callback, ["error": .string("no \(FlocktoryMessages.cookieName) cookie from u_shaman/setup-api.js")]), operation: operation)
        }
        guard let session = body["site-session-id"]?.stringValue else {
            return MockReply(response: Self.jsonp(400, callback, ["error": "site-session-id is required"]), operation: operation)
        }
        guard session == visitor.session else {
            return MockReply(response: Self.jsonp(400, callback, ["error": "site-session-id does not belong to this cookie's session"]), operation: operation)
        }
        if let problem = validate(operation, body) {
            return MockReply(response: Self.jsonp(400, callback, ["error": .string(problem)]), operation: operation)
        }
        var accepted: LedgerKey?
        switch operation {
        case FlocktoryMessages.Operation.order:
            accepted = FlocktoryMessages.orderKey(site: settings.siteID, order: body["i"]?.stringValue ?? "")
        case FlocktoryMessages.Operation.attachPush:
            let token = body["token"]?.stringValue ?? ""
            if visitorByToken[token] == nil { subscribers.append(token) }
            visitorByToken[token] = cookie
            visitors[cookie]?.token = token
            visitors[cookie]?.os = body["os"]?.stringValue
            accepted = FlocktoryMessages.subscriptionKey(session: session, token: token)
        default:
            break
        }
        return MockReply(response: Self.jsonp(200, callback, ["status": "ok"]), accepted: accepted, operation: operation)
    }

    private mutating func setup(_ body: JSONObject, cookie: String?, callback: String?, operation: String) -> MockReply {
        // "siteId - Flocktory ID of your site".
        let site = Self.site(body["siteId"])
        guard let site else { return MockReply(response: Self.jsonp(400, callback, ["error": "siteId is required"]), operation: operation) }
        guard site == settings.siteID else { return MockReply(response: Self.jsonp(400, callback, ["error": .string("unknown siteId \(site)")]), operation: operation) }
        if let profile = body["profile"] {
            guard let email = profile["email"]?.stringValue, email.contains("@") else {
                return MockReply(response: Self.jsonp(400, callback, ["error": "profile.email must be an email address"]), operation: operation)
            }
            if let cookie, visitors[cookie] != nil { visitors[cookie]?.email = email }
        }
        serial += 1
        var response: Response
        if let cookie, var visitor = visitors[cookie] {
            // A known visitor: a new site session only when the app asked without one.
            if body["site-session-id"] == nil { visitor.session = Self.sessionID(serial) }
            visitors[cookie] = visitor
            response = Self.jsonp(200, callback, ["site-session-id": .string(visitor.session), "status": "ok"])
        } else {
            let value = Hex.string(Array(SHA256.hash(Array("visitor:\(serial)".utf8)).bytes.prefix(16)))
            let session = Self.sessionID(serial)
            visitors[value] = Visitor(session: session)
            response = Self.jsonp(200, callback, ["site-session-id": .string(session), "status": "ok"])
            response.headers.append(Header("Set-Cookie", "\(FlocktoryMessages.cookieName)=\(value); Path=/; Max-Age=31536000; Secure; SameSite=None"))
        }
        return MockReply(response: response, operation: operation)
    }

    /// The first required field the call's body lacks, as the spec's curl examples give them.
    private func validate(_ operation: String, _ body: JSONObject) -> String? {
        switch operation {
        case FlocktoryMessages.Operation.track:
            guard let data = body["data"]?.objectValue else { return "data is required" }
            guard let action = data["action"]?.stringValue, FlocktoryMessages.trackActions.contains(action) else {
                return "data.action must be one of \(FlocktoryMessages.trackActions.sorted().joined(separator: ", "))"
            }
            guard Self.site(data["links"]?["site"]) == settings.siteID else { return "data.links.site must be the site id" }
            guard data["payload"]?["url"]?.stringValue != nil else { return "data.payload.url is required (the deep link)" }
            switch action {
            case "customer.item_visit", "customer.add_to_cart", "customer.remove_from_cart":
                if data["links"]?["yandex_offer"]?.stringValue == nil { return "data.links.yandex_offer is required (the product id)" }
                if action != "customer.item_visit", data["payload"]?["count"]?.numberValue == nil { return "data.payload.count is required" }
            case "customer.category_visit":
                if data["links"]?["yandex_category"]?.stringValue == nil { return "data.links.yandex_category is required" }
            default:
                if data["payload"]?["resolution"]?.stringValue == nil { return "data.payload.resolution is required" }
            }
        case FlocktoryMessages.Operation.order:
            guard Self.site(body["site_id"]) == settings.siteID else { return "site_id must be the site id" }
            guard body["i"]?.stringValue.map({ !$0.isEmpty }) == true else { return "i (the order id) is required" }
            guard body["e"]?.stringValue?.contains("@") == true else { return "e (the user's email) is required" }
            guard body["p"]?.numberValue != nil else { return "p (the order price) is required" }
            guard let items = body["t"]?.objectValue, !items.isEmpty else { return "t (the products) is required" }
            for (index, item) in items.members {
                guard item["i"] != nil, item["t"]?.stringValue != nil, item["c"]?.numberValue != nil, item["p"]?.numberValue != nil else {
                    return "t.\(index) needs i, t, c and p"
                }
            }
        case FlocktoryMessages.Operation.attachPush:
            guard body["from-mobile-app"] == .bool(true) else { return "from-mobile-app must be true" }
            guard body["platform"]?.stringValue == "firebase" else { return "platform must be firebase" }
            guard ["android", "ios"].contains(body["os"]?.stringValue ?? "") else { return "os must be android or ios" }
            guard Self.site(body["site-id"]) == settings.siteID else { return "site-id must be the site id" }
            guard body["token"]?.stringValue.map({ !$0.isEmpty }) == true else { return "token is required" }
        case FlocktoryMessages.Operation.customEvent:
            guard body["event"]?.stringValue.map({ !$0.isEmpty }) == true else { return "event is required" }
            guard Self.site(body["site-id"]) == settings.siteID else { return "site-id must be the site id" }
        case FlocktoryMessages.Operation.profileMeta:
            guard body["meta"]?.objectValue != nil else { return "meta is required (an object)" }
        default:
            break
        }
        return nil
    }

    /// The tracked links and where they lead.
    private func trackedLink(_ path: String) -> MockReply? {
        func redirect(_ location: String, _ operation: String, _ key: LedgerKey?) -> MockReply {
            MockReply(response: Response(status: 302, headers: [Header("Location", location)]), accepted: key, operation: operation)
        }
        if path.hasPrefix(FlocktoryMessages.Path.show) {
            let message = String(path.dropFirst(FlocktoryMessages.Path.show.count))
            return redirect("https://api.flocktory.com/static/icon/\(message).png", FlocktoryMessages.Operation.show, FlocktoryMessages.showKey(message))
        }
        if path.hasPrefix(FlocktoryMessages.Path.click) {
            let message = String(path.dropFirst(FlocktoryMessages.Path.click.count))
            return redirect("../../r/\(message)", FlocktoryMessages.Operation.click, FlocktoryMessages.clickKey(message))
        }
        if path.hasPrefix("/r/") {
            return redirect("../landing/\(path.dropFirst(3))", FlocktoryMessages.Operation.click, nil)
        }
        if path.hasPrefix("/static/") {
            return MockReply(response: Response(status: 200, headers: [Header("Content-Type", "image/png")], body: [0x89, 0x50, 0x4E, 0x47]), operation: FlocktoryMessages.Operation.show)
        }
        if path.hasPrefix("/landing/") {
            return MockReply(response: Response(status: 200, headers: [Header("Content-Type", "text/html")], body: Array("<html>offer</html>".utf8)), operation: FlocktoryMessages.Operation.click)
        }
        return nil
    }

    mutating func knowDevice(_ device: KnownDevice) {
        // An install from before the run subscribed through an earlier session.
        guard device.pushPermissionGranted else { return }
        serial += 1
        let value = "known-\(serial)"
        visitors[value] = Visitor(session: Self.sessionID(serial), email: device.userID.map(FlocktoryClient.email), token: device.pushToken, os: device.os == .ios ? "ios" : "android")
        if visitorByToken[device.pushToken] == nil { subscribers.append(device.pushToken) }
        visitorByToken[device.pushToken] = value
    }

    /// "Standard data set, passed by Flocktory in a push message": landingUrl, messageTitle, body,
    /// iconUrl, each link unique to its recipient.
    mutating func launchCampaign(_ campaign: Campaign, at now: Instant, draws: CampaignDraws) -> [PushMessage] {
        var messages: [PushMessage] = []
        for token in subscribers {
            var random = draws.random(for: token)
            guard let cookie = visitorByToken[token], visitors[cookie]?.token == token, random.chance(campaign.audience) else { continue }
            serial += 1
            // The serial, and 64 bits with the run's nonce: a link no earlier run sent.
            let message = "\(campaign.name)-\(serial)-" + String(random.next() ^ random.identifierNonce, radix: 16)
            messages.append(PushMessage(pushToken: token, data: [
                "landingUrl": "https://api.flocktory.com\(FlocktoryMessages.Path.click)\(message)",
                "iconUrl": "https://api.flocktory.com\(FlocktoryMessages.Path.show)\(message)",
                "messageTitle": campaign.name, "body": "An offer from the \(campaign.name) campaign",
            ]))
        }
        return messages
    }

    static func sessionID(_ serial: UInt64) -> String {
        Hex.uuidV4(SHA256.hash(Array("session:\(serial)".utf8)).bytes) + "-4"
    }

    static func cookie(_ request: Request) -> String? {
        guard let header = request.header("Cookie") else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.split(separator: "=", maxSplits: 1)
            if pair.count == 2, pair[0].drop(while: { $0 == " " }) == FlocktoryMessages.cookieName { return String(pair[1]) }
        }
        return nil
    }

    /// A site id as a string or a whole number ("siteId":"1833", "site_id":1833), nil otherwise.
    static func site(_ value: JSONValue?) -> String? { value?.stringValue ?? value?.integerValue.map { String($0) } }

    static func jsonp(_ status: Int, _ callback: String?, _ value: JSONValue) -> Response {
        let json = JSONWriter.text(of: value)
        guard let callback else { return Response(status: status, headers: [Header("Content-Type", "application/json")], body: Array(json.utf8)) }
        return Response(status: status, headers: [Header("Content-Type", "application/javascript")], body: Array("\(callback)(\(json))".utf8))
    }

    static func plain(_ status: Int, _ message: String) -> Response {
        Response(status: status, headers: [Header("Content-Type", "text/plain")], body: Array(message.utf8))
    }
}
