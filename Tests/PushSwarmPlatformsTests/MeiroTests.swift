import Foundation
import Testing
@testable import PushSwarmCore
@testable import PushSwarmPlatforms
import PushSwarmMetrics

/// Meiro's mobile push rules (spec 004), each test quoting the rule it checks.
@Suite struct MeiroTests {
    var random = SeededRandom(seed: 4, stream: .device)
    let start = Instant.start + .hours(1)

    func snapshot(permission: Bool = true, token: String? = "fcm-token-1", installedAtStart: Bool = true) -> DeviceSnapshot {
        deviceSnapshot(
            platform: "meiro", appVersion: "1.2.0", locale: LocaleShare(country: "CZ", language: "cs", timeZone: "Europe/Prague", weight: 1),
            utcOffset: 3_600, installedAtStart: installedAtStart, permission: permission, token: token
        )
    }

    func sent(_ actions: [DeviceAction]) -> [JSONValue] {
        actions.compactMap { action in
            guard case .send(let outgoing) = action else { return nil }
            #expect(outgoing.request.path == "/meiro_mobile")
            return try? JSONParser.parse(outgoing.request.body)
        }
    }

    mutating func completeAll(_ client: inout MeiroClient, _ actions: [DeviceAction], device: DeviceSnapshot, at now: Instant) -> [DeviceAction] {
        var next: [DeviceAction] = []
        for case .send(let outgoing) in actions {
            next += client.handle(
                ExchangeCompletion(requestID: outgoing.id, operation: outgoing.operation, sentAt: now, outcome: .response(Response(status: 200))),
                device: device, now: now, random: &random
            )
        }
        return next
    }

    @Test mutating func registrationWaitsForConsent() {
        // "this event should be sent once the user gives consent to receive mobile push notifications".
        var client = MeiroClient(settings: MeiroSettings())
        let denied = snapshot(permission: false, installedAtStart: false)
        _ = client.handle(.installed, device: denied, now: start, random: &random)
        #expect(sent(client.handle(.pushTokenIssued(token: "fcm-token-1"), device: denied, now: start, random: &random)).isEmpty)
        let granted = snapshot(permission: true, installedAtStart: false)
        let bodies = sent(client.handle(.pushPermissionChanged(isGranted: true), device: granted, now: start + .seconds(5), random: &random))
        #expect(bodies.count == 1)
        #expect(bodies.first?["event_type"] == "fcm_registration_token_registered")
        #expect(bodies.first?["firebase"]?["registration_token"] == "fcm-token-1")
        #expect(bodies.first?["version"] == "1.0.0")
        #expect(bodies.first?["event_timestamp"]?.stringValue?.hasSuffix("Z") == true)
        #expect(MeiroMock.validate(bodies.first?.objectValue ?? [:]) == nil, "the client's body passes the mock's validation")
    }

    @Test mutating func theTokenIsRefreshedMonthlyWhateverTheAppsState() throws {
        // "periodically sending the FCM Registration Token Refreshed event once a month, regardless
        // of the application's running state … The request payload must include the FCM refresh timestamp."
        var client = MeiroClient(settings: MeiroSettings())
        let device = snapshot()
        let started = client.started(device: device, now: .start, random: &random)
        guard case .schedule(let timer, let first)? = started.first else {
            Issue.record("no refresh timer at start")
            return
        }
        #expect(first >= .start && first <= .start + .days(30))
        let actions = client.timerFired(timer, device: device, now: first, random: &random)
        let bodies = sent(actions)
        #expect(bodies.first?["event_type"] == "fcm_registration_token_refreshed")
        #expect(bodies.first?["event_data"]?["fcm_registration_token_refresh_timestamp"]?.stringValue == bodies.first?["event_timestamp"]?.stringValue)
        #expect(actions.contains { if case .schedule(timer, first + .days(30)) = $0 { true } else { false } })
        #expect(MeiroMock.validate(bodies.first?.objectValue ?? [:]) == nil)
    }

    @Test mutating func aSessionEndsAfterThirtyMinutesOfInactivity() {
        // "session_id … Its ID changes once the user is inactive for more than 30 minutes."
        var client = MeiroClient(settings: MeiroSettings())
        let device = snapshot(installedAtStart: false)
        _ = client.handle(.installed, device: device, now: start, random: &random)
        let first = client.handle(.pushTokenIssued(token: "a"), device: device, now: start, random: &random)
        let firstSession = sent(first).first?["session_id"]
        var pending = completeAll(&client, first, device: device, at: start)
        #expect(sent(pending).isEmpty)
        #expect(pending.contains { if case .confirmed = $0 { true } else { false } }, "the accepted event is confirmed")
        _ = client.handle(.userEvent(name: "screen_viewed", parameters: [:]), device: device, now: start + .minutes(25), random: &random)
        let second = client.handle(.pushTokenRotated(oldToken: "a", newToken: "b"), device: device, now: start + .minutes(50), random: &random)
        #expect(sent(second).first?["session_id"] == firstSession, "25 minutes apart: the same session")
        pending = completeAll(&client, second, device: device, at: start + .minutes(50))
        #expect(sent(pending).isEmpty)
        let third = client.handle(.pushTokenRotated(oldToken: "b", newToken: "c"), device: device, now: start + .minutes(81), random: &random)
        let thirdSession = sent(third).first?["session_id"]
        #expect(thirdSession != nil && thirdSession != firstSession, "31 minutes inactive: a new session")
        // "base64 session id (timestamp&user_id)".
        let decoded = thirdSession?.stringValue.flatMap { Data(base64Encoded: $0) }.map { String(decoding: $0, as: UTF8.self) }
        #expect(decoded?.hasSuffix("&\(client.userID ?? "-")") == true)
    }

