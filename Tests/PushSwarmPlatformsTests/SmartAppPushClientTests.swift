import Testing
@testable import PushSwarmCore
@testable import PushSwarmPlatforms
import PushSwarmMetrics

@Suite struct SmartAppPushClientTests {
    var random = SeededRandom(seed: 1, stream: .device)
    let now = Instant.start + .hours(10)

    func snapshot(user: String? = nil, permission: Bool = true, os: OperatingSystem = .android) -> DeviceSnapshot {
        deviceSnapshot(
            platform: "smartapppush", os: os, appVersion: "2.1.0", locale: LocaleShare(country: "TR", language: "tr", timeZone: "Europe/Istanbul", weight: 1),
            utcOffset: 10_800, accountID: "user_0", userID: user, permission: permission, token: "tok-1"
        )
    }

    func client(_ variant: SmartAppPushClientProfile.Variant = .oneSignal) -> SmartAppPushClient {
        SmartAppPushClient(settings: SmartAppPushSettings(), variant: variant, omittedFields: [])
    }

    func sentBodies(_ actions: [DeviceAction]) -> [(path: String, body: JSONValue)] {
        actions.compactMap { action in
            guard case .send(let outgoing) = action, let body = try? JSONParser.parse(outgoing.request.body) else { return nil }
            return (outgoing.request.path, body)
        }
    }

    /// Completes whatever is in flight with 200 so the next queued request is sent.
    mutating func deliverAll(_ client: inout SmartAppPushClient, _ first: [DeviceAction], device: DeviceSnapshot) -> [(path: String, body: JSONValue)] {
        var collected: [(path: String, body: JSONValue)] = []
        var actions = first
        while let outgoing = actions.compactMap({ if case .send(let request) = $0 { request } else { nil } }).first {
            collected += sentBodies(actions)
            actions = client.handle(
                ExchangeCompletion(requestID: outgoing.id, operation: outgoing.operation, sentAt: now, outcome: .response(Response(status: 200))),
                device: device, now: now, random: &random)
        }
        return collected
    }

    @Test mutating func eventsCarryEveryRequiredFieldWithLocalTimeAndTheZone() {
        var client = client()
        let device = snapshot()
        let sent = deliverAll(&client, client.handle(.appLaunched(isColdStart: true, source: .organic, isFirstLaunch: false), device: device, now: now, random: &random), device: device)
        #expect(sent.count == 1)
        let body = sent[0].body
        #expect(sent[0].path == "/events")
        #expect(body["event_name"] == "app_opened")
        #expect(body["params"]?["source"] == "organic")
        // "RFC 3339 timestamp with timezone offset": 10:00 UTC is 13:00 in Istanbul.
        #expect(body["event_time"] == "2026-03-02T13:00:00.000+03:00")
        #expect(body["timezone"] == "Europe/Istanbul")
        #expect(body["push_permission_granted"] == true)
        for field in ["tenant_id", "api_key", "device_token", "platform", "language", "country", "session_id"] {
            #expect(body[field]?.stringValue?.isEmpty == false, "\(field)")
        }
        // "Before that, omit it".
        #expect(body["app_user_id"] == nil)
    }

    @Test mutating func aLoggedInUserIsSentAndTheLogoutEventStillNamesThem() {
        var client = client()
        let loggedIn = deliverAll(&client, client.handle(.loggedIn(userID: "user_0", method: "email"), device: snapshot(user: "user_0"), now: now, random: &random), device: snapshot(user: "user_0"))
        #expect(loggedIn[0].body["app_user_id"] == "user_0")
        #expect(loggedIn[0].body["event_name"] == "logged_in")
        let loggedOut = deliverAll(&client, client.handle(.loggedOut(userID: "user_0"), device: snapshot(user: nil), now: now, random: &random), device: snapshot())
        #expect(loggedOut[0].body["app_user_id"] == "user_0")
    }

