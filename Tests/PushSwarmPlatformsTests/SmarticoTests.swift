import Foundation
import Testing
@testable import PushSwarmCore
@testable import PushSwarmPlatforms
import PushSwarmMetrics

/// Smartico's rules (spec 000 and the research notes), each test quoting the rule it checks. The
/// client and the mock talk through `Pump`, which carries socket messages between them at once.
@Suite struct SmarticoTests {
    /// Carries a client's socket actions to a mock and the mock's replies back, recording both.
    struct Pump {
        var client: SmarticoClient
        var mock: SmarticoMock
        var device: DeviceSnapshot
        var random = SeededRandom(seed: 9, stream: .device)
        var source = SourceAddress(index: 3)
        var sessions: [UInt64: UInt64] = [:]
        var nextSession: UInt64 = 0
        /// Every message the client sent, parsed.
        var sent: [JSONValue] = []
        /// Every message the mock sent, parsed.
        var received: [JSONValue] = []
        var timers: [(UInt64, Instant)] = []
        var other: [DeviceAction] = []
        var refusals: [Response] = []

        init(settings: SmarticoSettings = SmarticoSettings(), device: DeviceSnapshot, emptySessionID: Bool = false) {
            client = SmarticoClient(settings: settings, integration: .full, sendsEmptySessionID: emptySessionID)
            mock = SmarticoMock(settings: settings)
            self.device = device
        }

        mutating func intent(_ intent: LifecycleIntent, at now: Instant) {
            process(client.handle(intent, device: device, now: now, random: &random), at: now)
        }

        mutating func timer(_ token: UInt64, at now: Instant) {
            process(client.timerFired(token, device: device, now: now, random: &random), at: now)
        }

        /// The mock's timer for the session of client socket `socket`.
        mutating func serverTimer(socket: UInt64, at now: Instant) {
            guard let session = sessions[socket] else { return }
            deliver(mock.socketTimer(session: session, at: now), socket: socket, at: now)
        }

        mutating func process(_ actions: [DeviceAction], at now: Instant) {
            for action in actions {
                switch action {
                case .openSocket(let open):
                    nextSession += 1
                    let reply = mock.socketOpened(session: nextSession, path: open.path, from: source, at: now)
                    if let refusal = reply.refusal {
                        refusals.append(refusal)
                        process(client.handle(.failed(socket: open.id, outcome: .response(refusal)), device: device, now: now, random: &random), at: now)
                    } else {
                        sessions[open.id] = nextSession
                        process(client.handle(.opened(socket: open.id), device: device, now: now, random: &random), at: now)
                    }
                case .sendOnSocket(let socket, let text, _):
                    sent.append((try? JSONParser.parse(Array(text.utf8))) ?? .null)
                    guard let session = sessions[socket] else { continue }
                    deliver(mock.socketMessage(session: session, text: text, from: source, at: now), socket: socket, at: now)
                case .closeSocket(let socket):
                    if let session = sessions.removeValue(forKey: socket) { mock.socketClosed(session: session, at: now) }
                case .schedule(let token, let at):
                    timers.append((token, at))
                default:
                    other.append(action)
                }
            }
        }

        mutating func deliver(_ reply: SocketReply, socket: UInt64, at now: Instant) {
            for text in reply.messages {
                received.append((try? JSONParser.parse(Array(text.utf8))) ?? .null)
                process(client.handle(.message(socket: socket, text: text), device: device, now: now, random: &random), at: now)
            }
            if let close = reply.close, let session = sessions.removeValue(forKey: socket) {
                mock.socketClosed(session: session, at: now)
                process(client.handle(.closed(socket: socket, code: Int(close.code), reason: close.reason), device: device, now: now, random: &random), at: now)
            }
        }

        func cids(_ messages: [JSONValue]) -> [Int] { messages.compactMap { $0["cid"]?.integerValue } }
        var openSocket: UInt64? { sessions.keys.max() }
    }

