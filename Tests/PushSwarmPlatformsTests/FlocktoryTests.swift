import Foundation
import Testing
@testable import PushSwarmCore
@testable import PushSwarmPlatforms
import PushSwarmMetrics

/// Flocktory's rules (spec 001), each test quoting the rule it checks.
@Suite struct FlocktoryTests {
    var random = SeededRandom(seed: 5, stream: .device)
    let start = Instant.start + .hours(2)

    static func snapshot(user: String? = nil, token: String? = "fcm-1", permission: Bool = true, installedAtStart: Bool = false) -> DeviceSnapshot {
        deviceSnapshot(
            platform: "flocktory", index: 2, appVersion: "3.0.0", locale: LocaleShare(country: "RU", language: "ru", timeZone: "Europe/Moscow", weight: 1),
            utcOffset: 10_800, installedAtStart: installedAtStart, accountID: user, userID: user, permission: permission, token: token
        )
    }

    func requests(_ actions: [DeviceAction]) -> [OutgoingRequest] {
        actions.compactMap { if case .send(let outgoing) = $0 { outgoing } else { nil } }
    }

    /// Answers every request through the mock, following the client's next requests, until none is left.
    mutating func exchange(_ actions: [DeviceAction], client: inout FlocktoryClient, mock: inout FlocktoryMock, device: DeviceSnapshot, at now: Instant) -> [(OutgoingRequest, Response)] {
        var log: [(OutgoingRequest, Response)] = []
        var pending = requests(actions)
        while !pending.isEmpty {
            let outgoing = pending.removeFirst()
            let reply = mock.handle(outgoing.request.resolved, from: SourceAddress(index: 0), at: now)
            log.append((outgoing, reply.response))
            pending += requests(client.handle(ExchangeCompletion(requestID: outgoing.id, operation: outgoing.operation, sentAt: now, outcome: .response(reply.response)), device: device, now: now, random: &random))
        }
        return log
    }

    static func body(_ request: Request) -> JSONValue? {
        URLQuery.parameters(ofTarget: request.path)?["body"].flatMap { try? JSONParser.parse(Array($0.utf8)) }
    }

    @Test mutating func theSessionIsSetUpFirstAndCarriedByEveryLaterRequest() throws {
        // "before making any request, you should first execute req. number 7 containg just the
        // site-id key … value of the __flocktory_web_session2 cookie … This cookie should be used
        // with any request to be executed since … site-session-id … should be passed in all further
        // request bodies".
        var client = FlocktoryClient(settings: FlocktorySettings())
        var mock = FlocktoryMock(settings: FlocktorySettings())
        let device = Self.snapshot()
        var actions = client.handle(.appLaunched(isColdStart: true, source: .organic, isFirstLaunch: true), device: device, now: start, random: &random)
        actions += client.handle(.userEvent(name: "product_viewed", parameters: ["product_id": "SKU-1234"]), device: device, now: start, random: &random)
        #expect(requests(actions).count == 1, "only the setup goes out before the session exists")
        let log = exchange(actions, client: &client, mock: &mock, device: device, at: start)
        let setup = try #require(log.first)
        #expect(setup.0.request.path.hasPrefix("/u_shaman/setup-api.js?body="))
        #expect(Self.body(setup.0.request) == ["siteId": "1833"])
        #expect(setup.1.header("Set-Cookie")?.hasPrefix("__flocktory_web_session2=") == true)
        let session = try #require(client.siteSessionID)
        #expect(String(decoding: setup.1.body, as: UTF8.self).hasPrefix("flock_jsonp({"))
        let later = log.dropFirst()
        #expect(later.map(\.0.operation) == ["flocktory.track", "flocktory.track", "flocktory.attach_push"])
        for (outgoing, response) in later {
            #expect(outgoing.request.method == "GET")
            #expect(outgoing.request.header("Cookie") == "__flocktory_web_session2=\(client.cookie ?? "-")")
            #expect(Self.body(outgoing.request)?["site-session-id"]?.stringValue == session)
            #expect(response.status == 200)
        }
        // Request 2: "links.yandex_offer - product ID".
        #expect(Self.body(later[later.startIndex + 1].0.request)?["data"]?["links"]?["yandex_offer"] == "SKU-1234")
        // Request 8: "from-mobile-app":true, "platform":"firebase", "os":"android".
        let attach = try #require(Self.body(later.last!.0.request))
        #expect(attach["from-mobile-app"] == .bool(true) && attach["platform"] == "firebase" && attach["os"] == "android" && attach["token"] == "fcm-1")
    }

