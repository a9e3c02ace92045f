import PushSwarmCore
import PushSwarmMetrics
import PushSwarmSystem

/// One request as a service's access log recorded it: what `pushswarm fit` reads an incident from.
public struct AccessLogRecord: Sendable, Equatable {
    /// When the request arrived, in Unix microseconds: the logged time less the request's
    /// duration where the format gives both (nginx writes its line when the request ends).
    public var startMicroseconds: Int64
    /// The client's address (a NAT address, for devices behind one), without a port.
    public var address: String
    public var method: String
    /// The request's path without its query (the URL's path where the log holds a full URL).
    public var path: String
    /// The status the client got.
    public var status: Int
    /// How long the request took, when the format says.
    public var durationMicroseconds: Int64?
    /// Whether it came over HTTP/2 (`$server_protocol`, or the protocol at the end of
    /// `$request`: "HTTP/2.0"), when the log says.
    public var http2: Bool?

    public init(startMicroseconds: Int64, address: String, method: String, path: String, status: Int, durationMicroseconds: Int64? = nil, http2: Bool? = nil) {
        self.http2 = http2
        self.startMicroseconds = startMicroseconds
        self.address = address
        self.method = method
        self.path = path
        self.status = status
        self.durationMicroseconds = durationMicroseconds
    }
}

/// The formats `fit` reads: nginx's `combined` (its default), any nginx `log_format` given by its
/// definition, JSON lines with named fields, and AWS Application Load Balancer logs.
public enum AccessLogFormat: Sendable {
    case nginx(NginxLogFormat)
    case jsonLines(JSONLogFields)
    case alb

    /// nginx's predefined `combined`.
    public static let combined = AccessLogFormat.nginx(.combined)

    /// The record one line holds (without its newline).
    public func record(_ line: Span<UInt8>) throws(AccessLogError) -> AccessLogRecord {
        let record: AccessLogRecord
        switch self {
        case .nginx(let format): record = try format.record(line)
        case .jsonLines(let fields): record = try fields.record(line)
        case .alb: record = try ALBLog.record(line)
        }
        // A scenario's calendar runs from 1970 to 9999: a start outside it (a duration longer
        // than the time it is taken from) once reached the fitted scenario and failed there.
        guard Self.startRange.contains(record.startMicroseconds) else {
            throw AccessLogError.startOutOfRange
        }
        return record
    }

    /// Unix microseconds from 1970-01-01 to the end of 9999.
    static let startRange: ClosedRange<Int64> = 0...253_402_300_799_999_999
}

/// A value read out of a line, and the parts of a request line (`GET /path?query HTTP/1.1`).
public enum LogValues {
    /// The start of a line or a value as a message quotes it: at most 80 bytes, printable.
    static func excerpt(_ text: Span<UInt8>) -> String {
        printable(String(decodingUTF8: text.extracting(..<min(text.count, 80))))
    }

    /// `text` with its control characters (C0, DEL, C1: a terminal's escapes, bells, NULs) written
    /// as `\u{1B}`: what a log holds is printed, never obeyed by the terminal.
    public static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    /// `text` as a count from a log: digits only (no sign), within `maximum`.
    static func whole(_ text: Span<UInt8>, maximum: Int = 1 << 53) -> Int? {
        guard !text.isEmpty, text.count <= 16 else { return nil }
        var value = 0
        for index in 0..<text.count {
            let byte = text[index]
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value <= maximum ? value : nil
    }

    /// Seconds with an optional fraction (`1764180000.123`, `0.005`) as microseconds; nil for
    /// anything else (a sign, an exponent, `-`, more than 12 digits before the point).
    static func seconds(_ text: Span<UInt8>) -> Int64? {
        var point = text.count
        for index in 0..<text.count where text[index] == UInt8(ascii: ".") {
            point = index
            break
        }
        guard point > 0, point <= 12, let whole = whole(text.extracting(..<point)) else { return nil }
        var micros: Int64 = 0
        var scale: Int64 = 100_000
        if point < text.count {
            let fraction = text.extracting((point + 1)...)
            guard !fraction.isEmpty, fraction.count <= 9 else { return nil }
            for index in 0..<fraction.count {
                let byte = fraction[index]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                micros += Int64(byte - 0x30) * scale
                scale /= 10
            }
        }
        return Int64(whole) * 1_000_000 + micros
    }

    private static let months: [[UInt8]] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].map { Array($0.utf8) }

