import PushSwarmCore
import PushSwarmMetrics
import Synchronization

/// One request on its way: its timer, its timings, and where it is.
final class Exchange: @unchecked Sendable {
    var request: HTTPClientRequest
    private var completion: (@Sendable (HTTPResult) -> Void)?
    let startedAt: UInt64
    var timings = HTTPTimings()
    var enqueuedAt: UInt64 = 0
    var writtenAt: UInt64 = 0
    var firstByteAt: UInt64 = 0
    /// The pool whose deadline sweep holds it (`ConnectionPool`), and its place in that pool's
    /// list of live exchanges; nil and -1 once it has finished.
    var deadlines: ConnectionPool?
    var liveIndex = -1
    /// When it times out, on its loop's clock: its timeout from when it started.
    var deadline: UInt64 { startedAt &+ request.timeoutNanoseconds }
    /// The connection carrying it, once assigned; cleared when it finishes.
    var connection: HTTPConnection?
    /// A kept-alive connection the server had closed: retried once on a fresh one.
    var retriedStale = false
    /// Its HTTP/2 stream while one carries it.
    var stream: UInt32 = 0
    /// Times it went again because an HTTP/2 server had not processed it (GOAWAY, REFUSED_STREAM).
    var unprocessedRetries = 0
    /// Times a request goes again after a server left it unprocessed before it fails: a server
    /// that refuses everything is an answer.
    static let maxUnprocessedRetries = 3
    /// Whether it may go again after a server left it unprocessed once more.
    var mayGoAgainUnprocessed: Bool { unprocessedRetries < Self.maxUnprocessedRetries }
    /// Its place in its pool's wait queue while it waits for a connection (see `ConnectionPool`).
    var waitTicket: Int?

    init(request: HTTPClientRequest, completion: @escaping @Sendable (HTTPResult) -> Void, startedAt: UInt64) {
        self.request = request
        self.completion = completion
        self.startedAt = startedAt
    }

    var isFinished: Bool { completion == nil }

    func finish(now: UInt64, _ result: (HTTPTimings) -> HTTPResult) {
        guard let completion else { return }
        self.completion = nil
        connection = nil
        deadlines?.ended(self)
        deadlines = nil
        timings.total = now - startedAt
        completion(result(timings))
    }

    /// Appends the request's bytes on the wire to `bytes`.
    func serialize(into bytes: inout [UInt8]) {
        bytes.reserveCapacity(256 + request.body.count)
        bytes.append(contentsOf: request.method.utf8)
        bytes.append(32)
        bytes.append(contentsOf: request.url.path.utf8)
        bytes.append(contentsOf: " HTTP/1.1\r\nHost: ".utf8)
        bytes.append(contentsOf: request.url.origin.hostHeader.utf8)
        bytes.append(contentsOf: "\r\n".utf8)
        var hasLength = false
        for header in request.headers {
            if header.name.isASCII(caseInsensitivelyEqualTo: "host") { continue }
            if header.name.isASCII(caseInsensitivelyEqualTo: "content-length") { hasLength = true }
            bytes.append(contentsOf: header.name.utf8)
            bytes.append(contentsOf: ": ".utf8)
            bytes.append(contentsOf: header.value.utf8)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        if !hasLength && (!request.body.isEmpty || request.method == "POST" || request.method == "PUT" || request.method == "PATCH") {
            bytes.append(contentsOf: "Content-Length: ".utf8)
            appendDecimal(request.body.count, to: &bytes)
            bytes.append(contentsOf: "\r\n".utf8)
        }
        bytes.append(contentsOf: "\r\n".utf8)
        bytes.append(contentsOf: request.body)
    }

    /// The request as HTTP/2 header fields (RFC 9113 section 8.3.1): the pseudo-headers first, in
    /// OkHttp's order, then its headers in lower case without the connection-specific ones
    /// (section 8.2.2) or `host` (`:authority` says it).
    func headerFields() -> [HeaderField] {
        var fields: [HeaderField] = []
        fields.reserveCapacity(5 + request.headers.count)
        fields.append(HeaderField(":method", request.method))
        fields.append(HeaderField(":path", request.url.path))
        fields.append(HeaderField(":scheme", request.url.origin.isTLS ? "https" : "http"))
        fields.append(HeaderField(":authority", request.url.origin.hostHeader))
        var hasLength = false
        for header in request.headers {
            let name = header.name.lowercased()
            switch name {
            case "host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te": continue
            case "content-length": hasLength = true
            default: break
            }
            fields.append(HeaderField(name: Array(name.utf8), value: Array(header.value.utf8)))
        }
        if !hasLength && (!request.body.isEmpty || request.method == "POST" || request.method == "PUT" || request.method == "PATCH") {
            fields.append(HeaderField("content-length", String(request.body.count)))
        }
        return fields
    }

    /// Writes `value` in decimal without making a String.
    private func appendDecimal(_ value: Int, to bytes: inout [UInt8]) {
        var digits = InlineArray<20, UInt8>(repeating: 0)
        var count = 0
        var rest = max(0, value)
        repeat {
            digits[count] = UInt8(48 + rest % 10)
            rest /= 10
            count += 1
        } while rest > 0
        for index in stride(from: count - 1, through: 0, by: -1) { bytes.append(digits[index]) }
    }
}
