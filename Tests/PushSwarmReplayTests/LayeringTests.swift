import Foundation
import PushSwarmCore
import PushSwarmPlatforms
import Testing

/// The architecture's rule (docs/ARCHITECTURE.md): Core names no platform, and neither does the
/// replay tool above it. What either knows of a platform it asks the `Platform` (its operations
/// in a log, its campaigns' traces); a platform's name in their code would be a fact kept in the
/// wrong place, which adding a sixth platform would miss.
@Suite struct LayeringTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    /// A Swift file's code without its comments: `//` to the end of a line (outside a string)
    /// and `/* … */`. String literals stay: a platform's name in one is a name in the code.
    static func code(_ text: String) -> String {
        var out: [UInt8] = []
        let bytes = Array(text.utf8)
        var index = 0
        var inString = false
        while index < bytes.count {
            let byte = bytes[index]
            let next = index + 1 < bytes.count ? bytes[index + 1] : 0
            if inString {
                out.append(byte)
                if byte == UInt8(ascii: "\\") && index + 1 < bytes.count {
                    out.append(next)
                    index += 2
                    continue
                }
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\n") { inString = false }
                index += 1
            } else if byte == UInt8(ascii: "/") && next == UInt8(ascii: "/") {
                while index < bytes.count && bytes[index] != UInt8(ascii: "\n") { index += 1 }
            } else if byte == UInt8(ascii: "/") && next == UInt8(ascii: "*") {
                index += 2
                while index + 1 < bytes.count && !(bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/")) { index += 1 }
                index += 2
            } else {
                if byte == UInt8(ascii: "\"") { inString = true }
                out.append(byte)
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    @Test(arguments: ["PushSwarmCore", "PushSwarmReplay"])
    func namesNoPlatformInItsCode(target: String) throws {
        let names = PlatformRegistry.all.map { $0.name.lowercased() }
        #expect(names.count == 5 && names.contains("smartapppush"), "the registry's platforms: \(names)")
        let directory = Self.sources.appendingPathComponent(target)
        let files = try #require(FileManager.default.enumerator(atPath: directory.path)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") })
        #expect(files.count > 5, "\(target)'s sources are read")
        var named: [String] = []
        for file in files {
            let code = Self.code(try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)).lowercased()
            for name in names where code.contains(name) { named.append("\(file) names \(name)") }
        }
        #expect(named.isEmpty, "\(named)")
    }

    /// The reader of comments and strings that the test above stands on.
    @Test func commentsAreLeftOutAndStringsKept() {
        let text = """
            let a = "smartapppush" // meiro
            /// Flocktory's rule
            /* pushexpress
               smartico */ let b = "a // b \\" c"
            """
        let code = Self.code(text)
        #expect(code.contains("\"smartapppush\"") && code.contains("\"a // b \\\" c\""), "\(code)")
        #expect(!code.contains("meiro") && !code.contains("Flocktory") && !code.contains("pushexpress") && !code.contains("smartico"), "\(code)")
    }
}
