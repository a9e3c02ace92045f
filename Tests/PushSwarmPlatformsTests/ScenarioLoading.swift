import Foundation
import Testing
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmPlatforms

/// A scenario from `Scenarios/`, changed by `mutate` before it is decoded (fewer devices, a
/// broken client, …).
func loadScenario(_ name: String, _ mutate: (inout JSONObject) -> Void = { _ in }) throws -> Scenario {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Scenarios/\(name).json")
    var object = try #require(try JSONParser.parse(Array(try Data(contentsOf: url))).objectValue)
    mutate(&object)
    return try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: JSONWriter.bytes(of: .object(object)))
}
