import Foundation
import Testing
@testable import PushSwarmCore
import PushSwarmMetrics

/// A stand-in platform, so Core's decoder is tested without a real one.
struct FakePlatform: Platform {
    struct Configuration: PlatformConfiguration {
        var mockBehaviour: MockBehaviour { MockBehaviour() }
        func makeMock() -> any MockService { fatalError("not used") }
        func partitionCopy() -> any PlatformConfiguration { self }
        var encoded: JSONObject { [:] }
        func clientProfile(_ options: JSONReader?, os: OperatingSystem) throws -> any ClientProfile {
            if let options { try options.object().finish() }
            return Profile()
        }
    }

    struct Profile: ClientProfile {
        var pushToken: PushTokenStyle { .stableID }
        func makeClient(for profile: DeviceProfile) -> any PlatformClient { fatalError("not used") }
        func partitionCopy() -> any ClientProfile { self }
        var encodedOptions: JSONObject? { nil }
    }

    var name: String { "fake" }
    func configure(_ settings: JSONReader?) throws -> any PlatformConfiguration {
        if let settings { try settings.object().finish() }
        return Configuration()
    }

    func logOperation(method: String, path: String) -> String? { path == "/fake" ? "fake.call" : nil }
}

@Suite struct ScenarioDecoderTests {
    let decoder = ScenarioDecoder(platforms: [FakePlatform()])

    func decode(_ text: String) throws -> Scenario {
        try decoder.decode(text: Array(text.utf8))
    }

    func error(_ text: String) -> ScenarioError? {
        do {
            _ = try decode(text)
            return nil
        } catch let error as ScenarioError {
            return error
        } catch {
            return nil
        }
    }

    let valid = #"{"name": "s", "duration": "2h", "devices": 100, "groups": [{"name": "g", "platform": "fake", "os": "ios"}]}"#

    @Test func aMinimalScenarioGetsTheDocumentedDefaults() throws {
        let scenario = try decode(valid)
        #expect(scenario.seed == 1)
        #expect(scenario.clock == .simulated)
        #expect(scenario.duration == .hours(2))
        #expect(scenario.network.devicesPerSourceAddress == 1)
        #expect(scenario.groups[0].behaviour == Behaviour())
        #expect(scenario.locales == LocaleShare.defaultMix)
    }