    /// nginx's `$time_local` (`26/Nov/2026:18:00:00 +0300`) as Unix microseconds.
    static func timeLocal(_ text: Span<UInt8>) -> Int64? {
        guard text.count == 26, text[2] == UInt8(ascii: "/"), text[6] == UInt8(ascii: "/"), text[11] == UInt8(ascii: ":"),
            text[14] == UInt8(ascii: ":"), text[17] == UInt8(ascii: ":"), text[20] == UInt8(ascii: " "),
            let day = whole(text.extracting(0..<2)), let year = whole(text.extracting(7..<11)),
            let hour = whole(text.extracting(12..<14)), let minute = whole(text.extracting(15..<17)), let second = whole(text.extracting(18..<20)),
            let offsetHours = whole(text.extracting(22..<24)), let offsetMinutes = whole(text.extracting(24..<26)),
            text[21] == UInt8(ascii: "+") || text[21] == UInt8(ascii: "-")
        else { return nil }
        let name = text.extracting(3..<6)
        guard let month = months.firstIndex(where: { $0.span.bytesEqual(name) }).map({ $0 + 1 }),
            day >= 1, day <= 31, hour < 24, minute < 60, second <= 60, offsetHours < 24, offsetMinutes < 60
        else { return nil }
        let offset = (offsetHours * 3_600 + offsetMinutes * 60) * (text[21] == UInt8(ascii: "-") ? -1 : 1)
        let days = RFC3339.days(fromCivil: year, month, day)
        let local = days * 86_400 + Int64(hour * 3_600 + minute * 60 + second)
        return (local - Int64(offset)) * 1_000_000
    }

    /// A time as logs write it: Unix seconds with a fraction (`$msec`), RFC 3339 / ISO 8601
    /// (`$time_iso8601`, ALB's), or `$time_local`.
    static func anyTime(_ text: Span<UInt8>) -> Int64? {
        if let microseconds = seconds(text) { return microseconds }
        if let microseconds = RFC3339.parse(utf8: text) { return microseconds }
        return timeLocal(text)
    }

    /// A request line's method and path (query and any scheme and host dropped); nil when it is
    /// not `METHOD TARGET[ PROTOCOL]`.
    /// Whether a protocol as nginx logs it (`HTTP/2.0`, `HTTP/1.1`) is HTTP/2; nil for anything
    /// else (`-`, a request line without one).
    static func isHTTP2(_ text: Span<UInt8>) -> Bool? {
        let prefix = Array("HTTP/".utf8)
        guard text.count > prefix.count, text.extracting(0..<prefix.count).bytesEqual(prefix.span) else { return nil }
        return text[prefix.count] == UInt8(ascii: "2") ? true : (text[prefix.count] == UInt8(ascii: "1") ? false : nil)
    }

    /// The protocol at the end of a request line (`POST /events HTTP/2.0`), nil without one.
    static func requestProtocol(_ text: Span<UInt8>) -> Bool? {
        var last = -1
        for index in 0..<text.count where text[index] == UInt8(ascii: " ") { last = index }
        guard last > 0, last + 1 < text.count else { return nil }
        return isHTTP2(text.extracting((last + 1)...))
    }

    static func request(_ text: Span<UInt8>) -> (method: String, path: String)? {
        var space = -1
        for index in 0..<text.count where text[index] == UInt8(ascii: " ") {
            space = index
            break
        }
        guard space > 0 else { return nil }
        var end = text.count
        for index in (space + 1)..<text.count where text[index] == UInt8(ascii: " ") {
            end = index
            break
        }
        guard end > space + 1 else { return nil }
        let method = text.extracting(..<space)
        for index in 0..<method.count where !(method[index] >= UInt8(ascii: "A") && method[index] <= UInt8(ascii: "Z")) { return nil }
        return (String(decodingUTF8: method), path(ofTarget: text.extracting((space + 1)..<end)))
    }

    /// The path of a request target: `/a/b?c` → `/a/b`; `https://host:443/a?b` → `/a`.
    static func path(ofTarget target: Span<UInt8>) -> String {
        var start = 0
        if target.count > 0, target[0] != UInt8(ascii: "/") {
            // An absolute URL (a proxy's or a load balancer's log): its path starts at the first
            // slash after "//".
            var index = 0
            while index + 1 < target.count, !(target[index] == UInt8(ascii: "/") && target[index + 1] == UInt8(ascii: "/")) { index += 1 }
            index += 2
            while index < target.count, target[index] != UInt8(ascii: "/") { index += 1 }
            start = min(index, target.count)
        }
        var end = target.count
        for index in start..<target.count where target[index] == UInt8(ascii: "?") || target[index] == UInt8(ascii: "#") {
            end = index
            break
        }
        return start < end ? String(decodingUTF8: target.extracting(start..<end)) : "/"
    }

