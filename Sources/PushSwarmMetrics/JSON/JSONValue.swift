import PushSwarmSystem

/// A JSON document held as a tree, with object members kept in the order they were written.
///
/// Order matters here: scenario errors name members as the user wrote them, and PushSwarm's own
/// output (summary.json) must be byte-for-byte reproducible, which a hashed dictionary would not be.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// A short English name of the value's kind, for error messages ("expected a number, found a string").
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// The member named `key` when this is an object, else nil.
    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var numberValue: Double? {
        if case .number(let value) = self { return value }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The number as an `Int` when it is a whole number an `Int` holds; nil otherwise (a peer's
    /// `1e300` or `2.5`, which `Int(_:)` would trap on or truncate).
    public var integerValue: Int? {
        numberValue.flatMap { Int(exactly: $0) }
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}

/// The members of a JSON object in document order. Lookup is linear: objects here are small.
public struct JSONObject: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public var members: [(key: String, value: JSONValue)]

    public init(_ members: [(key: String, value: JSONValue)] = []) {
        self.members = members
    }

    /// The members in byte order of their names (the canonical order of fingerprints and ledger
    /// keys); the members themselves, with no copy, when they are in that order already.
    public var sortedMembers: [(key: String, value: JSONValue)] {
        func precedes(_ a: (key: String, value: JSONValue), _ b: (key: String, value: JSONValue)) -> Bool {
            Self.precedes(a.key, b.key)
        }
        var isSorted = true
        for index in members.indices.dropFirst() where !precedes(members[index - 1], members[index]) {
            isSorted = false
            break
        }
        return isSorted ? members : members.sorted(by: precedes)
    }

    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        members = elements.map { (key: $0.0, value: $0.1) }
    }

    /// Byte order of two names: compared in place (`memcmp`-like) where both strings have their
    /// UTF-8 at hand, as native strings do, rather than one code unit at a time through a view.
    static func precedes(_ a: String, _ b: String) -> Bool {
        a.withUTF8Span { left in
            b.withUTF8Span { right in
                for index in 0..<min(left.count, right.count) where left[index] != right[index] {
                    return left[index] < right[index]
                }
                return left.count < right.count
            }
        }
    }

    public subscript(key: String) -> JSONValue? {
        get {
            for member in members where member.key == key { return member.value }
            return nil
        }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[index].value = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append((key: key, value: newValue))
            }
        }
    }

    public var keys: [String] { members.map(\.key) }
    public var isEmpty: Bool { members.isEmpty }
    public var count: Int { members.count }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral,
    ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { (key: $0.0, value: $0.1) }))
    }
    public init(nilLiteral: ()) { self = .null }
}
