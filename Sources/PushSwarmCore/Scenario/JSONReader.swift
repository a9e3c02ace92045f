public import PushSwarmMetrics

/// Reads one value of a scenario document, knowing its JSON path, so every error names where it is.
public struct JSONReader: Sendable {
    public let value: JSONValue
    public let path: String

    public init(_ value: JSONValue, path: String = "$") {
        self.value = value
        self.path = path
    }

    public func fail(_ message: String) -> ScenarioError {
        ScenarioError(path: path, message: message)
    }

    public func object() throws -> ObjectReader {
        guard case .object(let object) = value else { throw fail("expected an object, found \(value.kindName)") }
        return try ObjectReader(object, path: path)
    }

    public func array() throws -> [JSONReader] {
        guard case .array(let elements) = value else { throw fail("expected an array, found \(value.kindName)") }
        return elements.enumerated().map { JSONReader($1, path: "\(path)[\($0)]") }
    }

    public func string() throws -> String {
        guard case .string(let text) = value else { throw fail("expected a string, found \(value.kindName)") }
        return text
    }

    public func nonEmptyString() throws -> String {
        let text = try string()
        guard !text.isEmpty else { throw fail("must not be empty") }
        return text
    }

    public func bool() throws -> Bool {
        guard case .bool(let flag) = value else { throw fail("expected true or false, found \(value.kindName)") }
        return flag
    }

    public func number() throws -> Double {
        guard case .number(let number) = value else { throw fail("expected a number, found \(value.kindName)") }
        return number
    }

    /// A number in `range` (inclusive).
    public func number(in range: ClosedRange<Double>) throws -> Double {
        let number = try number()
        guard range.contains(number) else {
            throw fail("\(format(number)) is out of range; expected \(format(range.lowerBound)) to \(format(range.upperBound))")
        }
        return number
    }

    /// A probability: a number from 0 to 1.
    public func fraction() throws -> Double {
        try number(in: 0...1)
    }

    public func integer(minimum: Int = Int.min, maximum: Int = Int.max) throws -> Int {
        let number = try number()
        guard number == number.rounded(), abs(number) < 9e15 else { throw fail("expected a whole number, found \(format(number))") }
        let whole = Int(number)
        guard whole >= minimum else {
            throw fail(minimum == 0 ? "must not be negative, found \(whole)" : "must be at least \(minimum), found \(whole)")
        }
        guard whole <= maximum else { throw fail("must be at most \(maximum), found \(whole)") }
        return whole
    }

    /// A duration: a string with units (`250ms`, `7m`, `24h`, `1h30m`) or a number of seconds.
    public func duration() throws -> TimeSpan {
        switch value {
        case .number(let seconds):
            guard seconds >= 0 else { throw fail("a duration must not be negative, found \(format(seconds))") }
            return .seconds(seconds)
        case .string(let text):
            guard let span = TimeSpan(parsing: text) else {
                throw fail("\"\(text)\" is not a duration; write it like \"250ms\", \"90s\", \"7m\", \"24h\" or \"1h30m\"")
            }
            return span
        default:
            throw fail("expected a duration such as \"30s\" or a number of seconds, found \(value.kindName)")
        }
    }

    /// A duration longer than zero (a run's length, a timeout).
    public func positiveDuration() throws -> TimeSpan {
        let span = try duration()
        guard span > .zero else { throw fail("must be longer than zero") }
        return span
    }

    /// One of `choices`, spelled exactly.
    public func choice(_ choices: [String]) throws -> String {
        let text = try string()
        guard choices.contains(text) else {
            throw fail("\"\(text)\" is not one of: \(choices.joined(separator: ", "))")
        }
        return text
    }

    /// A distribution over durations (values in seconds):
    /// `"7m"` or `420` (constant), `{"constant": "7m"}`, `{"uniform": ["1s", "5s"]}`,
    /// `{"exponential": {"mean": "2m"}}`, `{"lognormal": {"median": "7m", "sigma": 1.5}}`.
    public func durationDistribution() throws -> Distribution {
        try distribution { try $0.duration().seconds }
    }

    /// A distribution over plain numbers in `range`, in the same forms as durations.
    public func numberDistribution(in range: ClosedRange<Double>) throws -> Distribution {
        try distribution { try $0.number(in: range) }
    }

