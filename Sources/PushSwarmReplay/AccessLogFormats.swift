import PushSwarmCore
import PushSwarmMetrics
import PushSwarmSystem

/// JSON lines (one object a line, as nginx's `escape=json` formats, Caddy, Envoy and most log
/// shippers write them), by the names of their fields. Each field has names it is looked for by
/// when none is given (`time`, `msec`, `@timestamp`…); `fit --json-fields time=ts,address=ip`
/// names them. A time is Unix seconds (a number, or text with a fraction; milliseconds and
/// microseconds told by size), RFC 3339, or nginx's `$time_local`.
public struct JSONLogFields: Sendable {
    public enum Field: String, CaseIterable, Sendable {
        case time, address, request, method, path, status, duration
    }

    /// The names each field is looked for by, in order.
    public private(set) var names: [Field: [String]] = [
        .time: ["msec", "time", "timestamp", "@timestamp", "ts", "time_iso8601", "time_local", "start_time"],
        .address: ["remote_addr", "client_ip", "remote_ip", "ip", "client", "realip_remote_addr", "http_x_forwarded_for"],
        .request: ["request"],
        .method: ["method", "request_method"],
        .path: ["path", "uri", "request_uri", "url"],
        .status: ["status", "status_code", "code", "response_code"],
        .duration: ["request_time", "duration", "latency", "response_time"],
    ]

    public init() {}

    /// `time=ts,address=ip`: the given fields by those names alone.
    public init(parsing text: String) throws(AccessLogError) {
        for pair in text.split(separator: ",", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingSpaces }
            guard parts.count == 2, !parts[1].isEmpty, let field = Field(rawValue: parts[0]) else {
                throw AccessLogError.fieldPair(String(pair), fields: Field.allCases.map(\.rawValue))
            }
            names[field] = [parts[1]]
        }
    }

    func record(_ line: Span<UInt8>) throws(AccessLogError) -> AccessLogRecord {
        let parsed: JSONFields?
        do {
            parsed = try JSONFields.parse(Array(decodingSpan: line))
        } catch {
            throw AccessLogError.notJSON("\(error)")
        }
        guard let fields = parsed else { throw AccessLogError.notJSON(nil) }
        func first(_ field: Field) -> JSONFields.Value? {
            for name in names[field] ?? [] {
                if let value = fields[name], !Self.isEmpty(value, in: fields) { return value }
            }
            return nil
        }
        func text(_ value: JSONFields.Value?) -> String? {
            if case .string(let text)? = value { return fields.text(text) }
            return nil
        }
        guard let timeValue = first(.time) else { throw AccessLogError.missingField(.time, names: names[.time] ?? []) }
        let time: Int64
        switch timeValue {
        case .number(let number):
            guard let microseconds = Self.microseconds(unixTime: number) else { throw AccessLogError.notUnixTime(number) }
            time = microseconds
        case .string(let string):
            guard let microseconds = fields.withUTF8(string, { LogValues.anyTime($0) }) else { throw AccessLogError.notA(.time, field: "the time", excerpt: fields.text(string)) }
            time = microseconds
        default: throw AccessLogError.timeNotNumberOrText
        }
        guard let addressText = text(first(.address)), let address = addressText.withUTF8Span({ LogValues.address($0) }) else {
            throw AccessLogError.missingField(.clientAddress, names: names[.address] ?? [])
        }
        let status: Int
        switch first(.status) {
        case .number(let number)? where number == number.rounded() && number >= 100 && number <= 999: status = Int(number)
        case .string(let string)?:
            guard let code = fields.withUTF8(string, { LogValues.whole($0, maximum: 999) }), code >= 100 else { throw AccessLogError.notA(.status, field: "the status", excerpt: nil) }
            status = code
        default: throw AccessLogError.missingField(.status, names: names[.status] ?? [])
        }
        var method = text(first(.method)) ?? ""
        var path: String
        if let target = text(first(.path)) {
            path = target.withUTF8Span { LogValues.path(ofTarget: $0) }
        } else if let request = text(first(.request)), let parts = request.withUTF8Span({ LogValues.request($0) }) {
            method = method.isEmpty ? parts.method : method
            path = parts.path
        } else {
            throw AccessLogError.missingField(.request, names: names[.request] ?? [] + (names[.path] ?? []))
        }
        if path.isEmpty { path = "/" }
        var duration: Int64?
        switch first(.duration) {
        case .number(let seconds)? where seconds >= 0 && seconds < 1e6: duration = Int64((seconds * 1_000_000).rounded())
        case .string(let string)?: duration = fields.withUTF8(string) { LogValues.seconds($0) }
        default: duration = nil
        }
        return AccessLogRecord(startMicroseconds: time - (duration ?? 0), address: address, method: method, path: path, status: status, durationMicroseconds: duration)
    }

    /// Unix seconds, milliseconds or microseconds (told by size: logs of this century) as
    /// microseconds.
    static func microseconds(unixTime number: Double) -> Int64? {
        guard number.isFinite, number > 0 else { return nil }
        if number < 1e11 { return Int64((number * 1_000_000).rounded()) }
        if number < 1e14 { return Int64((number * 1_000).rounded()) }
        if number < 1e17 { return Int64(number.rounded()) }
        return nil
    }

    private static func isEmpty(_ value: JSONFields.Value, in fields: JSONFields) -> Bool {
        switch value {
        case .null: true
        case .string(let text): text.content.isEmpty || fields.text(text, equals: "-")
        default: false
        }
    }

}

