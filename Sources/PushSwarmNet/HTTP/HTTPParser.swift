public import PushSwarmCore
import PushSwarmSystem

/// One parsed HTTP/1.x message head and body.
public struct HTTPMessage: Sendable {
    /// Request: method, target, version. Response: version, status code, reason phrase.
    public var startLine: (String, String, String)
    public var headers: [Header]
    public var body: [UInt8]
    /// Whether the connection may carry another message after this one.
    public var keepAlive: Bool

    /// For a response: an interim answer (1xx other than 101 Switching Protocols), which a client
    /// skips before the final one (RFC 9110 section 15.2).
    public var isInterim: Bool {
        startLine.1.utf8.count == 3 && startLine.1.utf8.first == UInt8(ascii: "1") && startLine.1 != "101"
    }

    /// The first value of the header called `name` (lowercase), compared case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.isASCII(caseInsensitivelyEqualTo: name) }?.value
    }
}

/// Why input is not HTTP this side can accept, with the status a server answers.
public struct HTTPParseError: Error, Sendable, Equatable {
    public var status: Int
    public var reason: String
}

/// An incremental HTTP/1.1 parser for one connection's byte stream: requests (servers) or
/// responses (clients). Content-Length and chunked bodies; responses without either end at EOF.
///
/// RFC 9112 rules it follows: a message with both Transfer-Encoding and Content-Length is refused
/// (section 6.3, request smuggling); differing Content-Length values are refused; header names
/// must be tokens with no space before the colon (section 5.1); obsolete line folding is refused.
public struct HTTPParser: Sendable {
    public enum Kind: Sendable { case request, response }

    public struct Limits: Sendable {
        public var maxHeaderBytes: Int
        public var maxBodyBytes: Int

        public init(maxHeaderBytes: Int = 16_384, maxBodyBytes: Int = 1 << 20) {
            self.maxHeaderBytes = maxHeaderBytes
            self.maxBodyBytes = maxBodyBytes
        }
    }

    private enum BodyMode { case none, length(Int), chunked, untilClose }
    private enum State {
        case head
        case body(HTTPMessage, BodyMode)
        /// Chunked: waiting for a size line; `remaining` > 0: inside a chunk.
        case chunk(HTTPMessage, remaining: Int)
        case chunkEnd(HTTPMessage)
        case trailers(HTTPMessage)
    }

    public let kind: Kind
    public let limits: Limits
    private var buffer: [UInt8] = []
    private var start = 0
    private var scanFrom = 0
    private var state = State.head
    /// Responses to HEAD carry no body; the client sets this before each response.
    public var expectingHeadResponse = false
    /// The last message's header fields: a field the next message repeats byte for byte at the
    /// same place is that same `Header`, shared, not new strings. A service sends the same fields
    /// on every answer but its Date (once a second): 2.7 string allocations a response before.
    private var lastHeaders: [Header] = []

    public init(kind: Kind, limits: Limits = Limits()) {
        self.kind = kind
        self.limits = limits
    }

    /// Bytes received but not yet part of a returned message.
    public var bufferedCount: Int { buffer.count - start }
    /// True between messages with nothing buffered.
    public var isIdle: Bool {
        if case .head = state { return bufferedCount == 0 }
        return false
    }

