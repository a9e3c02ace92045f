/// Why a line is not a record, or a format definition not a format: a case with its values.
/// `code` is stable (a test or a tool matches it); `description` is the sentence `fit` prints.
public enum AccessLogError: Error, Sendable, Equatable, CustomStringConvertible {
    // A format definition (`--log-format`, `--json-fields`).
    /// A `$` without a variable name, at a character of the definition (from 1).
    case variableWithoutName(character: Int)
    /// A `${` that is not closed.
    case unclosedBrace(character: Int)
    /// Two variables with nothing between them: nothing tells where one ends.
    case variablesTouch(String)
    /// The definition lacks what a record needs.
    case formatLacks(Need)
    /// `--json-fields` given something other than FIELD=NAME pairs.
    case fieldPair(String, fields: [String])

    // A line.
    /// The text the format puts here is missing, at a column (from 1).
    case expectedText(String, column: Int)
    /// The text the format puts after a variable never comes.
    case expectedTextAfter(String, column: Int)
    /// The line goes on past the format's end.
    case unexpectedText(column: Int)
    /// A value that is not what its variable or field holds (`$status`, `field 9 (elb_status_code)`).
    case notA(Kind, field: String, excerpt: String?)
    /// A request's start (its time less its duration) is outside the years 1970 to 9999.
    case startOutOfRange
    /// A line without the time or the status the format says it has.
    case missingTimeOrStatus
    /// A line without a field a record needs; `names`: the fields looked for.
    case missingField(Need, names: [String])
    /// A JSON line that does not parse, or is not an object.
    case notJSON(String?)
    /// A JSON time that is a number but no Unix time.
    case notUnixTime(Double)
    /// A JSON time that is neither a number nor text.
    case timeNotNumberOrText
    /// An ALB line with fewer fields than its 13.
    case tooFewFields(Int)
    /// A quoted field that is not closed, from a column.
    case unclosedQuote(column: Int)
    /// A line longer than the reader keeps.
    case lineTooLong(maximumBytes: Int)

    /// What a record needs of a format or a line.
    public enum Need: String, Sendable, CaseIterable {
        case time, clientAddress, request, status
    }

    /// What a value should have been.
    public enum Kind: String, Sendable, CaseIterable {
        case seconds, time, status, address, requestLine
    }

    /// A stable name for the case (its values left out).
    public var code: String {
        switch self {
        case .variableWithoutName: "variableWithoutName"
        case .unclosedBrace: "unclosedBrace"
        case .variablesTouch: "variablesTouch"
        case .formatLacks(let need): "formatLacks.\(need.rawValue)"
        case .fieldPair: "fieldPair"
        case .expectedText: "expectedText"
        case .expectedTextAfter: "expectedTextAfter"
        case .unexpectedText: "unexpectedText"
        case .notA(let kind, _, _): "not.\(kind.rawValue)"
        case .startOutOfRange: "startOutOfRange"
        case .missingTimeOrStatus: "missingTimeOrStatus"
        case .missingField(let need, _): "missing.\(need.rawValue)"
        case .notJSON: "notJSON"
        case .notUnixTime: "notUnixTime"
        case .timeNotNumberOrText: "timeNotNumberOrText"
        case .tooFewFields: "tooFewFields"
        case .unclosedQuote: "unclosedQuote"
        case .lineTooLong: "lineTooLong"
        }
    }

    public var description: String {
        switch self {
        case .variableWithoutName(let character): "the format has a \"$\" without a variable name at character \(character)"
        case .unclosedBrace(let character): "the format's \"${\" at character \(character) is not closed"
        case .variablesTouch(let name): "variables $\(name) and the one before it touch: nothing tells where one ends"
        case .formatLacks(.time): "the format has no time: it needs $msec, $time_iso8601 or $time_local"
        case .formatLacks(.clientAddress): "the format has no client address: it needs $remote_addr, $realip_remote_addr or $http_x_forwarded_for"
        case .formatLacks(.request): "the format has no request: it needs $request, or $request_method with $request_uri or $uri"
        case .formatLacks(.status): "the format has no $status"
        case .fieldPair(let pair, let fields): "--json-fields: expected FIELD=NAME pairs (fields: \(fields.joined(separator: ", "))), found \"\(pair)\""
        case .expectedText(let text, let column): "expected \"\(text)\" at column \(column)"
        case .expectedTextAfter(let text, let column): "expected \"\(text)\" after column \(column)"
        case .unexpectedText(let column): "unexpected text at column \(column)"
        case .notA(let kind, let field, let excerpt):
            "\(field) is not \(Self.article(kind))" + (excerpt.map { ": \"\($0)\"" } ?? "")
        case .startOutOfRange: "the request's start (its time less its duration) is outside the years 1970 to 9999"
        case .missingTimeOrStatus: "no time or status"
        case .missingField(let need, let names):
            "no \(Self.noun(need))" + (names.isEmpty ? "" : " (\(names.joined(separator: ", ")))")
        case .notJSON(let detail?): "not JSON: \(detail)"
        case .notJSON(nil): "not a JSON object"
        case .notUnixTime(let number): "the time \(number) is not a Unix time"
        case .timeNotNumberOrText: "the time is neither a number nor text"
        case .tooFewFields(let count): "an ALB line has at least 13 fields; this one has \(count)"
        case .unclosedQuote(let column): "a quoted field from column \(column) is not closed"
        case .lineTooLong(let maximum): "longer than \(maximum) bytes"
        }
    }

    private static func article(_ kind: Kind) -> String {
        switch kind {
        case .seconds: "seconds"
        case .time: "a time"
        case .status: "a status"
        case .address: "an address"
        case .requestLine: "a request line"
        }
    }

    private static func noun(_ need: Need) -> String {
        switch need {
        case .time: "time field"
        case .clientAddress: "client address"
        case .request: "request or path"
        case .status: "status"
        }
    }
}