    private func distribution(reading scalar: (JSONReader) throws -> Double) throws -> Distribution {
        switch value {
        case .number, .string:
            return .constant(try scalar(self))
        case .object:
            var object = try object()
            let kinds = ["constant", "uniform", "exponential", "lognormal"]
            guard object.count == 1, let kind = object.keys.first else {
                throw fail("a distribution is an object with exactly one of: \(kinds.joined(separator: ", "))")
            }
            let distribution: Distribution
            switch kind {
            case "constant":
                distribution = .constant(try object.required("constant") { try scalar($0) })
            case "uniform":
                distribution = try object.required("uniform") { reader in
                    let bounds = try reader.array()
                    guard bounds.count == 2 else { throw reader.fail("expected [minimum, maximum]") }
                    let minimum = try scalar(bounds[0])
                    let maximum = try scalar(bounds[1])
                    guard minimum <= maximum else { throw reader.fail("minimum is above maximum") }
                    return .uniform(minimum: minimum, maximum: maximum)
                }
            case "exponential":
                distribution = try object.required("exponential") { reader in
                    var parameters = try reader.object()
                    let mean = try parameters.required("mean") { try scalar($0) }
                    try parameters.finish()
                    return .exponential(mean: mean)
                }
            case "lognormal":
                distribution = try object.required("lognormal") { reader in
                    var parameters = try reader.object()
                    let median = try parameters.required("median") { try scalar($0) }
                    let sigma = try parameters.required("sigma") { try $0.number(in: 0...10) }
                    try parameters.finish()
                    return .logNormal(median: median, sigma: sigma)
                }
            default:
                throw fail("unknown distribution \"\(kind)\"; expected one of: \(kinds.joined(separator: ", "))")
            }
            try object.finish()
            return distribution
        default:
            throw fail("expected a distribution (a value, or an object such as {\"lognormal\": {\"median\": \"7m\", \"sigma\": 1.5}}), found \(value.kindName)")
        }
    }

    private func format(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }
}

/// Reads the members of one JSON object and, on `finish()`, rejects any member nobody asked for:
/// a misspelt key is an error, never silently ignored.
public struct ObjectReader: Sendable {
    public let object: JSONObject
    public let path: String
    private var used: Set<String> = ["$schema", "$comment"]
    /// Every key asked for, present or not: the keys this object may have.
    private var asked: Set<String> = []

    init(_ object: JSONObject, path: String) throws {
        self.object = object
        self.path = path
        var seen = Set<String>()
        for key in object.keys where !seen.insert(key).inserted {
            throw ScenarioError(path: memberPath(key), message: "appears twice in the same object")
        }
    }

    public var keys: [String] { object.keys }
    public var count: Int { object.keys.filter { $0 != "$schema" && $0 != "$comment" }.count }

    public func memberPath(_ key: String) -> String {
        let isPlain = !key.isEmpty && key.unicodeScalars.allSatisfy {
            ($0.properties.isAlphabetic || $0.properties.numericType != nil || $0 == "_") && $0.isASCII
        }
        return isPlain ? "\(path).\(key)" : "\(path)[\"\(key)\"]"
    }

    public func has(_ key: String) -> Bool { object[key] != nil }

    public mutating func reader(_ key: String) -> JSONReader? {
        asked.insert(key)
        guard let value = object[key] else { return nil }
        used.insert(key)
        return JSONReader(value, path: memberPath(key))
    }

    public mutating func required<T>(_ key: String, _ read: (JSONReader) throws -> T) throws -> T {
        guard let reader = reader(key) else {
            throw ScenarioError(path: memberPath(key), message: "is required but missing")
        }
        return try read(reader)
    }

    public mutating func optional<T>(_ key: String, _ read: (JSONReader) throws -> T) throws -> T? {
        guard let reader = reader(key) else { return nil }
        return try read(reader)
    }

    /// Marks every member as read and returns them, for maps whose keys the caller interprets.
    public mutating func allMembers() -> [(key: String, reader: JSONReader)] {
        object.members.filter { $0.key != "$schema" && $0.key != "$comment" }.map { member in
            used.insert(member.key)
            return (member.key, JSONReader(member.value, path: memberPath(member.key)))
        }
    }

    // A format's keys as a type (`Scenario.Key`, `RetryRule.Key`): spelt once, for its reader and
    // its writer.
    public func memberPath<Key: RawRepresentable<String>>(_ key: Key) -> String { memberPath(key.rawValue) }
    public func has<Key: RawRepresentable<String>>(_ key: Key) -> Bool { has(key.rawValue) }
    public mutating func reader<Key: RawRepresentable<String>>(_ key: Key) -> JSONReader? { reader(key.rawValue) }
    public mutating func required<Key: RawRepresentable<String>, T>(_ key: Key, _ read: (JSONReader) throws -> T) throws -> T {
        try required(key.rawValue, read)
    }
    public mutating func optional<Key: RawRepresentable<String>, T>(_ key: Key, _ read: (JSONReader) throws -> T) throws -> T? {
        try optional(key.rawValue, read)
    }

    /// Throws for the first member that was never read.
    public func finish() throws {
        for key in object.keys where !used.contains(key) {
            let known = asked.sorted()
            throw ScenarioError(
                path: memberPath(key),
                message: "unknown key" + (known.isEmpty ? "" : "; expected one of: \(known.joined(separator: ", "))")
            )
        }
    }
}
