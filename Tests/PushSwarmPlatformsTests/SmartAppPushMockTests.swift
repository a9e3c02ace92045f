import Foundation
import Testing
@testable import PushSwarmCore
@testable import PushSwarmPlatforms
import PushSwarmMetrics

@Suite struct SmartAppPushMockTests {
    static let tenant = SmartAppPushTenant(tenantID: "t1", apiKey: "key1", appID: "app1")
    var mock = SmartAppPushMock(tenants: [SmartAppPushMockTests.tenant], rateLimitPerSecond: 10)
    let source = SourceAddress(index: 0)

    static func validEvent() -> JSONObject {
        [
            "tenant_id": "t1", "api_key": "key1", "event_name": "app_opened", "event_time": "2026-03-29T14:30:00.000+03:00",
            "device_token": "token-1", "platform": "android", "push_permission_granted": true, "timezone": "Europe/Istanbul",
            "language": "tr", "country": "TR", "session_id": "s1", "params": ["source": "organic"], "context": ["screen": "home"],
        ]
    }

    func post(_ path: String, _ body: JSONObject, at seconds: Double = 0, from source: SourceAddress? = nil) -> (MockReply, JSONValue?) {
        var copy = mock
        let reply = copy.handle(
            Request(method: "POST", path: path, body: JSONWriter.bytes(of: .object(body))), from: source ?? self.source,
            at: Instant.start + .seconds(seconds)
        )
        return (reply, try? JSONParser.parse(reply.response.body))
    }

    func errorFields(_ json: JSONValue?) -> [String] {
        json?["errors"]?.arrayValue?.compactMap { $0["field"]?.stringValue } ?? []
    }

    @Test func aValidEventIsAcceptedWithItsFingerprint() {
        let (reply, json) = post("/events", Self.validEvent())
        #expect(reply.response.status == 200)
        let expected = SmartAppPushMessages.fingerprint(
            tenantID: "t1", appID: "app1", appUserID: nil, eventName: "app_opened", eventTime: "2026-03-29T14:30:00.000+03:00",
            deviceToken: "token-1", context: ["screen": "home"], params: ["source": "organic"]
        )
        #expect(json?["fingerprint"]?.stringValue == expected.hexString)
        #expect(expected.hexString.count == 64, "a SHA-256 digest in hex")
        let key = SmartAppPushMessages.eventKey(
            tenantID: "t1", appID: "app1", appUserID: nil, eventName: "app_opened", eventTime: "2026-03-29T14:30:00.000+03:00",
            deviceToken: "token-1", context: ["screen": "home"], params: ["source": "organic"]
        )
        #expect(reply.accepted == key)
    }

    // Field reference: tenant_id, api_key, event_name, event_time, device_token, platform,
    // push_permission_granted, timezone, language, country, session_id are "**Yes**" (required).
    @Test(arguments: ["tenant_id", "api_key", "event_name", "event_time", "device_token", "platform",
                      "push_permission_granted", "timezone", "language", "country", "session_id"])
    func everyRequiredFieldIsRequired(field: String) {
        var body = Self.validEvent()
        body[field] = nil
        let (reply, json) = post("/events", body)
        #expect(reply.response.status == 400)
        #expect(errorFields(json) == [field])
        #expect(reply.accepted == nil)
    }

    @Test func eachBadFieldIsNamedInTheErrorsArray() {
        var body = Self.validEvent()
        body["event_time"] = "2026-03-29 14:30:00"  // "RFC 3339 timestamp with timezone offset"
        body["platform"] = "windows"  // "One of: android, ios, web"
        body["timezone"] = "Istanbul"  // "IANA timezone"
        body["language"] = "turkish"  // "ISO 639-1 language code"
        body["country"] = "TUR"  // "ISO 3166-1 alpha-2 country code"
        body["push_permission_granted"] = "yes"
        body["params"] = "x"
        let (reply, json) = post("/events", body)
        #expect(reply.response.status == 400)
        #expect(Set(errorFields(json)) == ["event_time", "platform", "timezone", "language", "country", "push_permission_granted", "params"])
    }

    // "`400` Validation error — missing required fields, invalid format, or unknown API key."
    @Test func anUnknownAPIKeyOnEventsIsA400NamingTheKey() {
        var body = Self.validEvent()
        body["api_key"] = "stolen"
        let (reply, json) = post("/events", body)
        #expect(reply.response.status == 400)
        #expect(errorFields(json) == ["api_key"])
    }

