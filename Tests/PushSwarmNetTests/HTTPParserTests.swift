import PushSwarmCore
@testable import PushSwarmNet
import Testing

@Suite struct HTTPParserTests {
    private func parse(_ text: String, kind: HTTPParser.Kind = .request, limits: HTTPParser.Limits = HTTPParser.Limits()) throws(HTTPParseError) -> HTTPMessage? {
        var parser = HTTPParser(kind: kind, limits: limits)
        parser.append(Array(text.utf8))
        return try parser.next()
    }

    @Test func chunkedBodyIsReassembled() throws {
        let message = try #require(try parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n", kind: .response))
        #expect(String(decoding: message.body, as: UTF8.self) == "hello world")
    }

    /// A chunk size is a peer's number. A size near `Int.max` after a first chunk once overflowed
    /// the body's length (a trap that took down `pushswarm mock` with one connection), and a
    /// signed size was taken (the connection then hung): both are answered at once.
    @Test(arguments: [
        ("1\r\na\r\n7FFFFFFFFFFFFFFF\r\n", 413), ("1\r\na\r\nFFFFFFFFFFFFFFFF\r\n", 400), ("-1\r\n", 400),
        ("+5\r\nhello\r\n0\r\n\r\n", 400), ("0x5\r\nhello\r\n0\r\n\r\n", 400), ("8000000000000000\r\n", 400),
    ])
    func aHostileChunkSizeIsRefusedNotAddedUp(chunks: String, status: Int) {
        for kind in [HTTPParser.Kind.request, .response] {
            let head = kind == .request ? "POST / HTTP/1.1\r\nHost: a\r\n" : "HTTP/1.1 200 OK\r\n"
            do {
                _ = try parse(head + "Transfer-Encoding: chunked\r\n\r\n" + chunks, kind: kind)
                Issue.record("\(chunks.debugDescription) was accepted")
            } catch {
                #expect(error.status == status, "\(chunks.debugDescription): \(error)")
            }
        }
        #expect(throws: Never.self) { try parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\naB\r\n" + String(repeating: "x", count: 0xAB) + "\r\n0\r\n\r\n") }
    }