    static func snapshot(os: OperatingSystem = .android, user: String? = "player-1", token: String? = "fcm-1", permission: Bool = true) -> DeviceSnapshot {
        deviceSnapshot(
            platform: "smartico", index: 4, os: os, appVersion: "1.2.29", locale: LocaleShare(country: "BG", language: "bg", timeZone: "Europe/Sofia", weight: 1),
            utcOffset: 10_800, source: 3, accountID: user, userID: user, loggedInAtStart: user != nil, permission: permission, token: token
        )
    }

    let start = Instant.start + .hours(1)
    let launch = LifecycleIntent.appLaunched(isColdStart: true, source: .organic, isFirstLaunch: false)

    @Test func aSessionRunsInitIdentifyLoginInOrder() throws {
        // "3. The native app is sending INIT_SESSION_REQUEST and waiting for the response
        //  4. The native app is sending IDENTIFY_USER_REQUEST and waiting for the response".
        var pump = Pump(device: Self.snapshot())
        _ = pump.client.started(device: pump.device, now: .start, random: &pump.random)
        pump.intent(launch, at: start)
        #expect(pump.cids(pump.sent) == [3, 5, 7], "INIT, IDENTIFY, then LOGIN at the start of a logical session")
        #expect(pump.cids(pump.received) == [4, 6, 11])
        #expect(pump.received.allSatisfy { $0["errCode"] == .number(0) })
        // "Every request sent from client to server should contain two operations fields: ts … uuid".
        for message in pump.sent {
            #expect(message["ts"]?.numberValue ?? 0 > 1_700_000_000_000)
            #expect(message["uuid"]?.stringValue?.count == 36)
        }
        let initMessage = try #require(pump.sent.first?.objectValue)
        #expect(SmarticoMock.validateInit(initMessage, labelKey: SmarticoSettings().labelKey) == nil)
        // "Very important to send player timezone offset in the same format web browser does it (GMT+3 = -180)".
        #expect(initMessage["ua"]?["tzoffset"] == .number(-180))
        #expect(pump.sent[1]["ext_user_id"] == "player-1" && pump.sent[1]["token"] == "fcm-1" && pump.sent[1]["platform"] == .number(7))
        // The login is an accepted item: confirmed once the reply came.
        #expect(pump.other.contains { if case .confirmed = $0 { true } else { false } })
        // LOGIN: "payload->ua: Same as UA object explained above", whose tzoffset is required.
        let login = try #require(pump.sent.last?["payload"])
        #expect(login["ua_tzoffset"] == .number(-180) && login["ua_device_type"] == "NATIVE_PHONE" && login["ua_os"] == "Android")
        #expect(login["ua_fp"] != nil && login["ua_agent"] != nil)
        let session = try #require(pump.sessions.values.first)
        let bare = pump.mock.socketMessage(
            session: session, text: #"{"cid":7,"payload":{"ua_device_type":"NATIVE_PHONE","ua_os":"Android"},"ts":1,"uuid":"x"}"#, from: pump.source, at: start
        )
        #expect(try JSONParser.parse(Array(bare.messages[0].utf8))["errMsg"] == "payload needs ua_device_type, ua_tzoffset (minutes, GMT+3 = -180) and ua_os")
    }

    @Test func anAnonymousAppInitialisesButDoesNotIdentify() {
        // IDENTIFY_USER_REQUEST "Should be sent as soon as the user is logged in."
        var pump = Pump(device: Self.snapshot(user: nil))
        _ = pump.client.started(device: pump.device, now: .start, random: &pump.random)
        pump.intent(launch, at: start)
        #expect(pump.cids(pump.sent) == [3])
        pump.device = Self.snapshot(user: "player-1")
        pump.intent(.loggedIn(userID: "player-1", method: "email"), at: start + .minutes(1))
        #expect(pump.cids(pump.sent) == [3, 5, 7])
    }

    @Test func loggingOutClosesAndReopensTheSocket() {
        // "When the user logs out, you will need to close the WebSocket and reopen it. In other
        // words, user identification should be performed only once per WebSocket session."
        var pump = Pump(device: Self.snapshot())
        _ = pump.client.started(device: pump.device, now: .start, random: &pump.random)
        pump.intent(launch, at: start)
        let first = pump.openSocket
        pump.device = Self.snapshot(user: nil)
        pump.intent(.loggedOut(userID: "player-1"), at: start + .minutes(2))
        #expect(pump.openSocket != nil && pump.openSocket != first, "a new socket")
        #expect(pump.sessions.count == 1, "the old one closed")
        #expect(pump.cids(pump.sent) == [3, 5, 7, 3], "the new socket initialises, anonymously")
    }