    /// A client address as logs write it: `1.2.3.4`, `1.2.3.4:5678` (ALB), `[::1]:5678`, or an
    /// `X-Forwarded-For` list (`1.2.3.4, 10.0.0.1`: the first is the client).
    static func address(_ text: Span<UInt8>) -> String? {
        var end = text.count
        for index in 0..<text.count where text[index] == UInt8(ascii: ",") {
            end = index
            break
        }
        var value = text.extracting(..<end)
        while !value.isEmpty, value[value.count - 1] == UInt8(ascii: " ") { value = value.extracting(..<(value.count - 1)) }
        guard !value.isEmpty, !(value.count == 1 && value[0] == UInt8(ascii: "-")) else { return nil }
        if value[0] == UInt8(ascii: "[") {
            // [IPv6]:port
            for index in 1..<value.count where value[index] == UInt8(ascii: "]") {
                return index > 1 ? String(decodingUTF8: value.extracting(1..<index)) : nil
            }
            return nil
        }
        var colons = 0
        var lastColon = -1
        for index in 0..<value.count where value[index] == UInt8(ascii: ":") {
            colons += 1
            lastColon = index
        }
        // One colon: IPv4 with a port. More: an IPv6 address as it stands.
        if colons == 1 { value = value.extracting(..<lastColon) }
        return value.isEmpty ? nil : String(decodingUTF8: value)
    }
}

/// An nginx `log_format` definition, compiled: literal text and variables in order. A line is
/// read by matching each literal in turn; a variable's value runs to where the next literal
/// begins (nginx escapes a `"` inside a value as `\x22`, so a quoted value ends at its quote).
///
/// Variables read: `$remote_addr`, `$http_x_forwarded_for`, `$realip_remote_addr` (the client);
/// `$msec`, `$time_iso8601`, `$time_local` (the time; the most precise one given is used);
/// `$request`, or `$request_method` with `$request_uri` or `$uri`; `$status`; `$request_time`.
/// Any other variable is passed over.
public struct NginxLogFormat: Sendable {
    enum Variable: Sendable, Equatable {
        case remoteAddr, forwardedFor, timeLocal, timeISO8601, msec, request, method, requestURI, status, requestTime, serverProtocol
        case other
    }

    enum Token: Sendable {
        case literal([UInt8])
        case variable(Variable)
    }

    let tokens: [Token]
    public let definition: String

