import Foundation
import Testing
@testable import PushSwarmCore
@testable import PushSwarmPlatforms
import PushSwarmMetrics

/// PushExpress's rules (spec 003 and the research notes' SDK behaviours), each test quoting the rule it checks.
@Suite struct PushExpressTests {
    var random = SeededRandom(seed: 7, stream: .device)
    let start = Instant.start + .hours(1)

    func snapshot(os: OperatingSystem = .android, installedAtStart: Bool = false, userID: String? = nil) -> DeviceSnapshot {
        deviceSnapshot(
            platform: "pushexpress", os: os, appVersion: "2.0.1", locale: LocaleShare(country: "DE", language: "de", timeZone: "Europe/Berlin", weight: 1),
            utcOffset: 3_600, installedAtStart: installedAtStart, userID: userID, token: "fcm-token-1"
        )
    }

    func requests(_ actions: [DeviceAction]) -> [OutgoingRequest] {
        actions.compactMap { if case .send(let outgoing) = $0 { outgoing } else { nil } }
    }

    func timers(_ actions: [DeviceAction]) -> [(UInt64, Instant)] {
        actions.compactMap { if case .schedule(let token, let at) = $0 { (token, at) } else { nil } }
    }

    func backoffs(_ actions: [DeviceAction]) -> [TimeSpan] {
        actions.compactMap { if case .backoff(let delay, _) = $0 { delay } else { nil } }
    }

    /// Answers `outgoing` through a real mock and hands the answer to the client.
    mutating func answer(_ outgoing: OutgoingRequest, by mock: inout PushExpressMock, client: inout PushExpressClient, device: DeviceSnapshot, at now: Instant) -> (MockReply, [DeviceAction]) {
        let reply = mock.handle(outgoing.request, from: SourceAddress(index: 0), at: now)
        let actions = client.handle(
            ExchangeCompletion(requestID: outgoing.id, operation: outgoing.operation, sentAt: now, outcome: .response(reply.response)),
            device: device, now: now, random: &random
        )
        return (reply, actions)
    }

    func failure(_ outgoing: OutgoingRequest, at now: Instant) -> ExchangeCompletion {
        ExchangeCompletion(requestID: outgoing.id, operation: outgoing.operation, sentAt: now, outcome: .response(Response(status: 503)))
    }

    /// "Generate UUIDv4 (or UUIDv7) to use as ic_token": an install from before the run, whose
    /// ic_token the built-in mock derives from its push token, gets version 4 and variant 10 too
    /// (issue 35: 76 of 80 warm-up creates carried any version and variant).
    @Test func anInstallFromBeforeTheRunHasAVersionFourICToken() {
        for token in ["fcm-1", "fcm-2", "dGVzdC10b2tlbg", ""] {
            let groups = PushExpressMessages.preRunICToken(pushToken: token).split(separator: "-")
            #expect(groups.map(\.count) == [8, 4, 4, 4, 12])
            #expect(groups[2].first == "4" && "89ab".contains(groups[3].first ?? "x"), "\(groups)")
        }
    }

    @Test mutating func theInstanceIsCreatedOnceAndItsIDKeptUntilUninstall() throws {
        // "Access some variable from app persistent local storage, for example ic_id … If non-nil and
        // non-empty variable found, assume it is existing install … Storage MUST be resistant to app
        // updates and MUST be cleared on app removal."
        var mock = PushExpressMock(appID: "demo", updateIntervalSeconds: 120)
        var settings = PushExpressSettings()
        settings.appID = "demo"
        var client = PushExpressClient(settings: settings, kind: .spec, omittedFields: [])
        let device = snapshot()
        _ = client.handle(.installed, device: device, now: start, random: &random)
        let launch = client.handle(.appLaunched(isColdStart: true, source: .organic, isFirstLaunch: true), device: device, now: start, random: &random)
        let create = try #require(requests(launch).first)
        #expect(create.request.method == "POST" && create.request.path == "/apps/demo/instances")
        #expect(try JSONParser.parse(create.request.body)["ic_token"]?.stringValue?.count == 36, "ic_token is a UUID")
        // The lifecycle event waits for the instance id.
        #expect(requests(launch).count == 1)
        let (created, afterCreate) = answer(create, by: &mock, client: &client, device: device, at: start)
        #expect(created.response.status == 200)
        #expect(try JSONParser.parse(created.response.body)["just_created"] == .bool(true))
        #expect(afterCreate.contains { if case .confirmed = $0 { true } else { false } })
        let id = try #require(client.instanceID)
        // "As soon as possible after app startup issue first update app info request", then the waiting onscreen event.
        #expect(requests(afterCreate).map(\.request.path) == ["/apps/demo/instances/\(id)/info", "/apps/demo/instances/\(id)/events/lifecycle"])

        _ = client.handle(.appClosed, device: device, now: start + .minutes(10), random: &random)
        let relaunch = client.handle(.appLaunched(isColdStart: true, source: .organic, isFirstLaunch: false), device: device, now: start + .hours(2), random: &random)
        #expect(!requests(relaunch).contains { $0.operation == PushExpressMessages.Operation.createInstance }, "a later launch does not create again")
        #expect(client.instanceID == id)

        _ = client.handle(.installed, device: device, now: start + .hours(3), random: &random)
        #expect(client.instanceID == nil, "a new install starts with empty storage")
        let fresh = client.handle(.appLaunched(isColdStart: true, source: .organic, isFirstLaunch: true), device: device, now: start + .hours(3), random: &random)
        #expect(requests(fresh).first?.operation == PushExpressMessages.Operation.createInstance)
    }

