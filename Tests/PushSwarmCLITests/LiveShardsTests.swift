import Foundation
import Testing

@testable import PushSwarmCLI
import PushSwarmCore
import PushSwarmMetrics
@testable import PushSwarmNet

/// What a shard streams to `--workers`' parent (`LiveShards`): read back as it was written, a
/// record's timeline holding only what changed since the last, the whole run added up, and what a
/// broken or hostile stream sends passed over.
@Suite struct LiveShardsTests {
    /// A shard's progress at `seconds` into the run: `perSecond` requests sent each second so far,
    /// answered 200 after 5 ms, on a timeline of one-second intervals.
    private func progress(seconds: Int, perSecond: Int, devices: Int) -> RunProgress {
        var metrics = RunMetrics()
        for second in 0..<seconds {
            for _ in 0..<perSecond {
                let at = Int64(second) * 1_000_000
                metrics.recordSent(operation: "smartapppush.events", retryNumber: 0, at: at)
                metrics.recordResponse(operation: "smartapppush.events", status: 200, latencyMicroseconds: 5_000, at: at + 5_000)
            }
        }
        metrics.increment(CounterKey("pushes.delivered"), by: UInt64(seconds))
        var progress = RunProgress(elapsed: TimeSpan(microseconds: Int64(seconds) * 1_000_000 + 500_000), duration: TimeSpan(microseconds: 60_000_000), metrics: metrics, devices: devices)
        progress.openConnections = 3
        return progress
    }

    /// The run the parent knows: a minute of 1,200 devices (the records above are of 60 s runs).
    static let expectation = LiveShards.Expectation(durationMicroseconds: 60_000_000, devices: 1_200)

    @Test func aRecordReadsBackAsItWasWritten() throws {
        let writer = LiveShards.Writer(scenario: "s", clock: "wall")
        var reader = LiveShards.Reader(expecting: Self.expectation)
        let sent = progress(seconds: 3, perSecond: 10, devices: 500)
        // Split anywhere: a pipe hands over what it has.
        let bytes = writer.record(sent)
        var records = reader.feed(bytes[..<7])
        records += reader.feed(bytes[7...])
        let record = try #require(records.first)
        #expect(records.count == 1)
        #expect(record.fromInterval == 0)
        #expect(record.progress.elapsed == sent.elapsed && record.progress.duration == sent.duration)
        #expect(record.progress.devices == 500 && record.progress.openConnections == 3)
        #expect(record.progress.metrics.sent == 30)
        #expect(record.progress.metrics.counters["pushes.delivered"] == 3)
        #expect(record.progress.metrics.operations["smartapppush.events"]?.latency.totalCount == 30)
        #expect(record.progress.metrics.timeline.intervals.map(\.sent) == [10, 10, 10])
    }

    /// The header is one type that writes and reads its line: every key it writes reads back,
    /// with and without the optional count, and a count that is not whole, or negative, is not a
    /// header (a peer's number is checked).
    @Test func aHeaderReadsBackAsItWasWrittenUnderItsOwnKeys() throws {
        for open in [Optional(7), nil] {
            let header = LiveShards.Header(elapsedMicroseconds: 3_500_000, durationMicroseconds: 60_000_000, devices: 500, openConnections: open, fromInterval: 3)
            guard case .object(let object) = try JSONParser.parse(header.line()) else { Issue.record("not an object"); continue }
            #expect(Set(object.keys) == Set(LiveShards.Header.Key.allCases.map(\.rawValue).filter { $0 != "openConnections" || open != nil }))
            #expect(LiveShards.Header.isHeader(object))
            #expect(LiveShards.Header(reading: object) == header)
        }
        for bad in [#"{"elapsedMicroseconds":1.5,"durationMicroseconds":1,"devices":1,"fromInterval":0}"#,
                    #"{"elapsedMicroseconds":1,"durationMicroseconds":1,"devices":-1,"fromInterval":0}"#,
                    #"{"elapsedMicroseconds":1,"durationMicroseconds":1,"devices":1,"fromInterval":0,"openConnections":"3"}"#,
                    #"{"elapsedMicroseconds":1,"devices":1,"fromInterval":0}"#] {
            guard case .object(let object) = try JSONParser.parse(Array(bad.utf8)) else { Issue.record("not an object"); continue }
            #expect(LiveShards.Header(reading: object) == nil, "\(bad)")
        }
    }

