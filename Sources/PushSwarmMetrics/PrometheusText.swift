/// Prometheus's text exposition format (version 0.0.4), written in one place for every endpoint
/// that serves it (a wall run's `--metrics-listen`, the `--workers` parent's, the built-in mock's
/// `/metrics`): each family's HELP and TYPE, and samples whose label values are escaped as the
/// format says (backslash, double quote, line feed). The mock once wrote its own lines without
/// escaping, beside this writer's.
public struct PrometheusText {
    public enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    /// A sample's labels, escaped as they are added.
    public struct Labels: Sendable, Equatable {
        public private(set) var text = ""

        public init() {}

        public init(_ pairs: [(String, String)]) {
            for (name, value) in pairs { add(name, value) }
        }

        /// These labels and `name="value"`.
        public func with(_ name: String, _ value: String) -> Labels {
            var labels = self
            labels.add(name, value)
            return labels
        }

        private mutating func add(_ name: String, _ value: String) {
            if !text.isEmpty { text += "," }
            text += name + "=\"" + PrometheusText.escape(value) + "\""
        }
    }

    private var lines: [String] = []

    public init() {}

    /// Starts a family: its HELP line (backslashes and line feeds escaped) and its TYPE.
    public mutating func family(_ name: String, _ kind: Kind, help: String) {
        var escaped = ""
        for character in help.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        lines.append("# HELP \(name) \(escaped)")
        lines.append("# TYPE \(name) \(kind.rawValue)")
    }

    /// One sample of the family started last (or one of its `_bucket`, `_sum`, `_count`).
    public mutating func sample(_ name: String, _ labels: Labels, _ value: some Numeric & CustomStringConvertible) {
        lines.append(labels.text.isEmpty ? "\(name) \(value)" : "\(name){\(labels.text)} \(value)")
    }

    /// The text, each line ended by a line feed.
    public var text: String { lines.joined(separator: "\n") + "\n" }

    /// A label value as the format writes it: `\` → `\\`, `"` → `\"`, line feed → `\n`.
    public static func escape(_ value: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(value.utf8.count)
        for character in value.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }
}
