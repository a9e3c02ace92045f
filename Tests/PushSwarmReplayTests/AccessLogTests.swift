import Foundation
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmPlatforms
@testable import PushSwarmReplay
import Testing

/// Access logs as `fit` reads them: the same eight requests written by nginx's `combined`, by a
/// custom `log_format` with `$msec` and `$request_time`, as JSON lines and by an AWS ALB
/// (Tests/Fixtures/logs), each with one line that is not a record.
@Suite struct AccessLogTests {
    static let logs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/logs").path
    /// 2026-11-26T18:00:00Z.
    static let base: Int64 = 1_795_716_000 * 1_000_000

    /// The fixtures' requests: start (µs after `base`), address, method, path, status.
    static let expected: [(start: Int64, address: String, method: String, path: String, status: Int)] = [
        (120_000, "203.0.113.7", "POST", "/events", 200),
        (480_000, "203.0.113.7", "POST", "/events", 429),
        (1_250_000, "203.0.113.8", "POST", "/smartapppush/pushes/opened", 200),
        (1_900_000, "198.51.100.2", "GET", "/favicon.ico", 404),
        (2_010_000, "198.51.100.3", "PUT", "/apps/demo/instances/abc/info", 200),
        (2_500_000, "198.51.100.3", "POST", "/meiro_mobile", 200),
        (3_000_000, "2001:db8::1", "GET", "/u_shaman/setup-api.js", 200),
        (3_700_000, "203.0.113.7", "POST", "/events", 200),
    ]

    static let custom = #"$remote_addr [$time_local] "$request" $status $request_time $msec"#

    private func read(_ file: String, _ format: AccessLogFormat) throws -> (records: [AccessLogRecord], reader: AccessLogReader) {
        var reader = AccessLogReader(format: format)
        var records: [AccessLogRecord] = []
        try reader.read(Self.logs + "/" + file) { records.append($0) }
        return (records, reader)
    }

    @Test(arguments: [
        ("combined.log", "combined", 5),
        ("custom.log", "custom", 7),
        ("lines.jsonl", "json", 2),
        ("alb.log", "alb", 8),
    ])
    func eachFormatReadsTheFixturesRequests(file: String, format name: String, badLine: Int) throws {
        let format: AccessLogFormat =
            switch name {
            case "custom": .nginx(try NginxLogFormat(Self.custom))
            case "json": .jsonLines(JSONLogFields())
            case "alb": .alb
            default: .combined
            }
        let (records, reader) = try read(file, format)
        #expect(reader.lines == 9 && reader.records == 8 && reader.unreadCount == 1)
        #expect(reader.unread.first?.line == badLine, "\(reader.unread)")
        try #require(records.count == Self.expected.count)
        for (record, expected) in zip(records, Self.expected) {
            #expect(record.address == expected.address && record.method == expected.method && record.path == expected.path && record.status == expected.status, "\(record)")
            // combined's $time_local is whole seconds, of the request's end: the start to the second.
            if name == "combined" {
                #expect(record.startMicroseconds / 1_000_000 == (Self.base + expected.start) / 1_000_000, "\(record)")
                #expect(record.durationMicroseconds == nil)
            } else {
                #expect(record.startMicroseconds == Self.base + expected.start, "\(record)")
                #expect(record.durationMicroseconds != nil)
            }
        }
    }

    /// gzip read directly; a truncated stream is an error, not a short log.
    @Test func gzipIsReadDirectlyAndATruncatedStreamIsAnError() throws {
        let directory = NSTemporaryDirectory() + "pushswarm-logs-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/bin/gzip")
        gzip.arguments = ["-c", Self.logs + "/alb.log"]
        let output = Pipe()
        gzip.standardOutput = output
        try gzip.run()
        let compressed = output.fileHandleForReading.readDataToEndOfFile()
        gzip.waitUntilExit()
        #expect(compressed.prefix(2) == Data([0x1F, 0x8B]))
        try compressed.write(to: URL(fileURLWithPath: directory + "/alb.log.gz"))
        var reader = AccessLogReader(format: .alb)
        var records: [AccessLogRecord] = []
        try reader.read(directory + "/alb.log.gz") { records.append($0) }
        #expect(records.count == 8 && reader.unreadCount == 1)
        #expect(records.last?.startMicroseconds == Self.base + 3_700_000)