    @Test mutating func infoIsUpdatedAtTheIntervalTheServiceAnswers() throws {
        // "Periodically update app info with received update_interval_sec interval."
        var mock = PushExpressMock(appID: "pushswarm-demo", updateIntervalSeconds: 45)
        var client = PushExpressClient(settings: PushExpressSettings(), kind: .spec, omittedFields: [])
        let device = snapshot(installedAtStart: true)
        _ = client.started(device: device, now: .start, random: &random)
        mock.knowDevice(KnownDevice(pushToken: "fcm-token-1", userID: nil, os: .android, pushPermissionGranted: true))
        let launch = client.handle(.appLaunched(isColdStart: true, source: .organic, isFirstLaunch: false), device: device, now: start, random: &random)
        let info = try #require(requests(launch).first { $0.operation == PushExpressMessages.Operation.updateInfo })
        #expect(info.request.method == "PUT")
        let body = try JSONParser.parse(info.request.body)
        #expect(body["transport_type"] == "fcm" && body["platform_type"] == "android" && body["transport_token"] == "fcm-token-1")
        #expect(body["onscreen_count"]?.numberValue ?? 0 >= 1)
        let (reply, next) = answer(info, by: &mock, client: &client, device: device, at: start)
        #expect(reply.response.status == 200, "a pre-run install's instance is known to the service")
        let (token, at) = try #require(timers(next).first)
        #expect(at == start + .seconds(45))
        let again = client.timerFired(token, device: device, now: at, random: &random)
        #expect(requests(again).map(\.operation) == [PushExpressMessages.Operation.updateInfo])
    }

    /// Spec 003: first update "as soon as possible after app startup", then "periodically … with
    /// received update_interval_sec interval". A permission seen at launch right after the loop's
    /// first update says nothing new: no second, identical PUT in the same millisecond. A one-off
    /// that does say something new (a login) goes.
    @Test mutating func aLaunchSendsOneInfoUpdateNotTwoIdenticalOnes() throws {
        var client = PushExpressClient(settings: PushExpressSettings(), kind: .spec, omittedFields: [])
        let device = snapshot(installedAtStart: true)
        _ = client.started(device: device, now: .start, random: &random)
        var actions = client.handle(.appLaunched(isColdStart: true, source: .organic, isFirstLaunch: false), device: device, now: start, random: &random)
        actions += client.handle(.pushPermissionChanged(isGranted: true), device: device, now: start, random: &random)
        let infos = requests(actions).filter { $0.operation == PushExpressMessages.Operation.updateInfo }
        #expect(infos.count == 1, "\(infos.map { String(decoding: $0.request.body, as: UTF8.self) })")
        let loggedIn = snapshot(installedAtStart: true, userID: "user_1")
        let login = requests(client.handle(.loggedIn(userID: "user_1", method: "email"), device: loggedIn, now: start, random: &random))
        #expect(login.map(\.operation) == [PushExpressMessages.Operation.updateInfo])
        #expect(try JSONParser.parse(try #require(login.first).request.body)["ext_id"] == "user_1")
    }

