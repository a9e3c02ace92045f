/// A problem with a scenario file or a command-line override, naming where it is and what is
/// wrong: `$.groups[1].platform: unknown platform "onesignal"; known: …`.
public struct ScenarioError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A JSON path (`$.groups[1].platform`) or a flag (`--devices`).
    public var path: String
    public var message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }
}
