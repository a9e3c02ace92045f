public import PushSwarmMetrics

/// capacity.json: what `pushswarm capacity` found, for a CI job to read. This type writes the
/// file and reads it back, so its keys are spelt once (`Key`, `StepKey`, `GeneratorKey`).
public struct CapacityReport: Sendable, Equatable {
    public var scenario: String
    /// The objective as `--slo` takes it (`p99<200ms,errors<1%`; empty without one).
    public var objective: String
    /// The thresholds as written.
    public var thresholds: [String]
    public var outcome: CapacityOutcome

    public init(scenario: String, objective: String, thresholds: [String], outcome: CapacityOutcome) {
        self.scenario = scenario
        self.objective = objective
        self.thresholds = thresholds
        self.outcome = outcome
    }

    public enum Key: String, CaseIterable, Sendable {
        case scenario, objective, thresholds, capacityPerSecond, heldPerSecond, limitedByPushSwarmAtPerSecond, steps
    }

    public enum StepKey: String, CaseIterable, Sendable {
        case rate, sent, latencyMs, errorRate, held, saturated, generatorLimit, failedThresholds, generator
    }

    /// PushSwarm's own health at a step, as summary.json's generator section says it.
    public enum GeneratorKey: String, CaseIterable, Sendable {
        case lagP99Ms, cpuBusy, shedArrivals, missedStarts, pendingAtEnd
    }

    /// Why a file does not read as a capacity report: the JSON path and what is wrong there.
    public struct ReadError: Error, Equatable, CustomStringConvertible {
        public var path: String
        public var message: String
        public var description: String { "\(path): \(message)" }
    }

    // MARK: writing

    public var json: JSONValue {
        var root = JSONObject()
        root[Key.scenario.rawValue] = .string(scenario)
        root[Key.objective.rawValue] = .string(objective)
        root[Key.thresholds.rawValue] = .array(thresholds.map(JSONValue.string))
        root[Key.capacityPerSecond.rawValue] = Self.optional(outcome.capacity)
        root[Key.heldPerSecond.rawValue] = Self.optional(outcome.held)
        root[Key.limitedByPushSwarmAtPerSecond.rawValue] = Self.optional(outcome.generatorLimit)
        root[Key.steps.rawValue] = .array(outcome.steps.map(Self.json(of:)))
        return .object(root)
    }

    /// The report as capacity.json holds it: indented, newline-terminated.
    public var text: String { JSONWriter.text(of: json, indent: 2) + "\n" }

    private static func json(of step: CapacityStep) -> JSONValue {
        var entry = JSONObject()
        entry[StepKey.rate.rawValue] = .number(step.rate)
        entry[StepKey.sent.rawValue] = .number(Double(step.sent))
        entry[StepKey.latencyMs.rawValue] = optional(step.latency.map { Double($0) / 1_000 })
        entry[StepKey.errorRate.rawValue] = .number(step.errorRate)
        entry[StepKey.held.rawValue] = .bool(step.held)
        entry[StepKey.saturated.rawValue] = .bool(step.saturated)
        entry[StepKey.generatorLimit.rawValue] = step.generatorLimit.map(JSONValue.string) ?? .null
        entry[StepKey.failedThresholds.rawValue] = .array(step.failedThresholds.map(JSONValue.string))
        if let health = step.generator {
            var generator = JSONObject()
            generator[GeneratorKey.lagP99Ms.rawValue] = optional(health.lagP99Milliseconds)
            generator[GeneratorKey.cpuBusy.rawValue] = optional(health.cpuBusy.map { ($0 * 1_000).rounded() / 1_000 })
            generator[GeneratorKey.shedArrivals.rawValue] = .number(Double(health.shedArrivals))
            generator[GeneratorKey.missedStarts.rawValue] = .number(Double(health.missedStarts))
            generator[GeneratorKey.pendingAtEnd.rawValue] = .number(Double(health.pendingAtEnd))
            entry[StepKey.generator.rawValue] = .object(generator)
        }
        return .object(entry)
    }

    private static func optional(_ number: Double?) -> JSONValue { number.map(JSONValue.number) ?? .null }

    // MARK: reading

    /// Reads capacity.json's text back.
    public init(reading text: String) throws(ReadError) {
        let value: JSONValue
        do { value = try JSONParser.parse(Array(text.utf8)) } catch { throw ReadError(path: "$", message: "not valid JSON: \(error)") }
        try self.init(reading: value)
    }