    @Test mutating func aNewInstallGetsANewUserID() {
        // "In case user_id is removed from the app storage, it should be regenerated."
        var client = MeiroClient(settings: MeiroSettings())
        let device = snapshot()
        _ = client.started(device: device, now: .start, random: &random)
        let before = client.userID
        _ = client.handle(.installed, device: snapshot(installedAtStart: false), now: start, random: &random)
        #expect(before != nil && client.userID != nil && client.userID != before)
    }

    @Test mutating func theMockAnswersTheSpecsErrorBody() throws {
        // "400 - Bad Request … { message: "validation: registration_token is required property", status: "error" }".
        var mock = MeiroMock()
        let body: JSONValue = [
            "user_id": "f653a690-21b4-4d3e-865f-bd4568153ba7", "event_type": "fcm_registration_token_registered",
            "event_timestamp": "2024-02-20T13:00:00.000Z", "version": "1.0.0",
            "app": ["id": "1:353411649331:android:7ae86e76054a2720fa7695", "name": "Your app name", "version": "1.2.0"],
            "os": ["type": "android"], "firebase": ["project_id": "meiro-project"],
        ]
        let reply = mock.handle(Request(method: "POST", path: "/meiro_mobile", body: JSONWriter.bytes(of: body)), from: SourceAddress(index: 0), at: .start)
        #expect(reply.response.status == 400)
        let answer = try JSONParser.parse(reply.response.body)
        #expect(answer["message"] == "validation: registration_token is required property")
        #expect(answer["status"] == "error")
        #expect(reply.accepted == nil)

        // "event_data: { // required object" for the refreshed event.
        var refreshed = body.objectValue ?? [:]
        refreshed["event_type"] = "fcm_registration_token_refreshed"
        refreshed["firebase"] = ["project_id": "meiro-project", "registration_token": "cn5G7wfiS3eWZijQtjBNWT"]
        let second = mock.handle(Request(method: "POST", path: "/meiro_mobile", body: JSONWriter.bytes(of: .object(refreshed))), from: SourceAddress(index: 0), at: .start)
        #expect(try JSONParser.parse(second.response.body)["message"] == "validation: event_data is required property")

        // The spec's own example is accepted, once; the same event again is a duplicate key.
        var valid = refreshed
        valid["event_type"] = "fcm_registration_token_registered"
        let accepted = mock.handle(Request(method: "POST", path: "/meiro_mobile", body: JSONWriter.bytes(of: .object(valid))), from: SourceAddress(index: 0), at: .start)
        #expect(accepted.response.status == 200)
        #expect(accepted.accepted != nil)

        // "user_id: … UUID generated uniquely for each user", "language: "en" // optional string,
        // 2 characters ISO-639-1".
        var notUUID = valid
        notUUID["user_id"] = "user_42"
        #expect(MeiroMock.validate(notUUID) == "user_id must be a UUID")
        var english = valid
        english["app"] = ["id": "1:353411649331:android:7ae86e76054a2720fa7695", "name": "Your app name", "version": "1.2.0", "language": "english"]
        #expect(MeiroMock.validate(english) == "app.language must be a 2-character ISO 639-1 code such as en")
        english["app"] = ["id": "1:353411649331:android:7ae86e76054a2720fa7695", "name": "Your app name", "version": "1.2.0", "language": "en"]
        #expect(MeiroMock.validate(english) == nil)
    }

    @Test func theScenarioRunsWithEveryRequestAccountedFor() async throws {
        let result = await Run.simulated(try loadScenario("meiro")).run()
        let summary = try JSONParser.parse(result.summary(runID: "test", version: "test").jsonText)
        #expect(summary["ledger"]?["lost"] == .number(0))
        #expect((summary["operations"]?["meiro.token_registered"]?["byStatus"]?["200"]?.numberValue ?? 0) > 0)
        #expect((summary["operations"]?["meiro.token_refreshed"]?["byStatus"]?["200"]?.numberValue ?? 0) > 0)
        #expect(summary["requests"]?["byStatus"]?["400"] == nil, "no validation failures")
        // Campaign pushes carry Meiro's data: delivered and tapped.
        #expect((summary["counters"]?["notifications.tapped"]?.numberValue ?? 0) > 0)
    }

    @Test func aClientLeavingOutTheTokenGetsTheSpecsErrorCounted() async throws {
        // A deliberately broken integration: no registration_token. The service answers "400 - Bad
        // Request … validation: registration_token is required property"; the client drops it.
        let result = await Run.simulated(try loadScenario("meiro") { object in
            object["devices"] = 300
            object["behaviour"] = ["newInstallShare": 0.5]
            object["groups"] = [["name": "broken", "platform": "meiro", "os": "android", "client": ["omitFields": ["registration_token"]]]]
            object["campaigns"] = []
        }).run()
        let registered = try #require(result.metrics.operations[MeiroMessages.Operation.registered])
        #expect(registered.byStatus[400] ?? 0 > 0 && registered.byStatus[200] == nil)
        #expect(result.metrics.droppedByReason["http400"] == result.metrics.byStatus[400], "each refused event dropped, not retried")
        #expect(result.lost == 0, "nothing refused was confirmed")
    }
}