    /// Fails every info update `count` times and returns the back-off delays the client chose.
    mutating func delaysAfterFailures(_ kind: PushExpressClientKind, count: Int) throws -> [TimeSpan] {
        var client = PushExpressClient(settings: PushExpressSettings(), kind: kind, omittedFields: [])
        let device = snapshot(installedAtStart: true)
        _ = client.started(device: device, now: .start, random: &random)
        var now = start
        var outgoing = try #require(requests(client.handle(.appLaunched(isColdStart: true, source: .organic, isFirstLaunch: false), device: device, now: now, random: &random)).first)
        var delays: [TimeSpan] = []
        for retry in 1...count {
            let actions = client.handle(failure(outgoing, at: now), device: device, now: now, random: &random)
            let delay = try #require(backoffs(actions).first)
            delays.append(delay)
            let (token, at) = try #require(timers(actions).first)
            #expect(at == now + delay)
            now = at
            outgoing = try #require(requests(client.timerFired(token, device: device, now: now, random: &random)).first)
            #expect(outgoing.retryNumber == retry)
        }
        return delays
    }

    @Test mutating func theSpecProfileRetriesForeverFromARandomOneToFiveSecondsDoublingToTheCap() throws {
        // "In case of any error (non-200 response or invalid response object), retry infinitely with
        // exponential backoff algorithm, better with random initial value between 1-5s, capped at
        // maximum delay of about 120s".
        let delays = try delaysAfterFailures(.spec, count: 12)
        let first = delays[0]
        #expect(first >= .seconds(1) && first <= .seconds(5))
        for (index, delay) in delays.enumerated() {
            #expect(delay == min(TimeSpan(microseconds: first.microseconds << Int64(index)), .seconds(120)))
        }
        #expect(delays.last == .seconds(120))
    }

    @Test mutating func theSwiftSDKDrawsAFreshOneToFiveSecondsEveryTime() throws {
        // Research notes: "Swift SDK: fresh random 1-5 s every retry (never grows)".
        let delays = try delaysAfterFailures(.swift, count: 12)
        #expect(delays.allSatisfy { $0 >= .seconds(1) && $0 <= .seconds(5) })
        #expect(Set(delays).count > 1, "drawn anew, not fixed")
    }

    @Test mutating func theAndroidSDKDoublesFromTwoSecondsForTenTriesThenLoopsEvery120s() throws {
        // Research notes: "Android v1.4: 10 tries 2 s doubling cap 64 s, then its 120 s loop".
        let delays = try delaysAfterFailures(.android, count: 12)
        #expect(delays == [2, 4, 8, 16, 32, 64, 64, 64, 64, 64, 120, 120].map { TimeSpan.seconds(Double($0)) })
    }

    @Test mutating func theAndroidSDKsLoopsMultiply() throws {
        // Research notes: "each 120 s loop pass starts another info loop and heartbeat loop without
        // cancelling: traffic grows ~2^(t/120s)".
        var mock = PushExpressMock(appID: "pushswarm-demo", updateIntervalSeconds: 120)
        mock.knowDevice(KnownDevice(pushToken: "fcm-token-1", userID: nil, os: .android, pushPermissionGranted: true))
        var client = PushExpressClient(settings: PushExpressSettings(), kind: .android, omittedFields: [])
        let device = snapshot(installedAtStart: true)
        _ = client.started(device: device, now: .start, random: &random)
        var pending = requests(client.handle(.appLaunched(isColdStart: true, source: .organic, isFirstLaunch: false), device: device, now: start, random: &random))
            .filter { $0.operation == PushExpressMessages.Operation.updateInfo }
        var now = start
        var perPass: [Int] = []
        for _ in 0..<4 {
            perPass.append(pending.count)
            var due: [(UInt64, Instant)] = []
            for outgoing in pending { due += timers(answer(outgoing, by: &mock, client: &client, device: device, at: now).1) }
            pending = []
            for (token, at) in due {
                now = at
                pending += requests(client.timerFired(token, device: device, now: at, random: &random))
            }
        }
        #expect(perPass == [1, 2, 4, 8])
        #expect(client.loopCount == 16)
        // The spec client keeps one loop.
        var spec = PushExpressClient(settings: PushExpressSettings(), kind: .spec, omittedFields: [])
        _ = spec.started(device: device, now: .start, random: &random)
        let info = try #require(requests(spec.handle(.appLaunched(isColdStart: true, source: .organic, isFirstLaunch: false), device: device, now: start, random: &random)).first)
        let next = spec.handle(ExchangeCompletion(requestID: info.id, operation: info.operation, sentAt: start, outcome: .response(mock.handle(info.request, from: SourceAddress(index: 0), at: start).response)), device: device, now: start, random: &random)
        #expect(timers(next).count == 1 && spec.loopCount == 1)
    }