    @Test func theMockRefusesCallsWithoutTheSessionCookie() throws {
        var mock = FlocktoryMock(settings: FlocktorySettings())
        let body: JSONValue = ["data": ["action": "session.page_visit", "links": ["site": 1833], "payload": ["url": "app://home", "resolution": "1x1"]], "site-session-id": "123"]
        let reply = mock.handle(FlocktoryMessages.request(FlocktoryMessages.Path.track, body: body, callback: "cb", cookie: nil), from: SourceAddress(index: 0), at: .start)
        #expect(reply.response.status == 400)
        #expect(FlocktoryMessages.jsonpPayload(reply.response.body)?["error"] == "no __flocktory_web_session2 cookie from u_shaman/setup-api.js")
        // With a session, a wrong site-session-id is refused too.
        let setup = mock.handle(FlocktoryMessages.request(FlocktoryMessages.Path.setup, body: ["siteId": "1833"], callback: "cb", cookie: nil), from: SourceAddress(index: 0), at: .start)
        let cookie = try #require(FlocktoryClient.cookieValue(setup.response))
        #expect(mock.handle(FlocktoryMessages.request(FlocktoryMessages.Path.track, body: body, callback: "cb", cookie: cookie), from: SourceAddress(index: 0), at: .start).response.status == 400)
        // "siteId - Flocktory ID of your site": another site is refused.
        #expect(mock.handle(FlocktoryMessages.request(FlocktoryMessages.Path.setup, body: ["siteId": "9"], callback: nil, cookie: nil), from: SourceAddress(index: 0), at: .start).response.status == 400)
        // A numeric siteId no Int holds is an unknown site, not a trap (Int(1e300) stopped the mock).
        for number in [1e300, -1e19, 1833.5] {
            let reply = mock.handle(FlocktoryMessages.request(FlocktoryMessages.Path.setup, body: ["siteId": .number(number)], callback: nil, cookie: nil), from: SourceAddress(index: 0), at: .start)
            #expect(reply.response.status == 400, "\(number)")
        }
        #expect(mock.handle(FlocktoryMessages.request(FlocktoryMessages.Path.setup, body: ["siteId": 1833], callback: nil, cookie: nil), from: SourceAddress(index: 0), at: .start).response.status == 200)
    }

    @Test mutating func anOrderCarriesTheSpecsFields() throws {
        // Request 1: "i - order ID, e - user's email, n - user's name, p - order price, t - order
        // products array structured like this {"0":{},"1":{} ... }".
        var client = FlocktoryClient(settings: FlocktorySettings())
        var mock = FlocktoryMock(settings: FlocktorySettings())
        let device = Self.snapshot(user: "Johnny")
        var actions = client.handle(.appLaunched(isColdStart: true, source: .organic, isFirstLaunch: false), device: device, now: start, random: &random)
        actions += client.handle(.loggedIn(userID: "Johnny", method: "email"), device: device, now: start, random: &random)
        actions += client.handle(.userEvent(name: "purchase_completed", parameters: ["order_id": "ORD-1", "amount": 16790, "item_count": 2]), device: device, now: start, random: &random)
        let log = exchange(actions, client: &client, mock: &mock, device: device, at: start)
        let order = try #require(log.first { $0.0.operation == FlocktoryMessages.Operation.order })
        #expect(order.0.request.path.hasPrefix("/1/postcheckout/offer.js?"))
        let body = try #require(Self.body(order.0.request))
        #expect(body["i"] == "ORD-1" && body["e"] == "johnny@example.com" && body["n"] == "Johnny" && body["p"] == .number(16790))
        #expect(body["t"]?["0"]?["c"] == .number(1) && body["t"]?["1"] != nil)
        #expect(order.1.status == 200)
        // "If user authorizes while using the app, you should pass the email used to Flocktory."
        let profile = try #require(log.first { $0.0.operation == FlocktoryMessages.Operation.setup && Self.body($0.0.request)?["profile"] != nil })
        #expect(Self.body(profile.0.request)?["profile"]?["email"] == "johnny@example.com")

        // "p - order price", "t-*-p - price of the product", "t-*-с - amount": the lines add up
        // to the order's price, no product is free, and the units are all there (before: p=144
        // with 10 lines summing to 70, some priced 0).
        for (amount, items) in [(144.0, 13), (3.0, 10), (99.5, 0), (500.0, 3)] {
            let event = client.handle(
                .userEvent(name: "purchase_completed", parameters: ["order_id": .string("ORD-\(items)"), "amount": .number(amount), "item_count": .number(Double(items))]),
                device: device, now: start, random: &random
            )
            let sent = exchange(event, client: &client, mock: &mock, device: device, at: start)
            let placed = try #require(sent.first { $0.0.operation == FlocktoryMessages.Operation.order })
            let order = try #require(Self.body(placed.0.request))
            let lines = try #require(order["t"]?.objectValue).members.map(\.value)
            let total = lines.reduce(0.0) { $0 + ($1["c"]?.numberValue ?? 0) * ($1["p"]?.numberValue ?? 0) }
            #expect(order["p"]?.numberValue == total, "amount \(amount), \(items) items: \(order)")
            #expect(lines.allSatisfy { ($0["p"]?.numberValue ?? 0) >= 1 && ($0["c"]?.numberValue ?? 0) >= 1 })
            #expect(lines.reduce(0.0) { $0 + ($1["c"]?.numberValue ?? 0) } == Double(max(1, items)) && lines.count <= 10)
        }
    }