        try compressed.prefix(compressed.count / 2).write(to: URL(fileURLWithPath: directory + "/cut.log.gz"))
        var cut = AccessLogReader(format: .alb)
        #expect(throws: (any Error).self) { try cut.read(directory + "/cut.log.gz") { _ in } }
        var missing = AccessLogReader(format: .alb)
        #expect(throws: (any Error).self) { try missing.read(directory + "/no-such.log") { _ in } }
    }

    @Test func nginxDefinitionsThatCannotBeReadAreRefusedWithTheReason() throws {
        let refused: [(String, AccessLogError)] = [
            (#"$remote_addr "$request" $status"#, .formatLacks(.time)),
            (#"[$time_local] "$request" $status"#, .formatLacks(.clientAddress)),
            (#"$remote_addr [$time_local] $status"#, .formatLacks(.request)),
            (#"$remote_addr [$time_local] "$request""#, .formatLacks(.status)),
            (#"$remote_addr$status [$time_local] "$request""#, .variablesTouch("status")),
            (#"$remote_addr [$time_local] "$request" ${status"#, .unclosedBrace(character: 39)),
            (#"$ [$time_local]"#, .variableWithoutName(character: 1)),
        ]
        for (definition, reason) in refused {
            #expect(throws: reason, "\(definition)") { _ = try NginxLogFormat(definition) }
        }
        #expect(AccessLogError.formatLacks(.time).description == "the format has no time: it needs $msec, $time_iso8601 or $time_local")
        #expect(AccessLogError.formatLacks(.time).code == "formatLacks.time")
        // Braces, and $request_method with $uri in place of $request.
        let braced = try NginxLogFormat(#"${remote_addr}|${msec}|${request_method}|${uri}|${status}"#)
        let record = try braced.record(Array("10.0.0.1|1795716000.500|POST|/events?x=1|201".utf8).span)
        #expect(record == AccessLogRecord(startMicroseconds: Self.base + 500_000, address: "10.0.0.1", method: "POST", path: "/events", status: 201))
    }

    /// What a hostile or broken log holds: numbers out of range or signed, a time that is not
    /// one, a line longer than any record. Each is a line not read, never a crash, and a long
    /// line is not held whole.
    @Test func hostileLinesAreCountedNotRead() throws {
        let format = try NginxLogFormat(Self.custom)
        let lines = [
            #"1.2.3.4 [26/Nov/2026:18:00:00 +0000] "POST /events HTTP/1.1" -200 0.001 1795716000.000"#,
            #"1.2.3.4 [26/Nov/2026:18:00:00 +0000] "POST /events HTTP/1.1" 99999999999999999999 0.001 1795716000.000"#,
            #"1.2.3.4 [26/Nov/2026:18:00:00 +0000] "POST /events HTTP/1.1" 200 -0.5 1795716000.000"#,
            #"1.2.3.4 [26/Nov/2026:18:00:00 +0000] "POST /events HTTP/1.1" 200 0.001 1e400"#,
            #"1.2.3.4 [26/Nov/2026:18:00:00 +0000] "POST /events HTTP/1.1" 200 0.001 99999999999999999.0"#,
            #"1.2.3.4 [31/Foo/2026:18:00:00 +0000] "POST /events HTTP/1.1" 200 0.001 1795716000.000"#,
        ]
        for line in lines {
            #expect(throws: AccessLogError.self, "\(line)") { _ = try format.record(Array(line.utf8).span) }
        }
        let directory = NSTemporaryDirectory() + "pushswarm-long-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let good = #"1.2.3.4 [26/Nov/2026:18:00:00 +0000] "POST /events HTTP/1.1" 200 0.001 1795716000.001"#
        let long = "1.2.3.4 [" + String(repeating: "x", count: 3 * AccessLogReader.maximumLineBytes)
        try Data((good + "\n" + long + "\n" + good).utf8).write(to: URL(fileURLWithPath: directory + "/long.log"))
        var reader = AccessLogReader(format: .nginx(format))
        var records = 0
        try reader.read(directory + "/long.log") { _ in records += 1 }
        #expect(records == 2 && reader.lines == 3 && reader.unreadCount == 1)
        #expect(reader.unread.first?.line == 2 && reader.unread.first?.reason == .lineTooLong(maximumBytes: AccessLogReader.maximumLineBytes))
        #expect((reader.unread.first?.text.count ?? .max) <= 80)
    }

    /// Addresses as logs write them, and what is not one.
    @Test func addressesLoseTheirPortsAndEmptyOnesAreNone() {
        func address(_ text: String) -> String? { LogValues.address(Array(text.utf8).span) }
        #expect(address("203.0.113.7") == "203.0.113.7" && address("203.0.113.7:46532") == "203.0.113.7")
        #expect(address("[2001:db8::1]:443") == "2001:db8::1" && address("2001:db8::1") == "2001:db8::1")
        #expect(address("203.0.113.7, 10.0.0.1") == "203.0.113.7")
        for empty in ["", "-", "[]:80", ":80", "[", " ,1.2.3.4"] { #expect(address(empty) == nil, "\(empty)") }
    }

    @Test func timeLocalOffsetsAndJSONTimesAgree() throws {
        let utc = LogValues.timeLocal(Array("26/Nov/2026:18:00:00 +0000".utf8).span)
        let east = LogValues.timeLocal(Array("26/Nov/2026:21:00:00 +0300".utf8).span)
        let west = LogValues.timeLocal(Array("26/Nov/2026:13:30:00 -0430".utf8).span)
        #expect(utc == Self.base && east == Self.base && west == Self.base)
        #expect(JSONLogFields.microseconds(unixTime: 1_795_716_000.5) == Self.base + 500_000)
        #expect(JSONLogFields.microseconds(unixTime: 1_795_716_000_500) == Self.base + 500_000)
        #expect(JSONLogFields.microseconds(unixTime: 1_795_716_000_500_000) == Self.base + 500_000)
        #expect(JSONLogFields.microseconds(unixTime: -1) == nil && JSONLogFields.microseconds(unixTime: .infinity) == nil)
    }

    /// What a log holds is printed, never obeyed (issue 49): escapes, bells and NULs in a line come
    /// out written as `\u{1B}`, and a start outside 1970 to 9999 (a duration longer than the
    /// time it is taken from) is a line that is not a record, where it once reached the fitted
    /// scenario and `fit` exited 1 asking to be told.
    @Test func controlBytesAreEscapedAndAStartOutsideTheCalendarIsNotARecord() throws {
        let format = AccessLogFormat.nginx(try NginxLogFormat(Self.custom))
        let hostile = Array("203.0.113.7 [26/Nov/2026:18:00:00 +0000] \"GET /\u{1B}[2J\u{7}x\u{0} HTTP/1.1\" 999x".utf8)
        do {
            _ = try format.record(hostile.span)
            Issue.record("a line with a bad status was read")
        } catch {
            #expect(error.code == "expectedTextAfter", "the status runs into the text after it")
            #expect(!error.description.unicodeScalars.contains { $0.value < 0x20 }, "\(error)")
        }
        #expect(LogValues.excerpt(hostile.span).contains("/\\u{1B}[2J\\u{7}x\\u{0} HTTP"))
        #expect(LogValues.printable("plain /events") == "plain /events")
        #expect(LogValues.printable("a\u{9B}b\u{7F}") == "a\\u{9B}b\\u{7F}")
        // $msec 5 s after 1970 with a $request_time of 10 s: the request started before 1970.
        let early = Array("203.0.113.7 [01/Jan/1970:00:00:05 +0000] \"POST /events HTTP/1.1\" 200 10.000 5.000".utf8)
        #expect(throws: AccessLogError.startOutOfRange) {
            _ = try format.record(early.span)
        }
        let fine = Array("203.0.113.7 [01/Jan/1970:00:00:15 +0000] \"POST /events HTTP/1.1\" 200 10.000 15.000".utf8)
        #expect(try format.record(fine.span).startMicroseconds == 5_000_000)
    }

    /// Which HTTP a request came over (issue 51): `$server_protocol` when the format logs it, else
    /// the protocol ending `$request` (nginx writes `HTTP/2.0` there too); the profile counts both,
    /// and the fitted scenario speaks what most came over (HTTP/1.1 only when none was HTTP/2).
    @Test func theProtocolIsReadAndTheFittedScenarioSpeaksIt() throws {
        let logged = AccessLogFormat.nginx(try NginxLogFormat(#"$remote_addr [$time_local] "$request_method $request_uri" $server_protocol $status $msec"#))
        let http2 = Array(#"203.0.113.7 [26/Nov/2026:18:00:00 +0000] "POST /events" HTTP/2.0 200 1795716000.120"#.utf8)
        let http1 = Array(#"203.0.113.7 [26/Nov/2026:18:00:00 +0000] "POST /events" HTTP/1.1 200 1795716000.480"#.utf8)
        let unsaid = Array(#"203.0.113.7 [26/Nov/2026:18:00:00 +0000] "POST /events" - 200 1795716000.500"#.utf8)
        #expect(try logged.record(http2.span).http2 == true && logged.record(http1.span).http2 == false && logged.record(unsaid.span).http2 == nil)
        let combined = AccessLogFormat.combined
        let line = Array(#"203.0.113.7 - - [26/Nov/2026:18:00:00 +0000] "POST /events HTTP/2.0" 200 2 "-" "okhttp/4.12.0""#.utf8)
        #expect(try combined.record(line.span).http2 == true, "the request line's protocol")
        #expect(LogValues.requestProtocol(Array("GET /".utf8).span) == nil)

        func fitted(_ lines: [[UInt8]]) throws -> ScenarioFit? {
            var profile = LogProfile()
            for line in lines { profile.add(try logged.record(line.span), operation: "smartapppush.events") }
            return ScenarioFit.fit(profile, retry: nil, platforms: [])
        }
        #expect(try fitted([http2, http2, http1])?.httpVersions == .negotiate)
        #expect(try fitted([http1, http1])?.httpVersions == .off)
        #expect(try fitted([unsaid])?.httpVersions == nil, "a log that does not say leaves the default")
        // The scenario written speaks it: read back as a run reads it.
        for (lines, versions) in [([http2, http1, http2], HTTPVersionPolicy.negotiate), ([http1, http1], .off)] {
            let fit = try #require(try fitted(lines))
            let text = fit.scenario(name: "h2", source: ScenarioFit.Source(files: ["a.log"], lines: 3, records: 3), limiter: nil, retry: nil)
            let scenario = try ScenarioDecoder(platforms: PlatformRegistry.all).decode(text: Array(text.utf8))
            #expect(scenario.network.http2 == versions, "\(text)")
        }
    }

    /// A rotated log is gzip, possibly several members (`cat a.gz b.gz`); what follows the last
    /// member must be nothing. zlib's gzread skipped trailing bytes without a word, and a log with
    /// something appended after compression lost its rest silently (issue 49).
    @Test func bytesAfterTheCompressedStreamAreAnErrorAndMembersFollowEachOther() throws {
        let gzip = try Data(contentsOf: URL(fileURLWithPath: Self.logs + "/incident.log.gz"))
        let format = AccessLogFormat.nginx(try NginxLogFormat(Self.custom))
        func lines(_ data: Data) throws -> Int {
            let path = NSTemporaryDirectory() + "pushswarm-gzip-\(UUID().uuidString).log.gz"
            defer { try? FileManager.default.removeItem(atPath: path) }
            try data.write(to: URL(fileURLWithPath: path))
            var reader = AccessLogReader(format: format)
            try reader.read(path) { _ in }
            return reader.lines
        }
        let once = try lines(gzip)
        #expect(once > 1_000)
        #expect(try lines(gzip + gzip) == 2 * once, "two members: both read")
        do {
            _ = try lines(gzip + Data("appended later\n".utf8))
            Issue.record("bytes after the stream were skipped")
        } catch {
            #expect("\(error)" == "15 bytes after the end of the compressed stream are not gzip: the file is damaged or has something appended")
        }
        do {
            _ = try lines(gzip.prefix(gzip.count / 2))
            Issue.record("a truncated stream was read as whole")
        } catch {
            #expect("\(error)" == "the compressed stream ends early: the file is truncated")
        }
    }
}