    @Test func groupBehaviourOverridesTheTopLevelWhichOverridesTheDefaults() throws {
        let scenario = try decode(#"""
            {"name": "s", "duration": 60, "devices": 1, "behaviour": {"eventsPerSession": 3, "tapRate": 0.5},
             "groups": [{"name": "g", "platform": "fake", "os": "ios", "behaviour": {"tapRate": {"android": 0.1, "ios": 0.2}}}]}
            """#)
        let behaviour = scenario.groups[0].behaviour
        #expect(behaviour.eventsPerSession == 3)
        #expect(behaviour.tapRate == PerOS(android: 0.1, ios: 0.2))
        #expect(behaviour.sessionLength == Behaviour().sessionLength)
    }

    @Test(arguments: [
        (#"{"name": "s", "duration": "1h", "groups": [{"name": "g", "platform": "fake", "os": "ios"}]}"#, "$.devices", "is required but missing"),
        (#"{"name": "s", "duration": "1h", "devices": "many", "groups": [{"name": "g", "platform": "fake", "os": "ios"}]}"#, "$.devices", "expected a number, found a string"),
        (#"{"name": "s", "duration": "1h", "devices": -5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}]}"#, "$.devices", "must be at least 1, found -5"),
        (#"{"name": "s", "duration": "1h", "devices": 2.5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}]}"#, "$.devices", "expected a whole number, found 2.5"),
        (#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "smartapppush", "os": "ios"}]}"#, "$.groups[0].platform", #"unknown platform "smartapppush"; known: fake"#),
        (#"{"name": "s", "duration": "1h", "devices": 5, "devcies": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}]}"#, "$.devcies", "unknown key"),
        (#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "windows"}]}"#, "$.groups[0].os", #""windows" is not one of: android, ios"#),
        (#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios", "behaviour": {"tapRate": {"android": 0.1, "ios": 1.5}}}]}"#, "$.groups[0].behaviour.tapRate.ios", "1.5 is out of range; expected 0 to 1"),
        (#"{"name": "s", "duration": "soon", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}]}"#, "$.duration", "is not a duration"),
        (#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}], "campaigns": [{"name": "c", "at": "2h"}]}"#, "$.campaigns[0].at", "after the end of the run"),
        (#"{"name": "s", "duration": "1h", "devices": 5, "groups": []}"#, "$.groups", "at least one device group"),
        (#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}], "locales": [{"country": "XX", "language": "en", "timezone": "UTC"}]}"#, "$.locales[0].country", "not an ISO 3166-1"),
        (#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}], "behaviour": {"sessionLength": {"lognormal": {"median": "5m"}}}}"#, "$.behaviour.sessionLength.lognormal.sigma", "is required"),
        (#"{"name": "s", "name": "t", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}]}"#, "$.name", "appears twice"),
        // Numbers the engine cannot honour: refused with their path, never a run that cannot end.
        (#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios", "workload": {"model": "open", "rate": "1e12/s"}}]}"#, "$.groups[0].workload.rate", "must be at most 10000000/s"),
        (#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios", "workload": {"model": "open", "steps": [{"for": "1m", "from": 0, "to": "2e7/s"}]}}]}"#, "$.groups[0].workload.steps[0].to", "must be at most 10000000/s"),
        (#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios", "workload": {"model": "open", "rate": "0/s"}}]}"#, "$.groups[0].workload.rate", "every rate is zero"),
        (#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios", "workload": {"model": "open", "steps": [{"for": "1m", "rate": 0}, {"for": "1m", "from": 0, "to": 0}]}}]}"#, "$.groups[0].workload.steps", "every rate is zero"),
        (#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}], "behaviour": {"sessionsPerDay": 1e12}}"#, "$.behaviour.sessionsPerDay", "expected 0 to 1000000"),
        (#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}], "behaviour": {"sessionsPerDay": {"lognormal": {"median": 1e12, "sigma": 1}}}}"#, "$.behaviour.sessionsPerDay.lognormal.median", "expected 0 to 1000000"),
        (#"{"name": "s", "duration": "1h", "devices": 1e12, "groups": [{"name": "g", "platform": "fake", "os": "ios"}]}"#, "$.devices", "must be at most 10000000"),
        (#"{"name": "s", "duration": -5, "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}]}"#, "$.duration", "must not be negative"),
        (#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios", "client": {"x": 1}}]}"#, "$.groups[0].client.x", "unknown key"),
    ])
    func aBadScenarioNamesThePathAndWhatIsWrong(text: String, path: String, message: String) {
        let error = error(text)
        #expect(error?.path == path)
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }

    /// A pause in steps is a rate of zero, and a draw of sessions per day above the ceiling is cut
    /// to it (a log-normal's tail is unbounded).
    @Test func aPauseIsAStepAndADrawOfSessionsIsCutToTheCeiling() throws {
        let scenario = try decode(#"""
            {"name": "s", "duration": "1h", "devices": 200, "behaviour": {"sessionsPerDay": {"lognormal": {"median": 900000, "sigma": 3}}},
             "groups": [{"name": "g", "platform": "fake", "os": "ios", "workload": {"model": "open", "steps": [{"for": "1m", "rate": 0}, {"for": "1m", "rate": "5/s"}]}}]}
            """#)
        guard case .open(let open) = scenario.groups[0].workload else { Issue.record("an open workload"); return }
        #expect(open.segments.map(\.fromRate) == [0, 5])
        let draws = (0..<200).map { Fleet(scenario: scenario).profile(at: $0).sessionsPerDay }
        #expect(draws.max() == Behaviour.maximumSessionsPerDay, "some draws were above the ceiling and were cut")
        #expect(draws.allSatisfy { $0 <= Behaviour.maximumSessionsPerDay })
    }

    @Test func anUnknownKeyListsTheKeysThatAreAllowed() {
        let error = error(#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}], "network": {"devicesPerIP": 3}}"#)
        #expect(error?.path == "$.network.devicesPerIP")
        #expect(error?.message == "unknown key; expected one of: connections, connectionsPerSourceIP, devicesPerSourceIP, errorRate, http2, maxWebSocketMessageBytes, rtt")
    }

    /// `network.connections`: each install's own connections, as phones hold them, unless a
    /// scenario asks for the address's shared pool (issue 50: "This is the default in both
    /// clocks"); another word is refused at its path, naming the choices.
    @Test func whoseConnectionsIsReadAndChecked() throws {
        func scenario(_ network: String) -> String {
            #"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}], "network": "# + network + "}"
        }
        #expect(try decode(scenario("{}")).network.connections == .perDevice)
        #expect(try decode(#"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}]}"#).network.connections == .perDevice)
        #expect(try decode(scenario(#"{"connections": "perDevice"}"#)).network.connections == .perDevice)
        #expect(try decode(scenario(#"{"connections": "perAddress"}"#)).network.connections == .perAddress)
        let refused = error(scenario(#"{"connections": "perPhone"}"#))
        #expect(refused?.path == "$.network.connections")
        #expect(refused?.message == #""perPhone" is not one of: perAddress, perDevice"#)
        #expect(ConnectionStack.okHttp == ConnectionStack(maxConnectionsPerHost: 5, idleTimeout: .minutes(5), connectTimeout: .seconds(10)))
        #expect(OperatingSystem.android.connectionStack == .okHttp && OperatingSystem.ios.connectionStack == .urlSession)
    }

    /// `network.http2` (issue 51): ALPN decides by default, as phones let it; prior knowledge and
    /// HTTP/1.1 only are asked for by name, and say what ALPN offers.
    @Test func whichHTTPIsReadAndChecked() throws {
        func scenario(_ network: String) -> String {
            #"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}], "network": "# + network + "}"
        }
        #expect(try decode(scenario("{}")).network.http2 == .negotiate)
        #expect(try decode(scenario(#"{"http2": "priorKnowledge"}"#)).network.http2 == .priorKnowledge)
        #expect(try decode(scenario(#"{"http2": "off"}"#)).network.http2 == .off)
        let refused = error(scenario(#"{"http2": "on"}"#))
        #expect(refused?.path == "$.network.http2")
        #expect(refused?.message == #""on" is not one of: negotiate, priorKnowledge, off"#)
        #expect(HTTPVersionPolicy.negotiate.alpnOffer == ["h2", "http/1.1"] && HTTPVersionPolicy.off.alpnOffer == ["http/1.1"])
        #expect(HTTPVersionPolicy.negotiate.mayNegotiateHTTP2(tls: true) && !HTTPVersionPolicy.negotiate.mayNegotiateHTTP2(tls: false))
    }

    /// The warm-up of wall runs against a real target: on unless set off, paced and bounded.
    @Test func theWarmUpIsReadAndBounded() throws {
        func scenario(_ warmUp: String) -> String {
            #"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}], "warmUp": "# + warmUp + "}"
        }
        let defaults = try decode(scenario("{}")).warmUp
        #expect(defaults.enabled == nil && defaults.rate == 1_000 && defaults.maxDuration == .minutes(5))
        let set = try decode(scenario(#"{"enabled": false, "rate": "600/m", "maxDuration": "90s"}"#)).warmUp
        #expect(set.enabled == false && set.rate == 10 && set.maxDuration == .seconds(90))
        #expect(error(scenario(#"{"rate": 0}"#))?.path == "$.warmUp.rate")
        #expect(error(scenario(#"{"maxDuration": "2d"}"#))?.path == "$.warmUp.maxDuration")
        #expect(error(scenario(#"{"enabled": "yes"}"#))?.path == "$.warmUp.enabled")
        #expect(error(scenario(#"{"rates": 5}"#))?.message == "unknown key; expected one of: enabled, maxDuration, perAddressRate, rate, settle")
        #expect(defaults.perAddressRate == nil && defaults.settle == .seconds(5))
        let paced = try decode(scenario(#"{"perAddressRate": "7/s", "settle": "0s"}"#)).warmUp
        #expect(paced.perAddressRate == 7 && paced.settle == .zero)
        #expect(error(scenario(#"{"perAddressRate": 0}"#))?.path == "$.warmUp.perAddressRate")
        #expect(error(scenario(#"{"settle": "1h"}"#))?.path == "$.warmUp.settle")
    }

    /// A `network` key: its default, a value set, and values out of bounds refused at its path.
    @Test(arguments: [
        ("maxWebSocketMessageBytes", 65_536, 4_096, ["100", "16777217", "1e12", "-1"]),
        ("connectionsPerSourceIP", 64, 1, ["0", "10001", "2.5", "\"4\""]),
    ])
    func networkLimitsAreReadAndBounded(key: String, byDefault: Int, set: Int, bad: [String]) throws {
        func scenario(_ network: String) -> String {
            #"{"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}], "network": "# + network + "}"
        }
        func read(_ network: NetworkSettings) -> Int {
            key == "connectionsPerSourceIP" ? network.connectionsPerSourceAddress : network.maxWebSocketMessageBytes
        }
        #expect(read(try decode(scenario("{}")).network) == byDefault)
        #expect(read(try decode(scenario(#"{""# + key + #"": "# + String(set) + "}")).network) == set)
        for value in bad {
            let error = error(scenario(#"{""# + key + #"": "# + value + "}"))
            #expect(error?.path == "$.network.\(key)", "\(value): \(String(describing: error))")
        }
    }

    @Test func invalidJSONSaysWhere() {
        let error = error("{\"name\": \"s\",\n \"devices\": ,}")
        #expect(error?.path == "$")
        #expect(error?.message.contains("line 2, column 13") == true, "\(String(describing: error))")
    }

    @Test func everyBadFixtureIsRejected() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/bad-scenarios")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".json") }
        #expect(files.count >= 10)
        let realDecoder = ScenarioDecoder(platforms: [FakePlatform()])
        for file in files {
            let text = try Data(contentsOf: directory.appendingPathComponent(file))
            let fixed = String(decoding: text, as: UTF8.self).replacingOccurrences(of: "\"smartapppush\"", with: "\"fake\"")
            #expect(throws: ScenarioError.self, "\(file)") { try realDecoder.decode(text: Array(fixed.utf8)) }
        }
    }
}