    public init(reading value: JSONValue) throws(ReadError) {
        let root = try Self.object(value, at: "$")
        scenario = try Self.string(root, Key.scenario.rawValue, at: "$")
        objective = try Self.string(root, Key.objective.rawValue, at: "$")
        thresholds = try Self.strings(root, Key.thresholds.rawValue, at: "$")
        let held = try Self.optionalNumber(root, Key.heldPerSecond.rawValue, at: "$")
        let limit = try Self.optionalNumber(root, Key.limitedByPushSwarmAtPerSecond.rawValue, at: "$")
        guard case .array(let values)? = root[Key.steps.rawValue] else { throw ReadError(path: "$.steps", message: "expected an array") }
        var steps: [CapacityStep] = []
        for (index, value) in values.enumerated() {
            steps.append(try Self.step(value, at: "$.steps[\(index)]"))
        }
        outcome = CapacityOutcome(steps: steps, held: held, generatorLimit: limit)
        let capacity = try Self.optionalNumber(root, Key.capacityPerSecond.rawValue, at: "$")
        guard capacity == outcome.capacity else {
            throw ReadError(path: "$.capacityPerSecond", message: "must be heldPerSecond unless limitedByPushSwarmAtPerSecond is set, and null then")
        }
    }

    private static func step(_ value: JSONValue, at path: String) throws(ReadError) -> CapacityStep {
        let entry = try object(value, at: path)
        let latency = try optionalNumber(entry, StepKey.latencyMs.rawValue, at: path)
        var step = CapacityStep(
            rate: try number(entry, StepKey.rate.rawValue, at: path), sent: try count(entry, StepKey.sent.rawValue, at: path),
            latency: latency.map { UInt64(max(0, ($0 * 1_000).rounded())) }, errorRate: try number(entry, StepKey.errorRate.rawValue, at: path),
            held: try bool(entry, StepKey.held.rawValue, at: path)
        )
        step.saturated = try bool(entry, StepKey.saturated.rawValue, at: path)
        step.failedThresholds = try strings(entry, StepKey.failedThresholds.rawValue, at: path)
        switch entry[StepKey.generatorLimit.rawValue] {
        case .string(let text)?: step.generatorLimit = text
        case .null?, nil: break
        default: throw ReadError(path: "\(path).generatorLimit", message: "expected a string or null")
        }
        if let generator = entry[StepKey.generator.rawValue] {
            let health = try object(generator, at: "\(path).generator")
            let at = "\(path).generator"
            step.generator = GeneratorHealth(
                lagP99Milliseconds: try optionalNumber(health, GeneratorKey.lagP99Ms.rawValue, at: at),
                cpuBusy: try optionalNumber(health, GeneratorKey.cpuBusy.rawValue, at: at),
                shedArrivals: try count(health, GeneratorKey.shedArrivals.rawValue, at: at),
                missedStarts: try count(health, GeneratorKey.missedStarts.rawValue, at: at),
                pendingAtEnd: try count(health, GeneratorKey.pendingAtEnd.rawValue, at: at)
            )
        }
        return step
    }

    private static func object(_ value: JSONValue, at path: String) throws(ReadError) -> JSONObject {
        guard case .object(let object) = value else { throw ReadError(path: path, message: "expected an object") }
        return object
    }

    private static func string(_ object: JSONObject, _ key: String, at path: String) throws(ReadError) -> String {
        guard case .string(let text)? = object[key] else { throw ReadError(path: "\(path).\(key)", message: "expected a string") }
        return text
    }

    private static func strings(_ object: JSONObject, _ key: String, at path: String) throws(ReadError) -> [String] {
        guard case .array(let values)? = object[key] else { throw ReadError(path: "\(path).\(key)", message: "expected an array of strings") }
        var texts: [String] = []
        for value in values {
            guard case .string(let text) = value else { throw ReadError(path: "\(path).\(key)", message: "expected an array of strings") }
            texts.append(text)
        }
        return texts
    }

    private static func bool(_ object: JSONObject, _ key: String, at path: String) throws(ReadError) -> Bool {
        guard case .bool(let flag)? = object[key] else { throw ReadError(path: "\(path).\(key)", message: "expected true or false") }
        return flag
    }

    private static func number(_ object: JSONObject, _ key: String, at path: String) throws(ReadError) -> Double {
        guard case .number(let number)? = object[key], number.isFinite, number >= 0 else {
            throw ReadError(path: "\(path).\(key)", message: "expected a number, not negative")
        }
        return number
    }

    private static func optionalNumber(_ object: JSONObject, _ key: String, at path: String) throws(ReadError) -> Double? {
        if case .null? = object[key] { return nil }
        if object[key] == nil { return nil }
        return try number(object, key, at: path)
    }

    private static func count(_ object: JSONObject, _ key: String, at path: String) throws(ReadError) -> UInt64 {
        let value = try number(object, key, at: path)
        guard value == value.rounded(), value <= 9e15 else { throw ReadError(path: "\(path).\(key)", message: "expected a whole count") }
        return UInt64(value)
    }
}