    /// nginx's predefined format.
    public static let combined = try! NginxLogFormat(
        #"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent""#)

    /// Compiles `definition` (what follows the format's name in `log_format`, quotes removed and
    /// its pieces joined). Throws when it lacks a time, a client address, the request or the
    /// status, or when two variables touch (no text between them to tell where one ends).
    public init(_ definition: String) throws(AccessLogError) {
        self.definition = definition
        var tokens: [Token] = []
        var literal: [UInt8] = []
        let bytes = Array(definition.utf8)
        var index = 0
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "$") else {
                literal.append(bytes[index])
                index += 1
                continue
            }
            var start = index + 1
            var braced = false
            if start < bytes.count, bytes[start] == UInt8(ascii: "{") {
                braced = true
                start += 1
            }
            var end = start
            while end < bytes.count, Self.isNameByte(bytes[end]) { end += 1 }
            guard end > start else { throw AccessLogError.variableWithoutName(character: index + 1) }
            if braced {
                guard end < bytes.count, bytes[end] == UInt8(ascii: "}") else { throw AccessLogError.unclosedBrace(character: index + 1) }
            }
            if !literal.isEmpty {
                tokens.append(.literal(literal))
                literal = []
            } else if case .variable? = tokens.last {
                throw AccessLogError.variablesTouch(String(decoding: bytes[start..<end], as: UTF8.self))
            }
            tokens.append(.variable(Self.variable(String(decoding: bytes[start..<end], as: UTF8.self))))
            index = braced ? end + 1 : end
        }
        if !literal.isEmpty { tokens.append(.literal(literal)) }
        let variables = tokens.compactMap { token -> Variable? in if case .variable(let variable) = token { variable } else { nil } }
        guard variables.contains(where: { [.msec, .timeISO8601, .timeLocal].contains($0) }) else {
            throw AccessLogError.formatLacks(.time)
        }
        guard variables.contains(where: { [.remoteAddr, .forwardedFor].contains($0) }) else {
            throw AccessLogError.formatLacks(.clientAddress)
        }
        guard variables.contains(.request) || (variables.contains(.method) && variables.contains(.requestURI)) else {
            throw AccessLogError.formatLacks(.request)
        }
        guard variables.contains(.status) else { throw AccessLogError.formatLacks(.status) }
        self.tokens = tokens
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
    }

    private static func variable(_ name: String) -> Variable {
        switch name {
        case "remote_addr", "realip_remote_addr": .remoteAddr
        case "http_x_forwarded_for": .forwardedFor
        case "time_local": .timeLocal
        case "time_iso8601": .timeISO8601
        case "msec": .msec
        case "request": .request
        case "request_method": .method
        case "request_uri", "uri": .requestURI
        case "status": .status
        case "request_time": .requestTime
        case "server_protocol": .serverProtocol
        default: .other
        }
    }

    func record(_ line: Span<UInt8>) throws(AccessLogError) -> AccessLogRecord {
        var index = 0
        var address: String?
        var forwarded: String?
        var time: Int64?
        var timePrecision = 0
        var request: (method: String, path: String)?
        var method: String?
        var uri: String?
        var status: Int?
        var duration: Int64?
        var http2: Bool?
        for (place, token) in tokens.enumerated() {
            switch token {
            case .literal(let text):
                guard index + text.count <= line.count, line.extracting(index..<(index + text.count)).bytesEqual(text.span) else {
                    throw AccessLogError.expectedText(String(decoding: text, as: UTF8.self), column: index + 1)
                }
                index += text.count
            case .variable(let variable):
                var end = line.count
                if place + 1 < tokens.count, case .literal(let next) = tokens[place + 1] {
                    guard let found = Self.find(next, in: line, from: index) else {
                        throw AccessLogError.expectedTextAfter(String(decoding: next, as: UTF8.self), column: index + 1)
                    }
                    end = found
                }
                let value = line.extracting(index..<end)
                index = end
                let isDash = value.count == 1 && value[0] == UInt8(ascii: "-")
                switch variable {
                case .remoteAddr: address = LogValues.address(value)
                case .forwardedFor: forwarded = LogValues.address(value)
                case .msec:
                    guard let seconds = LogValues.seconds(value) else { throw AccessLogError.notA(.seconds, field: "$msec", excerpt: LogValues.excerpt(value)) }
                    time = seconds
                    timePrecision = 3
                case .timeISO8601:
                    guard let parsed = RFC3339.parse(utf8: value) else { throw AccessLogError.notA(.time, field: "$time_iso8601", excerpt: LogValues.excerpt(value)) }
                    if timePrecision < 2 { time = parsed; timePrecision = 2 }
                case .timeLocal:
                    guard let parsed = LogValues.timeLocal(value) else { throw AccessLogError.notA(.time, field: "$time_local", excerpt: LogValues.excerpt(value)) }
                    if timePrecision < 1 { time = parsed; timePrecision = 1 }
                case .request:
                    request = LogValues.request(value) ?? ("", isDash ? "" : LogValues.excerpt(value))
                    if http2 == nil { http2 = LogValues.requestProtocol(value) }
                case .serverProtocol: http2 = LogValues.isHTTP2(value)
                case .method: method = isDash ? nil : String(decodingUTF8: value)
                case .requestURI: uri = isDash ? nil : LogValues.path(ofTarget: value)
                case .status:
                    guard let code = LogValues.whole(value, maximum: 999), code >= 100 else { throw AccessLogError.notA(.status, field: "$status", excerpt: LogValues.excerpt(value)) }
                    status = code
                case .requestTime:
                    if !isDash {
                        guard let seconds = LogValues.seconds(value) else { throw AccessLogError.notA(.seconds, field: "$request_time", excerpt: LogValues.excerpt(value)) }
                        duration = seconds
                    }
                case .other: break
                }
            }
        }
        guard index == line.count else { throw AccessLogError.unexpectedText(column: index + 1) }
        guard let time, let status else { throw AccessLogError.missingTimeOrStatus }
        guard let client = address ?? forwarded else { throw AccessLogError.missingField(.clientAddress, names: []) }
        let (requestMethod, path) = request ?? (method ?? "", uri ?? "")
        return AccessLogRecord(
            startMicroseconds: time - (duration ?? 0), address: client, method: requestMethod, path: path, status: status, durationMicroseconds: duration, http2: http2
        )
    }

    private static func find(_ needle: [UInt8], in line: Span<UInt8>, from start: Int) -> Int? {
        guard let first = needle.first, line.count >= needle.count else { return nil }
        var index = start
        while index + needle.count <= line.count {
            if line[index] == first, line.extracting(index..<(index + needle.count)).bytesEqual(needle.span) { return index }
            index += 1
        }
        return nil
    }
}