    // "Generate a new `session_id` (UUID) on each app cold start. Reuse it for all events until
    // the app is backgrounded or terminated."
    @Test mutating func aSessionIDIsNewOnEveryLaunchOrResumeAndReusedWithinIt() {
        var client = client()
        let device = snapshot()
        func sessionOf(_ actions: [DeviceAction], _ client: inout SmartAppPushClient) -> String? {
            deliverAll(&client, actions, device: device).last?.body["session_id"]?.stringValue
        }
        let first = sessionOf(client.handle(.appLaunched(isColdStart: true, source: .organic, isFirstLaunch: false), device: device, now: now, random: &random), &client)
        let sameSession = sessionOf(client.handle(.userEvent(name: "screen_viewed", parameters: [:]), device: device, now: now, random: &random), &client)
        _ = client.handle(.appBackgrounded, device: device, now: now, random: &random)
        let resumed = sessionOf(client.handle(.appLaunched(isColdStart: false, source: .organic, isFirstLaunch: false), device: device, now: now, random: &random), &client)
        #expect(first != nil)
        #expect(first == sameSession)
        #expect(resumed != first)
    }

    // "`POST /devices/refresh-token` … for FCM integrations only"; "Don't call it" with OneSignal.
    @Test mutating func onlyTheFCMProfileReportsATokenRotation() {
        var fcm = client(.fcm)
        let device = snapshot(user: "user_0")
        let refreshed = sentBodies(fcm.handle(.pushTokenRotated(oldToken: "a", newToken: "b"), device: device, now: now, random: &random))
        #expect(refreshed.map(\.path) == ["/devices/refresh-token"])
        #expect(refreshed[0].body["old_token"] == "a")
        #expect(refreshed[0].body["new_token"] == "b")
        #expect(refreshed[0].body["app_user_id"] == "user_0")
        var oneSignal = client(.oneSignal)
        #expect(oneSignal.handle(.pushTokenRotated(oldToken: "a", newToken: "b"), device: device, now: now, random: &random).isEmpty)
    }

    // "Don't send open tracking for every push received — only when the user **taps**".
    @Test mutating func opensAreReportedOnTapOnlyWithTheTrackingToken() {
        var client = client()
        let device = snapshot()
        let push = PushNotification(id: 1, campaign: "promo", data: ["tracking_token": "tt-1"])
        #expect(client.handle(.notificationDisplayed(push), device: device, now: now, random: &random).isEmpty)
        #expect(client.handle(.notificationDismissed(push), device: device, now: now, random: &random).isEmpty)
        let tapped = deliverAll(&client, client.handle(.notificationTapped(push), device: device, now: now, random: &random), device: device)
        #expect(tapped.map(\.path) == ["/pushes/opened", "/events"])
        #expect(tapped[0].body["tracking_token"] == "tt-1")
        #expect(tapped[1].body["event_name"] == "push_opened")
    }

    @Test mutating func theClientsLedgerKeyIsTheFingerprintTheServiceComputes() {
        var client = client()
        let device = snapshot()
        let actions = client.handle(.userEvent(name: "add_to_cart", parameters: ["price": 12.5, "product_id": "SKU-1"]), device: device, now: now, random: &random)
        guard case .send(let outgoing)? = actions.first else {
            Issue.record("expected a send")
            return
        }
        var mock = SmartAppPushMock(tenants: [SmartAppPushTenant(tenantID: "demo-tenant", apiKey: "sap_demo_api_key", appID: "demo-app")], rateLimitPerSecond: 10)
        let reply = mock.handle(outgoing.request, from: SourceAddress(index: 0), at: now)
        #expect(reply.response.status == 200)
        let confirmation = client.handle(
            ExchangeCompletion(requestID: outgoing.id, operation: outgoing.operation, sentAt: now, outcome: .response(reply.response)),
            device: device, now: now, random: &random)
        #expect(confirmation.contains { if case .confirmed(let key) = $0 { key == reply.accepted } else { false } })
    }
}