    public mutating func append(_ bytes: Span<UInt8>) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            scanFrom = 0
            start = 0
        }
        buffer.append(bytes)
    }

    public mutating func append(_ bytes: [UInt8]) {
        append(bytes.span)
    }

    /// Takes bytes left after the last message (a WebSocket's first frames after its handshake).
    public mutating func takeRemainder() -> [UInt8] {
        let rest = Array(buffer[start...])
        buffer.removeAll()
        start = 0
        scanFrom = 0
        return rest
    }

    /// The next complete message, nil when more bytes are needed.
    public mutating func next() throws(HTTPParseError) -> HTTPMessage? {
        while true {
            switch state {
            case .head:
                guard let message = try parseHead() else { return nil }
                let mode = try bodyMode(of: message)
                switch mode {
                case .none: return message
                default: state = .body(message, mode)
                }
            case .body(var message, let mode):
                switch mode {
                case .none:
                    state = .head
                    return message
                case .length(let length):
                    guard bufferedCount >= length else { return nil }
                    message.body = Array(buffer[start..<start + length])
                    consume(length)
                    state = .head
                    return message
                case .chunked:
                    state = .chunk(message, remaining: 0)
                case .untilClose:
                    guard bufferedCount <= limits.maxBodyBytes else {
                        throw HTTPParseError(status: 413, reason: "body over \(limits.maxBodyBytes) bytes")
                    }
                    return nil
                }
            case .chunk(var message, let remaining):
                if remaining > 0 {
                    let take = min(remaining, bufferedCount)
                    guard take > 0 else { return nil }
                    message.body.append(contentsOf: buffer[start..<start + take])
                    consume(take)
                    state = remaining - take == 0 ? .chunkEnd(message) : .chunk(message, remaining: remaining - take)
                    if remaining - take > 0 { return nil }
                    continue
                }
                guard let line = try takeLine(limit: 1024) else { return nil }
                let sizeText = line.split(separator: ";", maxSplits: 1).first.map { $0.trimmingSpaces() } ?? ""
                // RFC 9112 section 7.1: "chunk-size = 1*HEXDIG", so no sign (`Int(_:radix:)` would
                // take "-1" and then wait for ever). The size is a peer's number: it is compared
                // with what the limit leaves, never added to the body's length (which overflowed).
                guard !sizeText.isEmpty, sizeText.count <= 16, sizeText.allSatisfy(\.isASCIIHexDigit),
                    let size = Int(sizeText, radix: 16)
                else {
                    throw HTTPParseError(status: 400, reason: "bad chunk size line")
                }
                guard size <= limits.maxBodyBytes - message.body.count else {
                    throw HTTPParseError(status: 413, reason: "body over \(limits.maxBodyBytes) bytes")
                }
                state = size == 0 ? .trailers(message) : .chunk(message, remaining: size)
            case .chunkEnd(let message):
                guard let line = try takeLine(limit: 2) else { return nil }
                guard line.isEmpty else { throw HTTPParseError(status: 400, reason: "chunk not followed by CRLF") }
                state = .chunk(message, remaining: 0)
            case .trailers(let message):
                guard let line = try takeLine(limit: limits.maxHeaderBytes) else { return nil }
                if line.isEmpty {
                    state = .head
                    return message
                }
            }
        }
    }

    /// The message whose body ends with the connection (a response without a length), if any.
    public mutating func finishAtEOF() -> HTTPMessage? {
        guard case .body(var message, .untilClose) = state else { return nil }
        message.body = Array(buffer[start...])
        consume(bufferedCount)
        state = .head
        message.keepAlive = false
        return message
    }

    // MARK: head

    private mutating func parseHead() throws(HTTPParseError) -> HTTPMessage? {
        // Tolerate blank lines before a request (RFC 9112 section 2.2).
        while kind == .request, bufferedCount >= 2, buffer[start] == 13, buffer[start + 1] == 10 { consume(2) }
        guard let end = findHeadEnd() else {
            if bufferedCount > limits.maxHeaderBytes {
                throw HTTPParseError(status: 431, reason: "header section over \(limits.maxHeaderBytes) bytes")
            }
            return nil
        }
        guard end - start <= limits.maxHeaderBytes else {
            throw HTTPParseError(status: 431, reason: "header section over \(limits.maxHeaderBytes) bytes")
        }
        let headStart = start
        let kind = self.kind
        let (startLine, headers, connection) = try Self.parseLines(buffer.span, from: headStart, to: end, kind: kind, last: lastHeaders)
        lastHeaders = headers
        // Only now: consuming may reset the buffer the lines above point into.
        consume(end + 4 - start)
        let version = kind == .request ? startLine.2 : startLine.0
        let keepAlive: Bool
        if connection.isEmpty {
            keepAlive = version != "HTTP/1.0"
        } else if connection == "keep-alive" {
            keepAlive = true
        } else {
            let options = connection.split(separator: ",").map { $0.trimmingSpaces() }
            keepAlive = version == "HTTP/1.0" ? options.contains("keep-alive") : !options.contains("close")
        }
        return HTTPMessage(startLine: startLine, headers: headers, body: [], keepAlive: keepAlive)
    }

    /// The start line and header fields of a head in `bytes[from..<to]`; lines end in CRLF (a bare
    /// LF is tolerated, RFC 9112 section 2.2).
    private static func parseLines(
        _ bytes: Span<UInt8>, from headStart: Int, to end: Int, kind: Kind, last: [Header]
    ) throws(HTTPParseError) -> ((String, String, String), [Header], String) {
        let badStatus = kind == .request ? 400 : 502
        var firstEnd = headStart
        while firstEnd < end && bytes[firstEnd] != 10 { firstEnd += 1 }
        var lineEnd = firstEnd
        if lineEnd > headStart && bytes[lineEnd - 1] == 13 { lineEnd -= 1 }
        guard lineEnd > headStart else { throw HTTPParseError(status: badStatus, reason: "empty start line") }
        // The first two spaces split the start line into its three parts.
        var firstSpace = -1
        var secondSpace = -1
        for position in headStart..<lineEnd {
            let byte = bytes[position]
            guard byte >= 32 && byte < 127 else {
                throw HTTPParseError(status: badStatus, reason: "control or non-ASCII bytes in the start line")
            }
            if byte == 32 {
                if firstSpace < 0 { firstSpace = position } else if secondSpace < 0 { secondSpace = position }
            }
        }
        func text(_ range: Range<Int>) -> String {
            String(decodingUTF8: bytes.extracting(range))
        }
        let startLine: (String, String, String)
        switch kind {
        case .request:
            guard secondSpace > 0, firstSpace > headStart, secondSpace > firstSpace + 1 else {
                throw HTTPParseError(status: 400, reason: "malformed request line")
            }
            let method = text(headStart..<firstSpace)
            let version = text((secondSpace + 1)..<lineEnd)
            guard method.utf8.allSatisfy({ isToken($0) }), version == "HTTP/1.1" || version == "HTTP/1.0" else {
                throw HTTPParseError(status: 400, reason: "malformed request line")
            }
            startLine = (method, text((firstSpace + 1)..<secondSpace), version)
        case .response:
            // RFC 9110 section 15: "three-digit integer code", "All valid status codes are within
            // the range of 100 to 599": a 600 or a 099 is a malformed answer, not a status.
            let codeEnd = secondSpace > 0 ? secondSpace : lineEnd
            guard firstSpace > 0, codeEnd - firstSpace == 4,
                  (firstSpace + 1..<codeEnd).allSatisfy({ bytes[$0] >= 48 && bytes[$0] <= 57 }),
                  bytes[firstSpace + 1] >= UInt8(ascii: "1"), bytes[firstSpace + 1] <= UInt8(ascii: "5")
            else { throw HTTPParseError(status: 502, reason: "malformed status line") }
            let version = text(headStart..<firstSpace)
            guard version.hasPrefix("HTTP/1.") else { throw HTTPParseError(status: 502, reason: "malformed status line") }
            startLine = (version, text((firstSpace + 1)..<codeEnd), secondSpace > 0 ? text((codeEnd + 1)..<lineEnd) : "")
        }
        var headers: [Header] = []
        headers.reserveCapacity(8)
        var connection = ""
        var lineStart = firstEnd + 1
        while lineStart < end {
            var next = lineStart
            while next < end && bytes[next] != 10 { next += 1 }
            var lineStop = next
            if lineStop > lineStart && bytes[lineStop - 1] == 13 { lineStop -= 1 }
            var colon = lineStart
            while colon < lineStop && bytes[colon] != 58 {
                guard isToken(bytes[colon]) else {
                    throw HTTPParseError(status: badStatus, reason: "invalid header name")
                }
                colon += 1
            }
            guard colon < lineStop else { throw HTTPParseError(status: badStatus, reason: "header line without a colon") }
            guard colon > lineStart else { throw HTTPParseError(status: badStatus, reason: "empty header name") }
            var valueStart = colon + 1
            var valueEnd = lineStop
            while valueStart < valueEnd && (bytes[valueStart] == 32 || bytes[valueStart] == 9) { valueStart += 1 }
            while valueEnd > valueStart && (bytes[valueEnd - 1] == 32 || bytes[valueEnd - 1] == 9) { valueEnd -= 1 }
            for position in valueStart..<valueEnd {
                let byte = bytes[position]
                if (byte < 32 && byte != 9) || byte == 127 {
                    throw HTTPParseError(status: badStatus, reason: "control bytes in a header value")
                }
            }
            let header: Header
            if headers.count < last.count, Self.repeats(last[headers.count], in: bytes, name: lineStart..<colon, value: valueStart..<valueEnd) {
                header = last[headers.count]
            } else {
                header = Header(text(lineStart..<colon), text(valueStart..<valueEnd))
            }
            if header.name.isASCII(caseInsensitivelyEqualTo: "connection") { connection = header.value.lowercased() }
            headers.append(header)
            lineStart = next + 1
        }
        return (startLine, headers, connection)
    }

    /// Whether `header` is the field whose name and value are `bytes[name]` and `bytes[value]`.
    private static func repeats(_ header: Header, in bytes: Span<UInt8>, name: Range<Int>, value: Range<Int>) -> Bool {
        header.name.utf8.count == name.count && header.value.utf8.count == value.count
            && header.name.withUTF8Span { $0.bytesEqual(bytes.extracting(name)) }
            && header.value.withUTF8Span { $0.bytesEqual(bytes.extracting(value)) }
    }

    /// A value of 1 to 18 ASCII digits and nothing else (the common Content-Length), without
    /// making a String; nil for anything else, which the general path then judges.
    static func plainDecimal(_ text: String) -> Int? {
        var value = 0
        var count = 0
        for byte in text.utf8 {
            guard byte >= 48 && byte <= 57, count < 18 else { return nil }
            value = value * 10 + Int(byte - 48)
            count += 1
        }
        return count > 0 ? value : nil
    }

    /// RFC 9110 `tchar`: `!#$%&'*+-.^_`|~`, digits and letters. Two 64-bit masks, no table.
    @inline(__always)
    static func isToken(_ byte: UInt8) -> Bool {
        // Bits 33...63: ! # $ % & ' * + - . and 0-9; bits 64...126: letters ^ _ ` | ~.
        let low: UInt64 = 0x03FF_6CFA_0000_0000
        let high: UInt64 = 0x57FF_FFFF_C7FF_FFFE
        if byte < 64 { return low >> UInt64(byte) & 1 == 1 }
        if byte < 128 { return high >> UInt64(byte - 64) & 1 == 1 }
        return false
    }

    private func bodyMode(of message: HTTPMessage) throws(HTTPParseError) -> BodyMode {
        if kind == .response {
            let status = Int(message.startLine.1) ?? 0
            if expectingHeadResponse || status / 100 == 1 || status == 204 || status == 304 { return .none }
        }
        var length: Int?
        var chunked = false
        for header in message.headers {
            // Only two names matter here.
            if header.name.isASCII(caseInsensitivelyEqualTo: "content-length") {
                if let value = Self.plainDecimal(header.value) {
                    if let length, length != value { throw HTTPParseError(status: 400, reason: "conflicting Content-Length values") }
                    length = value
                    continue
                }
                for piece in header.value.split(separator: ",") {
                    let text = piece.trimmingSpaces()
                    guard !text.isEmpty, text.count <= 18, text.allSatisfy(\.isASCIIDigit), let value = Int(text) else {
                        throw HTTPParseError(status: 400, reason: "invalid Content-Length")
                    }
                    if let length, length != value { throw HTTPParseError(status: 400, reason: "conflicting Content-Length values") }
                    length = value
                }
            } else if header.name.isASCII(caseInsensitivelyEqualTo: "transfer-encoding") {
                let codings = header.value.lowercased().split(separator: ",").map { $0.trimmingSpaces() }
                guard codings.last == "chunked" else {
                    throw HTTPParseError(status: kind == .request ? 501 : 502, reason: "unsupported Transfer-Encoding \(header.value)")
                }
                chunked = true
            }
        }
        if chunked && length != nil {
            throw HTTPParseError(status: 400, reason: "both Transfer-Encoding and Content-Length")
        }
        if chunked { return .chunked }
        if let length {
            guard length <= limits.maxBodyBytes else { throw HTTPParseError(status: 413, reason: "body of \(length) bytes is over \(limits.maxBodyBytes)") }
            return length == 0 ? .none : .length(length)
        }
        return kind == .request ? .none : .untilClose
    }

    // MARK: buffer

    private mutating func findHeadEnd() -> Int? {
        let count = buffer.count
        var index = max(start, scanFrom)
        while index + 3 < count {
            if buffer[index + 3] != 10 {
                index += buffer[index + 3] == 13 ? 1 : 4
                continue
            }
            if buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 {
                scanFrom = 0
                return index
            }
            index += 1
        }
        scanFrom = max(start, count - 3)
        return nil
    }

    private mutating func takeLine(limit: Int) throws(HTTPParseError) -> String? {
        var index = start
        while index < buffer.count {
            if buffer[index] == 10 {
                var end = index
                if end > start && buffer[end - 1] == 13 { end -= 1 }
                let line = String(decoding: buffer[start..<end], as: UTF8.self)
                consume(index + 1 - start)
                return line
            }
            index += 1
            if index - start > limit { throw HTTPParseError(status: 400, reason: "line over \(limit) bytes") }
        }
        if bufferedCount > limit { throw HTTPParseError(status: 400, reason: "line over \(limit) bytes") }
        return nil
    }

    private mutating func consume(_ count: Int) {
        start += count
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
            scanFrom = 0
        } else if start > 65_536 && start > buffer.count / 2 {
            buffer.removeFirst(start)
            scanFrom = max(0, scanFrom - start)
            start = 0
        }
    }
}

extension Character {
    var isASCIIDigit: Bool { asciiValue.map { $0 >= 48 && $0 <= 57 } ?? false }
    var isASCIIHexDigit: Bool { asciiValue.map { ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 102) } ?? false }
}

extension StringProtocol {
    func trimmingSpaces() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return String(slice)
    }
}