    @Test mutating func notificationEventsCarryTheMessageID() throws {
        // "Incoming message id MUST be registered by extracting data field px.msg_id and in clicked event."
        var mock = PushExpressMock(appID: "pushswarm-demo", updateIntervalSeconds: 120)
        mock.knowDevice(KnownDevice(pushToken: "fcm-token-1", userID: nil, os: .android, pushPermissionGranted: true))
        var client = PushExpressClient(settings: PushExpressSettings(), kind: .spec, omittedFields: [])
        let device = snapshot(installedAtStart: true)
        _ = client.started(device: device, now: .start, random: &random)
        let message = try #require(mock.launchCampaign(Campaign(name: "sale", platform: "pushexpress", at: .zero, audience: 1), at: start, draws: CampaignDraws(seed: 1, campaign: "c")).first)
        #expect(message.pushToken == "fcm-token-1")
        let messageID = try #require(message.data["px.msg_id"])
        #expect(message.data["px.title"] != nil && message.data["px.body"] != nil)
        let notification = PushNotification(id: 1, campaign: "sale", data: message.data)
        for (intent, event) in [(LifecycleIntent.notificationDisplayed(notification), "delivered"), (.notificationTapped(notification), "clicked")] {
            let outgoing = try #require(requests(client.handle(intent, device: device, now: start, random: &random)).first)
            let body = try JSONParser.parse(outgoing.request.body)
            #expect(body["msg_id"]?.stringValue == messageID && body["event"]?.stringValue == event)
            let (reply, actions) = answer(outgoing, by: &mock, client: &client, device: device, at: start)
            // "202 Accepted, with no content type and empty body".
            #expect(reply.response.status == 202 && reply.response.body.isEmpty && reply.response.header("Content-Type") == nil)
            #expect(actions.contains { if case .confirmed(let key) = $0 { key == reply.accepted } else { false } })
        }
    }