    @Test func theMockRefusesASecondIdentifyAndAnythingBeforeInit() throws {
        var mock = SmarticoMock(settings: SmarticoSettings())
        let source = SourceAddress(index: 0)
        _ = mock.socketOpened(session: 1, path: "/websocket/services?master&domain=app&version=1.0.0", from: source, at: .start)
        let early = mock.socketMessage(session: 1, text: #"{"cid":5,"ext_user_id":"u","ts":1,"uuid":"a"}"#, from: source, at: .start)
        #expect(try JSONParser.parse(Array(early.messages[0].utf8))["errMsg"] == "INIT_SESSION must come first on a socket")
        var pump = Pump(device: Self.snapshot())
        _ = pump.client.started(device: pump.device, now: .start, random: &pump.random)
        pump.intent(launch, at: start)
        let session = try #require(pump.sessions.values.first)
        let again = pump.mock.socketMessage(session: session, text: #"{"cid":5,"ext_user_id":"u","ts":1,"uuid":"b"}"#, from: pump.source, at: start)
        let answer = try JSONParser.parse(Array(again.messages[0].utf8))
        #expect(answer["cid"] == .number(6) && answer["errCode"] == .number(1))
        // "Every request … should contain … ts … uuid".
        let bare = pump.mock.socketMessage(session: session, text: #"{"cid":1003,"token":"t","pushNotificationUserStatus":0}"#, from: pump.source, at: start)
        #expect(try JSONParser.parse(Array(bare.messages[0].utf8))["errMsg"] == "ts is required (Unix time in milliseconds)")
        // A bad handshake URL: "?master&domain={{your domain}}&version={{your client code version}}".
        #expect(mock.socketOpened(session: 9, path: "/websocket/services?domain=app", from: source, at: .start).refusal?.status == 400)
        // A client's cid no Int holds closes its session (1008), never traps the mock.
        for (session, cid) in [(20, "1e300"), (21, "-1e19"), (22, "2.5"), (23, "1e400")] {
            _ = mock.socketOpened(session: UInt64(session), path: "/websocket/services?master&domain=app&version=1.0.0", from: source, at: .start)
            let reply = mock.socketMessage(session: UInt64(session), text: #"{"cid":"# + cid + #","ts":1,"uuid":"c"}"#, from: source, at: .start)
            #expect(reply.close?.code == 1008, "cid \(cid)")
        }
    }

    /// A server's message is a peer's number: a `cid` no `Int` holds (`1e300`, `-1e19`, `2.5`)
    /// is an unknown message, never a trap (`Int(1e300)` stopped the whole run).
    @Test func aClassIDNoIntegerHoldsIsIgnoredNotATrap() throws {
        var pump = Pump(device: Self.snapshot())
        _ = pump.client.started(device: pump.device, now: .start, random: &pump.random)
        pump.intent(launch, at: start)
        let socket = try #require(pump.openSocket)
        let before = pump.sent.count
        for text in [#"{"cid": 1e300}"#, #"{"cid": -1e19}"#, #"{"cid": 2.5}"#, #"{"cid": 1e400}"#] {
            pump.process(pump.client.handle(.message(socket: socket, text: text), device: pump.device, now: start, random: &pump.random), at: start)
        }
        #expect(pump.sent.count == before, "nothing answered")
        #expect(pump.openSocket == socket, "and the session goes on")
    }

    @Test func serverPingsGetPongsAndASilentClientPingsAfter29Seconds() throws {
        // "The server will periodically ping the client … the client should respond with a PONG
        // message promptly." Research notes: "Client sends its own PING after 29 s silence".
        var pump = Pump(device: Self.snapshot())
        _ = pump.client.started(device: pump.device, now: .start, random: &pump.random)
        pump.intent(launch, at: start)
        let socket = try #require(pump.openSocket)
        let quiet = start + .seconds(25)
        pump.serverTimer(socket: socket, at: quiet)
        #expect(pump.cids(pump.received).last == 1, "the service pinged a client silent for 25 s")
        #expect(pump.cids(pump.sent).last == 2, "and got its PONG")
        // Silence after that: the client's own timer pings 29 s after the last message.
        let (token, due) = try #require(pump.timers.last { $0.0 & (0xF << 60) == 3 << 60 })
        #expect(due == quiet + .seconds(29) || due < quiet + .seconds(29))
        pump.timer(token, at: quiet + .seconds(29))
        #expect(pump.cids(pump.sent).last == 1, "the client's PING")
        #expect(pump.cids(pump.received).last == 2, "answered by a PONG")
    }

    @Test func theServiceClosesASessionThatStopsAnsweringPings() throws {
        var settings = SmarticoSettings()
        settings.mock.missedPongsBeforeClose = 2
        var mock = SmarticoMock(settings: settings)
        let source = SourceAddress(index: 0)
        _ = mock.socketOpened(session: 1, path: "/websocket/services?master&domain=app&version=1.0.0", from: source, at: .start)
        #expect(mock.socketTimer(session: 1, at: .start + .seconds(25)).messages.count == 1)
        #expect(mock.socketTimer(session: 1, at: .start + .seconds(50)).messages.count == 1)
        #expect(mock.socketTimer(session: 1, at: .start + .seconds(75)).close?.code == 4000)
    }

    @Test func anEmptySessionIDIsRefusedAndBlocksTheAddress() throws {
        // Research notes: "Empty session_id => backend rejects and blocks the IP ~60 min. Never send one."
        var pump = Pump(device: Self.snapshot(), emptySessionID: true)
        _ = pump.client.started(device: pump.device, now: .start, random: &pump.random)
        pump.intent(launch, at: start)
        let answer = try #require(pump.received.first)
        #expect(answer["cid"] == .number(4) && answer["errCode"] == .number(1))
        #expect(answer["errMsg"]?.stringValue?.contains("blocked") == true)
        #expect(pump.sessions.isEmpty, "the service closed the socket")
        // "reconnect fixed 1 s after close (no backoff!)": the reconnect is refused while blocked.
        let (token, due) = try #require(pump.timers.last { $0.0 & (0xF << 60) == 1 << 60 })
        #expect(due == start + .seconds(1))
        pump.timer(token, at: due)
        #expect(pump.refusals.last?.status == 403)
        // The public API refuses the address too; another address is not blocked.
        #expect(pump.mock.handle(Request(method: "GET", path: "/services/public?api_key=x"), from: pump.source, at: due).response.status == 403)
        #expect(pump.mock.socketOpened(session: 99, path: "/websocket/services?master&domain=a&version=1.0.0", from: SourceAddress(index: 7), at: due).refusal == nil)
        // After the block: accepted again.
        #expect(pump.mock.socketOpened(session: 100, path: "/websocket/services?master&domain=a&version=1.0.0", from: pump.source, at: start + .minutes(61)).refusal == nil)
    }

    @Test func theSocketClosesSoonAfterBackgroundOnIOSAndReopensInTheForeground() throws {
        // Research notes: "iOS: 5 s after entering background, then suspended: sockets die within seconds of backgrounding".
        var pump = Pump(device: Self.snapshot(os: .ios))
        _ = pump.client.started(device: pump.device, now: .start, random: &pump.random)
        pump.intent(launch, at: start)
        pump.intent(.appBackgrounded, at: start + .minutes(3))
        let (token, due) = try #require(pump.timers.last { $0.0 & (0xF << 60) == 2 << 60 })
        #expect(due == start + .minutes(3) + .seconds(5))
        pump.timer(token, at: due)
        #expect(pump.sessions.isEmpty)
        pump.intent(.appLaunched(isColdStart: false, source: .organic, isFirstLaunch: false), at: start + .minutes(10))
        #expect(pump.sessions.count == 1)
        // Back within 30 minutes: the same logical session, so no second LOGIN.
        #expect(pump.cids(pump.sent) == [3, 5, 7, 3, 5])
    }

    @Test func popupsResentOnIdentifyAreShownOnce() throws {
        // "Server re-sends pending engagements on every IDENTIFY; clients dedupe by engagement_uid."
        var pump = Pump(device: Self.snapshot())
        _ = pump.client.started(device: pump.device, now: .start, random: &pump.random)
        pump.mock.knowDevice(KnownDevice(pushToken: "fcm-1", userID: "player-1", os: .android, pushPermissionGranted: true))
        var settings = SmarticoSettings()
        settings.mock.miniGameShare = 0
        pump.mock = SmarticoMock(settings: settings)
        pump.mock.knowDevice(KnownDevice(pushToken: "fcm-1", userID: "player-1", os: .android, pushPermissionGranted: true))
        let pushes = pump.mock.launchCampaign(Campaign(name: "c", platform: "smartico", at: .zero, audience: 1), at: start, draws: CampaignDraws(seed: 1, campaign: "c"))
        // The push carries "engagement_uid", "message_id" and "user_ext_id", as section 5 reads them.
        let push = try #require(pushes.first)
        #expect(push.data["engagement_uid"] != nil && Int(push.data["message_id"] ?? "") != nil && push.data["user_ext_id"] == "player-1")
        #expect(pump.mock.campaignSocketMessages(Campaign(name: "c", platform: "smartico", at: .zero, audience: 1), at: start).isEmpty, "nobody online")
        pump.intent(launch, at: start + .minutes(1))
        #expect(pump.cids(pump.received).filter { $0 == 110 }.count == 1, "the pending popup arrives after IDENTIFY")
        #expect(pump.cids(pump.sent).contains(103), "its impression is reported")
        // A second socket (after logout and login) gets nothing again: the impression cleared it.
        pump.intent(.loggedOut(userID: "player-1"), at: start + .minutes(2))
        pump.intent(.loggedIn(userID: "player-1", method: "email"), at: start + .minutes(3))
        #expect(pump.cids(pump.received).filter { $0 == 110 }.count == 1)
    }

    @Test func pushReportsGoOverTheHTTPAPIWithURLEncodedEvents() throws {
        // "https://papiX.smartico.ai/services/public?api_key={your_api_key}&brand_key={your_brand_key}&version=1.2.25&event={event_body}"
        // with "activity_type: 40, // it should be always 40 for push notifications".
        var client = SmarticoClient(settings: SmarticoSettings(), integration: .full, sendsEmptySessionID: false)
        var mock = SmarticoMock(settings: SmarticoSettings())
        var random = SeededRandom(seed: 1, stream: .device)
        let device = Self.snapshot()
        let notification = PushNotification(id: 1, campaign: "c", data: ["engagement_uid": "06f0cd67-ec24-4eeb-bbe9-c3529e8743fa", "message_id": "42", "user_ext_id": "player-1", "action": "dp:ok"])
        let actions = client.handle(.notificationDisplayed(notification), device: device, now: start, random: &random)
            + client.handle(.notificationTapped(notification), device: device, now: start, random: &random)
        let requests = actions.compactMap { if case .send(let outgoing) = $0 { outgoing } else { nil } }
        #expect(requests.map(\.operation) == ["smartico.engagement_delivered", "smartico.engagement_impression", "smartico.engagement_action"])
        for outgoing in requests {
            #expect(outgoing.request.method == "GET")
            let query = try #require(URLQuery.parameters(ofTarget: outgoing.request.path))
            let event = try JSONParser.parse(Array(try #require(query["event"]).utf8))
            #expect(event["payload"]?["activity_type"] == .number(40) && event["payload"]?["message_id"] == .number(42))
            let reply = mock.handle(outgoing.request, from: SourceAddress(index: 0), at: start)
            #expect(reply.response.status == 200)
            #expect(try JSONParser.parse(reply.response.body)["errCode"] == .number(0))
        }
        let bad = URLQuery.build([("api_key", SmarticoSettings().labelKey), ("event", #"{"uuid":"u","ts":1,"event_type":"engagement_impression","user_ext_id":"p","payload":{"engagement_uid":"e","message_id":1,"activity_type":30}}"#)])
        let refused = mock.handle(Request(method: "GET", path: "/services/public?\(bad)"), from: SourceAddress(index: 0), at: start)
        #expect(refused.response.status == 400)
        #expect(try JSONParser.parse(refused.response.body)["detailMessage"] == "payload.activity_type must be 40 for push notifications")
        // The click: "payload: { … action: message.data.action }".
        let clickWithoutAction = URLQuery.build([("api_key", SmarticoSettings().labelKey), ("event", #"{"uuid":"u2","ts":1,"event_type":"engagement_action","user_ext_id":"p","payload":{"engagement_uid":"e","message_id":1,"activity_type":40}}"#)])
        let noAction = mock.handle(Request(method: "GET", path: "/services/public?\(clickWithoutAction)"), from: SourceAddress(index: 0), at: start)
        #expect(noAction.response.status == 400)
        #expect(try JSONParser.parse(noAction.response.body)["detailMessage"] == "payload.action is required for engagement_action")
    }

    /// "Registering push token via POST Request": `"pushNotificationUserStatus": 0, // this is
    /// always 0`; the answer's `ts` is the server's time in Unix milliseconds.
    @Test func aPostedTokenHasStatusZeroAndTheAnswerTellsTheServersTime() throws {
        var mock = SmarticoMock(settings: SmarticoSettings())
        mock.setCalendar(startUnixSeconds: 1_772_409_600)
        func post(status: Int) throws -> (Int, JSONValue) {
            let body: JSONValue = [
                "app_package_id": "app", "api_key": .string(SmarticoSettings().labelKey), "ext_user_id": "p", "pushNotificationUserStatus": .number(Double(status)),
                "platform": 7, "cid": 1003, "token": "fcm-token",
            ]
            let reply = mock.handle(Request(method: "POST", path: "/services/public", body: JSONWriter.bytes(of: body)), from: SourceAddress(index: 0), at: Instant.start + .seconds(2))
            return (reply.response.status, try JSONParser.parse(reply.response.body))
        }
        let (refused, why) = try post(status: 2)
        #expect(refused == 400 && why["detailMessage"] == "pushNotificationUserStatus must be 0 (it is always 0 here)")
        let (status, answer) = try post(status: 0)
        #expect(status == 200)
        #expect(answer["ts"] == .number(1_772_409_602_000), "2 s after the calendar's start, in milliseconds")
    }

    @Test func theScenarioRunsWithEveryRequestAccountedFor() async throws {
        let result = await Run.simulated(try loadScenario("smartico") { $0["devices"] = 2_000 }).run()
        let summary = try JSONParser.parse(result.summary(runID: "test", version: "test").jsonText)
        #expect(summary["ledger"]?["lost"] == .number(0))
        #expect(summary["requests"]?["byStatus"]?["400"] == nil, "no validation failures")
        for operation in ["init_session", "identify_user", "login", "engagement_delivered", "engagement_action", "http_register_token"] {
            #expect((summary["operations"]?["smartico.\(operation)"]?["byStatus"]?["200"]?.numberValue ?? 0) > 0, "\(operation) accepted")
        }
        #expect((summary["counters"]?["smartico.serverPingsAnswered"]?.numberValue ?? 0) > 0)
        #expect((summary["counters"]?["smartico.popupsShown"]?.numberValue ?? 0) > 0)
    }

    @Test func aGroupSendingEmptySessionIDsGetsItsAddressesBlocked() async throws {
        let result = await Run.simulated(try loadScenario("smartico") { object in
            object["devices"] = 300
            object["duration"] = "1h"
            object["groups"] = [["name": "broken", "platform": "smartico", "os": "android", "client": ["emptySessionId": true]]]
            object["campaigns"] = []
        }).run()
        let initSession = try #require(result.metrics.operations[SmarticoMessages.Operation.initSession])
        #expect(initSession.byStatus[400] ?? 0 > 0 && initSession.byStatus[200] == nil, "every INIT refused")
        let connect = try #require(result.metrics.operations[SmarticoMessages.Operation.connect])
        #expect(connect.byStatus[403] ?? 0 > connect.byStatus[101] ?? 0, "then the blocked addresses' reconnects, every second, are refused")
    }
}