    /// RFC 9110 section 15: a status code is three digits from 100 to 599; anything else is a
    /// malformed answer (the client counts it so), not a status to count.
    @Test func aStatusCodeIsThreeDigitsFrom100To599() throws {
        for line in ["HTTP/1.1 0 X", "HTTP/1.1 2 OK", "HTTP/1.1 29 X", "HTTP/1.1 600 X", "HTTP/1.1 799 X", "HTTP/1.1 099 X", "HTTP/1.1 +20 X", "HTTP/1.1 2000 X"] {
            #expect(throws: HTTPParseError(status: 502, reason: "malformed status line"), "\(line)") {
                try parse(line + "\r\nContent-Length: 0\r\n\r\n", kind: .response)
            }
        }
        for code in ["100", "200", "429", "599"] {
            let message = try #require(try parse("HTTP/1.1 \(code) X\r\nContent-Length: 0\r\n\r\n", kind: .response))
            #expect(message.startLine.1 == code)
        }
    }

    @Test func messagesArriveByteByByte() throws {
        var parser = HTTPParser(kind: .request)
        let text = "POST /events HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: a\r\n\r\n"
        var messages: [HTTPMessage] = []
        for byte in text.utf8 {
            parser.append([byte])
            while let message = try parser.next() { messages.append(message) }
        }
        #expect(messages.map(\.startLine.0) == ["POST", "GET"])
        #expect(messages[0].body == Array("abc".utf8))
    }

    @Test func bothTransferEncodingAndContentLengthIsRefused() {
        // RFC 9112 section 6.3: such a message is how requests get smuggled.
        #expect(throws: HTTPParseError.self) {
            try parse("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        }
    }

    @Test func conflictingContentLengthsAreRefused() {
        #expect(throws: HTTPParseError(status: 400, reason: "conflicting Content-Length values")) {
            try parse("POST / HTTP/1.1\r\nContent-Length: 3, 4\r\n\r\nabcd")
        }
    }

    @Test func oversizedHeadersGet431AndOversizedBodies413() {
        let limits = HTTPParser.Limits(maxHeaderBytes: 64, maxBodyBytes: 10)
        #expect(throws: HTTPParseError.self) { try parse("GET / HTTP/1.1\r\nX: \(String(repeating: "a", count: 100))\r\n\r\n", limits: limits) }
        do {
            _ = try parse("GET / HTTP/1.1\r\nX: \(String(repeating: "a", count: 100))\r\n\r\n", limits: limits)
        } catch {
            #expect(error.status == 431)
        }
        do {
            _ = try parse("POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", limits: limits)
            Issue.record("an 11-byte body passed a 10-byte limit")
        } catch {
            #expect(error.status == 413)
        }
    }

    @Test func headerNamesMustBeTokensWithNoSpaceBeforeTheColon() {
        // RFC 9112 section 5.1: "No whitespace is allowed between the field name and colon."
        #expect(throws: HTTPParseError.self) { try parse("GET / HTTP/1.1\r\nHost : a\r\n\r\n") }
        #expect(throws: HTTPParseError.self) { try parse("GET / HTTP/1.1\r\nno colon here\r\n\r\n") }
        #expect(throws: HTTPParseError.self) { try parse("GET / HTTP/9.9\r\n\r\n") }
    }

    @Test func keepAliveFollowsVersionAndConnectionHeader() throws {
        #expect(try parse("GET / HTTP/1.1\r\n\r\n")?.keepAlive == true)
        #expect(try parse("GET / HTTP/1.1\r\nConnection: close\r\n\r\n")?.keepAlive == false)
        #expect(try parse("GET / HTTP/1.0\r\n\r\n")?.keepAlive == false)
        #expect(try parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")?.keepAlive == true)
    }

    @Test func responseWithoutLengthEndsAtEOF() throws {
        var parser = HTTPParser(kind: .response)
        parser.append(Array("HTTP/1.0 200 ok\r\nContent-type: text/html\r\n\r\n<HTML>hi".utf8))
        #expect(try parser.next() == nil)
        let finished = parser.finishAtEOF()
        let message = try #require(finished)
        #expect(String(decoding: message.body, as: UTF8.self) == "<HTML>hi")
    }

    /// A connection's answers repeat their fields (only the Date moves, once a second): the parser
    /// keeps the last answer's fields and takes a repeated one as it is, so each field must still
    /// read as this answer's own wherever any byte of its name or value differs.
    @Test func repeatedFieldsReadAsEachAnswersOwn() throws {
        var parser = HTTPParser(kind: .response)
        func answer(_ head: String, body: String = "{}") throws -> HTTPMessage {
            parser.append(Array((head + "Content-Length: \(body.utf8.count)\r\n\r\n" + body).utf8))
            return try #require(try parser.next())
        }
        let first = try answer("HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sat, 28 Nov 2026 10:37:06 GMT\r\nContent-Type: application/json\r\n")
        let same = try answer("HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Sat, 28 Nov 2026 10:37:06 GMT\r\nContent-Type: application/json\r\n")
        #expect(same.headers == first.headers)
        // The same lengths, one byte apart; a field moved; one more field; a longer body.
        let next = try answer("HTTP/1.1 429 Too Many Requests\r\nServer: nginx\r\nDate: Sat, 28 Nov 2026 10:37:07 GMT\r\nContent-Typf: application/json\r\nRetry-After: 2\r\n", body: "{\"a\":1}")
        #expect(next.headers.map(\.name) == ["Server", "Date", "Content-Typf", "Retry-After", "Content-Length"])
        #expect(next.headers.map(\.value) == ["nginx", "Sat, 28 Nov 2026 10:37:07 GMT", "application/json", "2", "7"])
        let moved = try answer("HTTP/1.1 200 OK\r\nDate: Sat, 28 Nov 2026 10:37:07 GMT\r\nServer: nginx\r\nContent-Type: application/jsoN\r\n")
        #expect(moved.headers.map(\.name) == ["Date", "Server", "Content-Type", "Content-Length"])
        #expect(moved.headers.map(\.value) == ["Sat, 28 Nov 2026 10:37:07 GMT", "nginx", "application/jsoN", "2"])
        #expect(moved.headers.count == 4 && next.headers.count == 5)
    }
}

@Suite struct URLTests {
    @Test func targetURLsParseAndResolveRedirects() throws {
        let url = try #require(TargetURL("https://Example.com:8443/a/b?x=1#frag"))
        #expect(url.origin == Origin(scheme: "https", host: "example.com", port: 8443))
        #expect(url.path == "/a/b?x=1")
        #expect(url.resolving("/c")?.description == "https://example.com:8443/c")
        #expect(url.resolving("d")?.path == "/a/d")
        #expect(url.resolving("http://other/")?.origin.host == "other")
        #expect(TargetURL("http://[::1]:8080/")?.origin.host == "::1")
        #expect(TargetURL("ftp://x/") == nil)
    }
}

@Suite struct TokenTests {
    @Test func tokenMaskMatchesRFC9110() {
        // RFC 9110 section 5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "."
        //   / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
        let tchar = Set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8)
        for byte in 0...255 {
            #expect(HTTPParser.isToken(UInt8(byte)) == tchar.contains(UInt8(byte)), "byte \(byte)")
        }
    }
}