/// AWS Application Load Balancer access logs: space-separated fields, some quoted, in the order
/// AWS documents (`type time elb client:port target:port request_processing_time
/// target_processing_time response_processing_time elb_status_code target_status_code
/// received_bytes sent_bytes "request" …`, then `request_creation_time` as field 22). The status
/// is the one the client got (`elb_status_code`); the start is `request_creation_time` where the
/// line has it, else `time` less the three processing times.
enum ALBLog {
    static func record(_ line: Span<UInt8>) throws(AccessLogError) -> AccessLogRecord {
        let fields = try split(line)
        guard fields.count >= 13 else { throw AccessLogError.tooFewFields(fields.count) }
        guard let time = RFC3339.parse(utf8: line.extracting(fields[1])) else { throw AccessLogError.notA(.time, field: "field 2 (time)", excerpt: nil) }
        guard let address = LogValues.address(line.extracting(fields[3])) else { throw AccessLogError.notA(.address, field: "field 4 (client:port)", excerpt: nil) }
        guard let status = LogValues.whole(line.extracting(fields[8]), maximum: 999), status >= 100 else { throw AccessLogError.notA(.status, field: "field 9 (elb_status_code)", excerpt: nil) }
        guard let request = LogValues.request(line.extracting(fields[12])) else { throw AccessLogError.notA(.requestLine, field: "field 13 (request)", excerpt: nil) }
        var duration: Int64 = 0
        for index in 5...7 {
            if let seconds = LogValues.seconds(line.extracting(fields[index])) { duration += seconds }
        }
        var start = time - duration
        if fields.count > 21, let created = RFC3339.parse(utf8: line.extracting(fields[21])) { start = created }
        return AccessLogRecord(startMicroseconds: start, address: address, method: request.method, path: request.path, status: status, durationMicroseconds: duration)
    }

    /// The fields' ranges: runs of non-spaces, or quoted runs (quotes dropped; `\"` inside kept).
    static func split(_ line: Span<UInt8>) throws(AccessLogError) -> [Range<Int>] {
        var fields: [Range<Int>] = []
        var index = 0
        while index < line.count {
            if line[index] == UInt8(ascii: " ") {
                index += 1
                continue
            }
            if line[index] == UInt8(ascii: "\"") {
                let start = index + 1
                var end = start
                while end < line.count, line[end] != UInt8(ascii: "\"") { end += line[end] == UInt8(ascii: "\\") ? 2 : 1 }
                guard end < line.count else { throw AccessLogError.unclosedQuote(column: index + 1) }
                fields.append(start..<end)
                index = end + 1
            } else {
                let start = index
                while index < line.count, line[index] != UInt8(ascii: " ") { index += 1 }
                fields.append(start..<index)
            }
        }
        return fields
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
