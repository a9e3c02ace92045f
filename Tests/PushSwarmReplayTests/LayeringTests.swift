import Foundation
import PushSwarmCore
import PushSwarmPlatforms
import Testing

/// The architecture's rule (docs/ARCHITECTURE.md): Core names no platform, and neither does the
/// replay tool above it, in code or in comments (a comment that cites a platform's spec belongs
/// beside that platform's code). What either knows of a platform it asks the `Platform` (its
/// operations in a log, its campaigns' traces); a platform's name there would be a fact kept in
/// the wrong place, which adding a sixth platform would miss.
@Suite struct LayeringTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    @Test(arguments: ["PushSwarmCore", "PushSwarmReplay"])
    func namesNoPlatform(target: String) throws {
        let names = PlatformRegistry.all.map { $0.name.lowercased() }
        #expect(names.count == 5 && names.contains("smartapppush"), "the registry's platforms: \(names)")
        let directory = Self.sources.appendingPathComponent(target)
        let files = try #require(FileManager.default.enumerator(atPath: directory.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") })
        #expect(files.count > 5, "\(target)'s sources are read")
        var named: [String] = []
        for file in files {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8).lowercased()
            for name in names where text.contains(name) { named.append("\(file) names \(name)") }
        }
        #expect(named.isEmpty, "\(named)")
    }
}