    /// Intervals sent whole are not sent again: a long run's record stays small. The parent puts
    /// them back together, and the shards' together.
    @Test func recordsCarryOnlyNewIntervalsAndTheBoardAddsTheShardsUp() throws {
        let writer = LiveShards.Writer(scenario: "s", clock: "wall")
        var reader = LiveShards.Reader(expecting: Self.expectation)
        let first = try #require(reader.feed(writer.record(progress(seconds: 3, perSecond: 10, devices: 500))).first)
        let second = try #require(reader.feed(writer.record(progress(seconds: 5, perSecond: 10, devices: 500))).first)
        // The first record was 3.5 s in: intervals 0 to 2 were whole, and are not sent again.
        #expect(second.fromInterval == 3)
        #expect(second.progress.metrics.timeline.intervals.count == 2)

        let board = LiveShards.Board()
        _ = board.update(shard: 1, with: first)
        var whole = board.update(shard: 1, with: second)
        #expect(whole.metrics.timeline.intervals.map(\.sent) == [10, 10, 10, 10, 10])
        var otherReader = LiveShards.Reader(expecting: Self.expectation)
        let other = try #require(otherReader.feed(LiveShards.Writer(scenario: "s", clock: "wall").record(progress(seconds: 4, perSecond: 1, devices: 700))).first)
        whole = board.update(shard: 2, with: other)
        #expect(whole.devices == 1_200)
        #expect(whole.openConnections == 6)
        #expect(whole.metrics.sent == 54)
        #expect(whole.metrics.operations["smartapppush.events"]?.latency.totalCount == 54)
        #expect(whole.metrics.timeline.intervals.map(\.sent) == [11, 11, 11, 11, 10])
        #expect(whole.elapsed == TimeSpan(microseconds: 5_500_000))
    }

    /// A line that is not a record, a header whose numbers are negative or not whole, an archive
    /// that does not read: passed over, and the next good record is read.
    @Test func whatIsNotARecordIsPassedOver() throws {
        var reader = LiveShards.Reader(expecting: Self.expectation)
        let good = LiveShards.Writer(scenario: "s", clock: "wall").record(progress(seconds: 1, perSecond: 2, devices: 10))
        let noise: [String] = [
            "/tmp/report/summary.json\n",
            "{\"elapsedMicroseconds\":-5,\"durationMicroseconds\":1,\"devices\":1,\"fromInterval\":0}\n{}\n",
            "{\"elapsedMicroseconds\":1.5,\"durationMicroseconds\":1,\"devices\":1,\"fromInterval\":0}\n{}\n",
            "{\"elapsedMicroseconds\":1,\"durationMicroseconds\":1,\"devices\":1,\"fromInterval\":0}\nnot json\n",
            "{\"elapsedMicroseconds\":1,\"durationMicroseconds\":1,\"devices\":1e300,\"fromInterval\":0}\n{}\n",
        ]
        var records: [LiveShards.Record] = []
        for line in noise { records += reader.feed(Array(line.utf8)) }
        #expect(records.isEmpty)
        records += reader.feed(good)
        #expect(records.count == 1)
        #expect(records.first?.progress.metrics.sent == 2)
    }