    @Test func theMockValidatesAsTheSpecSays() throws {
        var mock = PushExpressMock(appID: "demo", updateIntervalSeconds: 120)
        let source = SourceAddress(index: 0)
        func post(_ path: String, _ body: String, method: String = "POST") -> Response {
            mock.handle(Request(method: method, path: path, body: Array(body.utf8)), from: source, at: .start).response
        }
        // "ic_token, required".
        let missing = post("/apps/demo/instances", #"{"ext_id":"u1"}"#)
        #expect(missing.status == 400)
        // "Backend errors, will always have content-type: application/json header and json response body
        // Example: {"message": "validation error: ..."}".
        #expect(missing.header("Content-Type") == "application/json")
        #expect(try JSONParser.parse(missing.body)["message"] == "validation error: ic_token is required")
        let created = try JSONParser.parse(post("/apps/demo/instances", #"{"ic_token":"3f1c2d4e-0000-4000-8000-000000000001"}"#).body)
        let id = try #require(created["id"]?.stringValue)
        #expect(created["just_created"] == .bool(true))
        #expect(try JSONParser.parse(post("/apps/demo/instances", #"{"ic_token":"3f1c2d4e-0000-4000-8000-000000000001"}"#).body)["just_created"] == .bool(false))
        // "transport_type, required … One of fcm, onesignal, huawei, apns"; "platform_type, required".
        #expect(try JSONParser.parse(post("/apps/demo/instances/\(id)/info", #"{"platform_type":"android"}"#, method: "PUT").body)["message"] == "validation error: transport_type is required")
        #expect(post("/apps/demo/instances/\(id)/info", #"{"transport_type":"sms","platform_type":"android"}"#, method: "PUT").status == 400)
        #expect(post("/apps/demo/instances/\(id)/info", #"{"transport_type":"fcm"}"#, method: "PUT").status == 400)
        let updated = post("/apps/demo/instances/\(id)/info", #"{"transport_type":"fcm","platform_type":"android","transport_token":"t"}"#, method: "PUT")
        #expect(updated.status == 200)
        #expect(try JSONParser.parse(updated.body)["update_interval_sec"] == .number(120))
        // Lifecycle: an empty body is accepted (the Android SDK sends none); a wrong event is not.
        #expect(post("/apps/demo/instances/\(id)/events/lifecycle", "").status == 202)
        #expect(post("/apps/demo/instances/\(id)/events/lifecycle", #"{"event":"onscreen"}"#).status == 202)
        #expect(post("/apps/demo/instances/\(id)/events/lifecycle", #"{"event":"minimised"}"#).status == 400)
        // Notification: "msg_id, required"; event "one of: delivered, clicked".
        #expect(post("/apps/demo/instances/\(id)/events/notification", #"{"event":"clicked"}"#).status == 400)
        #expect(post("/apps/demo/instances/\(id)/events/notification", #"{"msg_id":"m","event":"opened"}"#).status == 400)
        // Unknown instance or app: 404 with a reason.
        #expect(post("/apps/demo/instances/nope/events/lifecycle", "").status == 404)
        #expect(try JSONParser.parse(post("/apps/other/instances", #"{"ic_token":"x"}"#).body)["message"] == "app not found: other")
    }

    @Test func theScenarioRunsWithEveryRequestAccountedFor() async throws {
        let result = await Run.simulated(try loadScenario("pushexpress") { $0["devices"] = 1_500 }).run()
        let summary = try JSONParser.parse(result.summary(runID: "test", version: "test").jsonText)
        #expect(summary["ledger"]?["lost"] == .number(0))
        for operation in ["create_instance", "update_info", "lifecycle_event", "notification_event"] {
            let entry = summary["operations"]?["pushexpress.\(operation)"]
            #expect(((entry?["byStatus"]?["200"]?.numberValue ?? 0) + (entry?["byStatus"]?["202"]?.numberValue ?? 0)) > 0, "\(operation) accepted")
        }
        #expect(summary["requests"]?["byStatus"]?["400"] == nil, "no validation failures")
        #expect(summary["requests"]?["byStatus"]?["404"] == nil, "every instance known")
        #expect((summary["counters"]?["pushexpress.loopsStarted"]?.numberValue ?? 0) > 0, "the Android group's loops multiply")
    }

    @Test func aMissingICTokenIsRejectedCountedAndRetried() async throws {
        // A deliberately broken client: no ic_token. The service answers 400, and the client, as the
        // spec says for "any error", retries without end.
        let scenario = try loadScenario("pushexpress") { object in
            object["devices"] = 200
            object["duration"] = "1h"
            object["groups"] = [["name": "broken", "platform": "pushexpress", "os": "android", "client": ["profile": "spec", "omitFields": ["ic_token"]]]]
            object["behaviour"] = ["newInstallShare": 0.5]
            object["campaigns"] = []
        }
        let result = await Run.simulated(scenario).run()
        let create = try #require(result.metrics.operations[PushExpressMessages.Operation.createInstance])
        #expect(create.byStatus[400] ?? 0 > 0)
        #expect(create.byStatus[200] == nil)
        #expect(result.metrics.retries > 0)
        let launchedInstalls = result.metrics.counters["installs"] ?? 0
        #expect(launchedInstalls > 0)
        #expect(create.sent > launchedInstalls, "each new install keeps trying: more attempts than installs")
    }

    @Test func retryDelaysInTheReportFollowEachProfile() async throws {
        // The report's back-off by retry number shows each profile's curve: a service failing most
        // requests with 503 for an hour.
        func delays(_ profile: String) async throws -> JSONValue? {
            let scenario = try loadScenario("pushexpress") { object in
                object["devices"] = 300
                object["duration"] = "1h"
                object["groups"] = [["name": .string(profile), "platform": "pushexpress", "os": "android", "client": ["profile": .string(profile)]]]
                object["campaigns"] = []
                object["platforms"] = ["pushexpress": ["mock": ["http503Rate": 0.85]]]
            }
            let result = await Run.simulated(scenario).run()
            return try JSONParser.parse(result.summary(runID: "t", version: "t").jsonText)["retries"]?["backoffByRetry"]
        }
        func range(_ table: JSONValue?, _ retry: Int) -> ClosedRange<Double>? {
            guard let entry = table?[String(retry)], let low = entry["minMs"]?.numberValue, let high = entry["maxMs"]?.numberValue else { return nil }
            return low...high
        }
        let spec = try await delays("spec")
        #expect(range(spec, 1).map { $0.lowerBound >= 1_000 && $0.upperBound <= 5_000 } == true)
        #expect(range(spec, 3).map { $0.lowerBound >= 4_000 && $0.upperBound <= 20_000 } == true)
        #expect(range(spec, 7).map { $0.upperBound <= 120_000 && $0.lowerBound >= 64_000 } == true, "doubling reaches the cap")
        let swift = try await delays("swift")
        #expect(range(swift, 7).map { $0.lowerBound >= 1_000 && $0.upperBound <= 5_000 } == true, "never grows")
        let android = try await delays("android")
        #expect(range(android, 1) == 2_000...2_000)
        #expect(range(android, 6) == 64_000...64_000)
        #expect(range(android, 11) == 120_000...120_000)
    }
}