    /// A later setup-api answer (the user's profile after login) that sets a new session: the
    /// cookie jar replaces the cookie (RFC 6265 5.3 step 11) and later requests carry the new
    /// site-session-id. Before, devices kept sending the old pair.
    @Test mutating func aNewSessionFromALaterAnswerReplacesTheOldPair() throws {
        var client = FlocktoryClient(settings: FlocktorySettings())
        var mock = FlocktoryMock(settings: FlocktorySettings())
        let device = Self.snapshot(user: "Johnny")
        _ = exchange(client.handle(.appLaunched(isColdStart: true, source: .organic, isFirstLaunch: false), device: device, now: start, random: &random), client: &client, mock: &mock, device: device, at: start)
        let login = requests(client.handle(.loggedIn(userID: "Johnny", method: "email"), device: device, now: start, random: &random))
        let profile = try #require(login.first { $0.operation == FlocktoryMessages.Operation.setup })
        let renewed = Response(
            status: 200, headers: [Header("Content-Type", "application/javascript"), Header("Set-Cookie", "__flocktory_web_session2=renewed-cookie; Path=/")],
            body: Array(#"flock_jsonp_1({"site-session-id":"renewed-session"})"#.utf8)
        )
        _ = client.handle(ExchangeCompletion(requestID: profile.id, operation: profile.operation, sentAt: start, outcome: .response(renewed)), device: device, now: start, random: &random)
        let next = requests(client.handle(.userEvent(name: "screen_viewed", parameters: ["screen_name": "catalog"]), device: device, now: start, random: &random))
        let visit = try #require(next.first)
        #expect(visit.request.header("Cookie") == "__flocktory_web_session2=renewed-cookie")
        #expect(Self.body(visit.request)?["site-session-id"] == "renewed-session")
    }

    @Test mutating func showsAndClicksFetchTheIconAndLandingURLsThroughTheirRedirects() throws {
        // "the landing and icon urls may perform one or more redirects … you should still execute
        // the requests in order for the statistics to be collected fully (iconUrl for show, landing
        // url for click)".
        var client = FlocktoryClient(settings: FlocktorySettings())
        var mock = FlocktoryMock(settings: FlocktorySettings())
        let device = Self.snapshot(installedAtStart: true)
        _ = client.started(device: device, now: .start, random: &random)
        mock.knowDevice(KnownDevice(pushToken: "fcm-1", userID: nil, os: .android, pushPermissionGranted: true))
        let push = try #require(mock.launchCampaign(Campaign(name: "sale", platform: "flocktory", at: .zero, audience: 1), at: start, draws: CampaignDraws(seed: 1, campaign: "c")).first)
        // "Standard data set … landingUrl, messageTitle, body, iconUrl".
        #expect(push.data["messageTitle"] == "sale" && push.data["body"] != nil)
        let notification = PushNotification(id: 1, campaign: "sale", data: push.data)
        let show = exchange(client.handle(.notificationDisplayed(notification), device: device, now: start, random: &random), client: &client, mock: &mock, device: device, at: start)
        #expect(show.map(\.1.status) == [302, 200], "the icon link redirects once, to the icon")
        let click = exchange(client.handle(.notificationTapped(notification), device: device, now: start, random: &random), client: &client, mock: &mock, device: device, at: start)
        #expect(click.map(\.1.status) == [302, 302, 200], "the landing link redirects twice")
        #expect(click.allSatisfy { $0.0.operation == FlocktoryMessages.Operation.click })
    }

    @Test func theScenarioRunsWithEveryRequestAccountedFor() async throws {
        let result = await Run.simulated(try loadScenario("flocktory") { $0["devices"] = 2_000 }).run()
        let summary = try JSONParser.parse(result.summary(runID: "test", version: "test").jsonText)
        #expect(summary["ledger"]?["lost"] == .number(0))
        #expect(summary["requests"]?["byStatus"]?["400"] == nil, "no validation failures")
        #expect(summary["dropped"]?["total"] == .number(0))
        for operation in ["setup", "track", "order", "attach_push", "push_show", "push_click"] {
            #expect((summary["operations"]?["flocktory.\(operation)"]?["byStatus"]?["200"]?.numberValue ?? 0) > 0, "\(operation) answered")
        }
        #expect((summary["operations"]?["flocktory.push_click"]?["byStatus"]?["302"]?.numberValue ?? 0) > 0, "redirects followed")
    }

    @Test func aClientThatDropsTheSessionIsRefusedAndCounted() async throws {
        // "This cookie should be used with any request to be executed since": a broken integration
        // that leaves out the cookie and site-session-id gets 400 on every call after the setup.
        let result = await Run.simulated(try loadScenario("flocktory") { object in
            object["devices"] = 300
            object["duration"] = "2h"
            object["groups"] = [["name": "broken", "platform": "flocktory", "os": "android", "client": ["omitSession": true]]]
            object["campaigns"] = []
        }).run()
        let track = try #require(result.metrics.operations[FlocktoryMessages.Operation.track])
        #expect(track.byStatus[400] ?? 0 > 0 && track.byStatus[200] == nil)
        #expect(result.metrics.operations[FlocktoryMessages.Operation.setup]?.byStatus[200] ?? 0 > 0, "the setup itself is fine")
    }
}