    /// A hostile or broken shard stream: records whose figures are outside the run the parent
    /// started are refused and counted by reason, and the parent goes on reading. `fromInterval`
    /// 10^9 once made the parent allocate a billion intervals (SIGABRT), an interval of 1 µs
    /// trapped a merge (SIGILL), and a 20 MB line without a newline was rescanned on every read.
    @Test func recordsOutsideTheRunAreRefusedAndCounted() throws {
        var reader = LiveShards.Reader(expecting: Self.expectation)
        let writer = LiveShards.Writer(scenario: "s", clock: "wall")
        let good = writer.record(progress(seconds: 2, perSecond: 3, devices: 10))
        let text = String(decoding: good, as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let (header, archive) = (lines[0], lines[1])
        func crafted(header change: (String) -> String = { $0 }, archive edit: (String) -> String = { $0 }) -> [UInt8] {
            Array((change(header) + "\n" + edit(archive) + "\n").utf8)
        }
        var records: [LiveShards.Record] = []
        records += reader.feed(crafted(header: { $0.replacingOccurrences(of: #""fromInterval":0"#, with: #""fromInterval":1000000000"#) }))
        records += reader.feed(crafted(header: { $0.replacingOccurrences(of: #""fromInterval":0"#, with: #""fromInterval":1000000000000000"#) }))
        records += reader.feed(crafted(archive: { $0.replacingOccurrences(of: #""intervalMicroseconds":1000000"#, with: #""intervalMicroseconds":1"#) }))
        records += reader.feed(crafted(header: { $0.replacingOccurrences(of: #""durationMicroseconds":60000000"#, with: #""durationMicroseconds":999999999999"#) }))
        records += reader.feed(crafted(header: { $0.replacingOccurrences(of: #""devices":10"#, with: #""devices":1000000"#) }))
        // 20 MB without a newline, fed in 1 MB reads, then the end of that line.
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 1 << 20)
        for _ in 0..<20 { records += reader.feed(chunk) }
        records += reader.feed(Array("tail of the long line\n".utf8))
        #expect(records.isEmpty)
        records += reader.feed(good)
        #expect(records.count == 1 && records.first?.progress.metrics.sent == 6, "the next good record is read")
        #expect(reader.refused[.intervalsOutOfRange] == 2)
        #expect(reader.refused[.intervalLength] == 1)
        #expect(reader.refused[.durationMismatch] == 1)
        #expect(reader.refused[.devicesOutOfRange] == 1)
        #expect(reader.refused[.lineTooLong] == 1)
        #expect(reader.refusals?.hasPrefix("6 records refused (a line over 16 MiB: 1;") == true, "\(reader.refusals ?? "")")
    }

    /// A shard that stops (killed, crashed) is marked at once: its counts stay (they are what it
    /// did) but `/metrics` says it no longer reports and the live page says so, where its last
    /// numbers once read as live until the run ended (issue 49).
    @Test func aShardThatStoppedIsMarkedInMetricsAndOnThePage() throws {
        let board = LiveShards.Board(shards: 2)
        var reader = LiveShards.Reader(expecting: Self.expectation)
        let record = try #require(reader.feed(LiveShards.Writer(scenario: "s", clock: "wall").record(progress(seconds: 2, perSecond: 5, devices: 10))).first)
        let live = board.update(shard: 2, with: record)
        #expect(live.shards == [.reporting, .reporting])
        let labels = MetricsEndpoint.RunLabels(scenario: "s", runID: "r", shard: "all")
        #expect(MetricsEndpoint.text(live, labels: labels).contains(#"pushswarm_shard_reporting{scenario="s",run_id="r",shard="all",worker="2/2"} 1"#))
        let stopped = board.ended(shard: 2, .stopped(why: "signal 9"))
        #expect(stopped.shards == [.reporting, .stopped(why: "signal 9")])
        #expect(stopped.metrics.sent == 10, "its counts are kept")
        let text = MetricsEndpoint.text(stopped, labels: labels)
        #expect(text.contains(#"pushswarm_shard_reporting{scenario="s",run_id="r",shard="all",worker="2/2"} 0"#))
        #expect(text.contains(#"pushswarm_shard_reporting{scenario="s",run_id="r",shard="all",worker="1/2"} 1"#))
        let page = Dashboard.data(stopped, previous: live, scenario: "s")
        #expect(page["status"]?.stringValue?.contains("shard 2/2 stopped (signal 9): its counts are its last") == true, "\(String(describing: page["status"]))")
        #expect(board.ended(shard: 1, .finished).shards == [.finished, .stopped(why: "signal 9")])
    }
}