    /// JSON may escape any character of a name or a string; the service reads the same event.
    @Test func anEventWrittenWithEscapesIsTheSameEvent() {
        let plain = JSONWriter.bytes(of: .object(Self.validEvent()))
        let escaped = Array(
            String(decoding: plain, as: UTF8.self)
                .replacingOccurrences(of: "\"tenant_id\"", with: #""tenant\u005fid""#)
                .replacingOccurrences(of: "\"token-1\"", with: #""token\u002d1""#)
                .replacingOccurrences(of: "\"home\"", with: #""h\u006fme""#).utf8
        )
        #expect(escaped != plain)
        var copy = mock
        let first = copy.handle(Request(method: "POST", path: "/events", body: plain), from: source, at: .start)
        let second = copy.handle(Request(method: "POST", path: "/events", body: escaped), from: source, at: .start)
        #expect(first.response.status == 200 && second.response.status == 200)
        #expect(first.response.body == second.response.body, "the same fingerprint")
        #expect(first.accepted == second.accepted, "the same item")
    }

    @Test func malformedBodiesAre400sNotCrashes() {
        var copy = mock
        for body in ["", "{", "[1,2]", "null", "{\"tenant_id\": \u{01}}", String(repeating: "[", count: 10_000), #"{"tenant_id": "t1", "tenant_id": "t2"}"#] {
            let reply = copy.handle(Request(method: "POST", path: "/events", body: Array(body.utf8)), from: source, at: .start)
            #expect(reply.response.status == 400, "\(body.prefix(20))")
        }
        let wrongMethod = copy.handle(Request(method: "GET", path: "/events"), from: source, at: .start)
        #expect(wrongMethod.response.status == 405)
        let unknown = copy.handle(Request(method: "POST", path: "/nope"), from: source, at: .start)
        #expect(unknown.response.status == 404)
    }

    // "Before that, omit it — SmartAppPush auto-generates anon:{device_token}."
    @Test func anAnonymousEventIsFingerprintedAsTheAnonUser() {
        let anonymous = SmartAppPushMessages.fingerprint(
            tenantID: "t", appID: "a", appUserID: nil, eventName: "e", eventTime: "x", deviceToken: "tok", context: nil, params: nil)
        let explicit = SmartAppPushMessages.fingerprint(
            tenantID: "t", appID: "a", appUserID: "anon:tok", eventName: "e", eventTime: "x", deviceToken: "tok", context: nil, params: nil)
        let empty = SmartAppPushMessages.fingerprint(
            tenantID: "t", appID: "a", appUserID: "", eventName: "e", eventTime: "x", deviceToken: "tok", context: nil, params: nil)
        #expect(anonymous == explicit)
        #expect(anonymous == empty)
        // The ledger key follows the same rule, so the anonymous event is one item in the ledger.
        func key(_ user: String?) -> LedgerKey {
            SmartAppPushMessages.eventKey(tenantID: "t", appID: "a", appUserID: user, eventName: "e", eventTime: "x", deviceToken: "tok", context: nil, params: nil)
        }
        #expect(key(nil) == key("anon:tok"))
        #expect(key(nil) == key(""))
        #expect(key(nil) != key("user-1"))
    }

    // "Two events with the same name and time but different `params` are considered distinct".
    @Test func differentParamsGiveDifferentFingerprintsAndKeyOrderDoesNot() {
        let base = SmartAppPushMessages.fingerprint(
            tenantID: "t", appID: "a", appUserID: nil, eventName: "e", eventTime: "x", deviceToken: "d", context: nil, params: ["a": 1, "b": 2])
        let reordered = SmartAppPushMessages.fingerprint(
            tenantID: "t", appID: "a", appUserID: nil, eventName: "e", eventTime: "x", deviceToken: "d", context: nil, params: ["b": 2, "a": 1])
        let other = SmartAppPushMessages.fingerprint(
            tenantID: "t", appID: "a", appUserID: nil, eventName: "e", eventTime: "x", deviceToken: "d", context: nil, params: ["a": 1, "b": 3])
        #expect(base == reordered)
        #expect(base != other)
        func key(_ params: JSONValue?, context: JSONValue? = nil) -> LedgerKey {
            SmartAppPushMessages.eventKey(tenantID: "t", appID: "a", appUserID: nil, eventName: "e", eventTime: "x", deviceToken: "d", context: context, params: params)
        }
        #expect(key(["a": 1, "b": 2]) == key(["b": 2, "a": 1]))
        #expect(key(["a": 1, "b": 2]) != key(["a": 1, "b": 3]))
        #expect(key(["a": 1]) != key(nil))
        #expect(key(nil, context: ["a": 1]) != key(["a": 1]), "context and params are different fields")
    }

    // The client hashes the context and params as it wrote them into its body (in canonical form);
    // the mock hashes the canonical form of what it parsed, however the body wrote it. Both must
    // give one key, or every accepted event would count as lost.
    @Test mutating func theClientsStepwiseEventKeyEqualsTheMocksKeyOfTheParsedBody() {
        var body = JSONWriter()
        body.beginObject()
        for (name, value) in [("app_version", "1.0"), ("os_version", "14"), ("screen", "home")] {
            body.key(name)
            body.string(value)
        }
        body.endObject()
        var stepwise = SmartAppPushMessages.EventKey(
            tenantID: "t1", appID: "app1", appUserID: nil, eventName: "e", eventTime: "2026-03-29T14:30:00+03:00", deviceToken: "d")
        stepwise.add(canonicalJSON: body.bytes.span)
        stepwise.add(["k": "v", "n": 2])
        let parsed = SmartAppPushMessages.eventKey(
            tenantID: "t1", appID: "app1", appUserID: nil, eventName: "e", eventTime: "2026-03-29T14:30:00+03:00", deviceToken: "d",
            context: ["screen": "home", "os_version": "14", "app_version": "1.0"], params: ["n": 2.0, "k": "v"])
        #expect(stepwise.key == parsed)
        // What the mock records for the same event, its objects written with members in another
        // order, spaces, a fraction and an escape: the same key.
        var event = Self.validEvent()
        event["event_name"] = "e"
        event["event_time"] = "2026-03-29T14:30:00+03:00"
        event["device_token"] = "d"
        event["context"] = nil
        event["params"] = nil
        var text = JSONWriter.text(of: .object(event))
        text.removeLast()
        text += #", "params": { "n": 2.0, "k": "\u0076" }, "context": {"screen":"home","app_version":"1.0","os_version":"14"}}"#
        let reply = mock.handle(Request(method: "POST", path: "/events", body: Array(text.utf8)), from: source, at: .start)
        #expect(reply.response.status == 200)
        #expect(reply.accepted == stepwise.key)
    }

    // "`POST /events` 10 requests/second per IP"; "`POST /pushes/opened` 10 requests/second per IP".
    @Test mutating func theEleventhRequestInASecondFromOneIPIsA429WithRetryAfter() throws {
        for index in 0..<10 {
            var body = Self.validEvent()
            body["event_name"] = .string("e\(index)")
            let reply = mock.handle(Request(method: "POST", path: "/events", body: JSONWriter.bytes(of: .object(body))), from: source, at: Instant.start + .milliseconds(Double(index)))
            #expect(reply.response.status == 200)
        }
        let limited = mock.handle(Request(method: "POST", path: "/events", body: JSONWriter.bytes(of: .object(Self.validEvent()))), from: source, at: Instant.start + .milliseconds(100))
        #expect(limited.response.status == 429)
        #expect(limited.response.header("Retry-After") == "1")
        #expect(limited.accepted == nil)
        // Another IP, and the other endpoint, have their own allowance.
        let other = mock.handle(Request(method: "POST", path: "/events", body: JSONWriter.bytes(of: .object(Self.validEvent()))), from: SourceAddress(index: 1), at: Instant.start + .milliseconds(100))
        #expect(other.response.status == 200)
        let open: JSONObject = ["tenant_id": "t1", "api_key": "key1", "tracking_token": "tt"]
        let opened = mock.handle(Request(method: "POST", path: "/pushes/opened", body: JSONWriter.bytes(of: .object(open))), from: source, at: Instant.start + .milliseconds(100))
        #expect(opened.response.status == 200)
        // A second later the window has moved on.
        let later = mock.handle(Request(method: "POST", path: "/events", body: JSONWriter.bytes(of: .object(Self.validEvent()))), from: source, at: Instant.start + .milliseconds(1_001))
        #expect(later.response.status == 200)
    }

    // "`400` Missing required fields (tenant_id, api_key, tracking_token)"; "`401` Invalid tenant_id or api_key".
    @Test func pushOpensAre400WhenIncompleteAnd401WithBadCredentials() {
        let (missing, json) = post("/pushes/opened", ["tenant_id": "t1", "api_key": "key1"])
        #expect(missing.response.status == 400)
        #expect(errorFields(json) == ["tracking_token"])
        let (badKey, _) = post("/pushes/opened", ["tenant_id": "t1", "api_key": "nope", "tracking_token": "x"])
        #expect(badKey.response.status == 401)
        let (badTenant, _) = post("/pushes/opened", ["tenant_id": "t2", "api_key": "key1", "tracking_token": "x"])
        #expect(badTenant.response.status == 401)
        let (ok, okJSON) = post("/pushes/opened", ["tenant_id": "t1", "api_key": "key1", "tracking_token": "x"])
        #expect(ok.response.status == 200)
        #expect(okJSON?["success"] == true)
        #expect(ok.accepted == SmartAppPushMessages.openKey(tenantID: "t1", trackingToken: "x"))
    }

    // Research notes: refresh-token -> 200, 400 (missing/identical), 401, 404 (device not found),
    // 409 (token of another user).
    @Test mutating func tokenRefreshMovesTheDeviceAndAnswersEachErrorItsWay() {
        mock.knowDevice(KnownDevice(pushToken: "old", userID: "u1", os: .android, pushPermissionGranted: true))
        mock.knowDevice(KnownDevice(pushToken: "taken", userID: "u2", os: .android, pushPermissionGranted: true))
        func refresh(_ body: JSONObject) -> Int {
            mock.handle(Request(method: "POST", path: "/devices/refresh-token", body: JSONWriter.bytes(of: .object(body))), from: source, at: .start).response.status
        }
        #expect(refresh(["tenant_id": "t1", "api_key": "key1", "old_token": "old"]) == 400)
        #expect(refresh(["tenant_id": "t1", "api_key": "key1", "old_token": "old", "new_token": "old"]) == 400)
        #expect(refresh(["tenant_id": "t1", "api_key": "bad", "old_token": "old", "new_token": "new"]) == 401)
        #expect(refresh(["tenant_id": "t1", "api_key": "key1", "old_token": "unknown", "new_token": "new"]) == 404)
        #expect(refresh(["tenant_id": "t1", "api_key": "key1", "old_token": "old", "new_token": "taken"]) == 409)
        #expect(refresh(["tenant_id": "t1", "api_key": "key1", "old_token": "old", "new_token": "new"]) == 200)
        #expect(refresh(["tenant_id": "t1", "api_key": "key1", "old_token": "old", "new_token": "newer"]) == 404, "the old token is gone")
        let pushes = mock.launchCampaign(Campaign(name: "c", platform: "smartapppush", at: .zero, audience: 1), at: .start, draws: CampaignDraws(seed: 1, campaign: "c"))
        #expect(Set(pushes.map(\.pushToken)) == ["new", "taken"])
    }

    @Test mutating func campaignsReachOnlyOptedInDevicesWithAFreshTrackingToken() {
        mock.knowDevice(KnownDevice(pushToken: "yes", userID: nil, os: .ios, pushPermissionGranted: true))
        mock.knowDevice(KnownDevice(pushToken: "no", userID: nil, os: .ios, pushPermissionGranted: false))
        // A later event saying the user turned pushes off takes the device out of the audience.
        var body = Self.validEvent()
        body["device_token"] = "yes-then-no"
        body["push_permission_granted"] = true
        _ = mock.handle(Request(method: "POST", path: "/events", body: JSONWriter.bytes(of: .object(body))), from: source, at: .start)
        body["push_permission_granted"] = false
        body["event_name"] = "push_permission_denied"
        _ = mock.handle(Request(method: "POST", path: "/events", body: JSONWriter.bytes(of: .object(body))), from: source, at: Instant.start + .seconds(1))
        let pushes = mock.launchCampaign(Campaign(name: "c", platform: "smartapppush", at: .zero, audience: 1), at: .start, draws: CampaignDraws(seed: 1, campaign: "c"))
        #expect(pushes.map(\.pushToken) == ["yes"])
        #expect(pushes[0].data["tracking_token"]?.count == 36)
    }
}
