import Foundation
import PushSwarmCore
import PushSwarmMetrics
import Synchronization

/// A shard's live progress as it streams it to the process that started it (`run --workers N`
/// starts each shard with `--progress-json`), and the whole run's progress made of the shards'
/// latest: what the parent's progress line, `--metrics-listen` and `--dashboard` show.
///
/// The stream is text, two lines a record, once a second: a header (`Header`:
/// `{"elapsedMicroseconds":…,"durationMicroseconds":…,"devices":…,"openConnections":…,"fromInterval":K}`)
/// and the shard's measurements so far as `metrics.json` writes them (`SummaryArchive`, one
/// line), their timeline holding the intervals from K on: those before K were sent before and no
/// longer change, so a record stays small however long the run. Other lines (the path a shard
/// prints at its end) are passed over.
enum LiveShards {
    /// A shard's side: writes each progress snapshot to standard output.
    final class Writer: Sendable {
        private let scenario: String
        private let clock: String
        /// Intervals already sent whole (the last one sent may still have been filling).
        private let sentWhole = Mutex(0)

        init(scenario: String, clock: String) {
            self.scenario = scenario
            self.clock = clock
        }

        /// Set once standard output refused a record (its reader went away: `| head`, or the
        /// `--workers` parent killed): the stream ends there, and the run goes on to its report.
        private let ended = Atomic(false)

        func write(_ progress: RunProgress) {
            guard !ended.load(ordering: .acquiring) else { return }
            do {
                try FileHandle.standardOutput.write(contentsOf: Data(record(progress)))
            } catch {
                guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return }
                FileHandle.standardError.write(Data("pushswarm: --progress-json: standard output was closed; the progress stream ends here and the run goes on to its report\n".utf8))
            }
        }

        /// One record's text: the header line and the archive line.
        func record(_ progress: RunProgress) -> [UInt8] {
            var metrics = progress.metrics
            let intervals = metrics.timeline.intervals
            let whole = Int(max(0, progress.elapsed.microseconds) / max(1, metrics.timeline.intervalMicroseconds))
            let from = sentWhole.withLock { sent in
                let from = min(sent, intervals.count)
                sent = max(sent, min(whole, intervals.count))
                return from
            }
            metrics.timeline.restore(Array(intervals[from...]))
            // Ticks (a fine series the report draws after the run) are not streamed.
            metrics.timeline.restoreTicks(microseconds: metrics.timeline.tickMicroseconds, [])
            let archive = Summary(
                scenario: scenario, seed: 0, clock: clock, devices: progress.devices, simulatedSeconds: progress.elapsed.seconds,
                wallSeconds: 0, runID: "", version: "", metrics: metrics, ledger: nil, lost: 0, pendingAtEnd: 0)
            let header = Header(
                elapsedMicroseconds: Int(progress.elapsed.microseconds), durationMicroseconds: Int(progress.duration.microseconds),
                devices: progress.devices, openConnections: progress.openConnections, fromInterval: from
            )
            return header.line() + Array(SummaryArchive.text(of: archive).utf8)
        }
    }

    /// A record's first line: where the shard is and which intervals its archive line holds.
    /// Written and read by this type alone, so that its keys are spelt once.
    struct Header: Equatable {
        var elapsedMicroseconds: Int
        var durationMicroseconds: Int
        var devices: Int
        /// Connections open now (wall runs).
        var openConnections: Int?
        var fromInterval: Int

        enum Key: String, CaseIterable {
            case elapsedMicroseconds, durationMicroseconds, devices, openConnections, fromInterval
        }

        /// The header as one line of JSON, newline-terminated.
        func line() -> [UInt8] {
            var writer = JSONWriter()
            writer.beginObject()
            for key in Key.allCases {
                guard let value = self[key] else { continue }
                writer.key(key.rawValue)
                writer.integer(value)
            }
            writer.endObject()
            writer.newlineAtEnd()
            return writer.takeBytes()
        }

        /// A header read back: nil unless every count but `openConnections` is there, and each
        /// that is there is whole, not negative and within what a run can hold (a peer's line).
        init?(reading object: JSONObject) {
            func count(_ key: Key) -> Int?? {
                guard let value = object[key.rawValue] else { return .some(nil) }
                guard case .number(let number) = value, number >= 0, number <= 1e15, number == number.rounded() else { return nil }
                return .some(Int(number))
            }
            guard let elapsed = count(.elapsedMicroseconds) ?? nil, let duration = count(.durationMicroseconds) ?? nil,
                  let devices = count(.devices) ?? nil, let from = count(.fromInterval) ?? nil, let open = count(.openConnections)
            else { return nil }
            self.init(elapsedMicroseconds: elapsed, durationMicroseconds: duration, devices: devices, openConnections: open, fromInterval: from)
        }

        init(elapsedMicroseconds: Int, durationMicroseconds: Int, devices: Int, openConnections: Int?, fromInterval: Int) {
            self.elapsedMicroseconds = elapsedMicroseconds
            self.durationMicroseconds = durationMicroseconds
            self.devices = devices
            self.openConnections = openConnections
            self.fromInterval = fromInterval
        }

        /// The value under `key` (nil: not written).
        subscript(key: Key) -> Int? {
            switch key {
            case .elapsedMicroseconds: elapsedMicroseconds
            case .durationMicroseconds: durationMicroseconds
            case .devices: devices
            case .openConnections: openConnections
            case .fromInterval: fromInterval
            }
        }

        /// Whether a line of the stream is a header (the next line is then its archive).
        static func isHeader(_ object: JSONObject) -> Bool { object[Key.fromInterval.rawValue] != nil }
    }

    /// A record read back: the shard's progress, its timeline holding the intervals from
    /// `fromInterval` on.
    struct Record {
        var progress: RunProgress
        var fromInterval: Int
    }

    /// Why a shard's line or record was passed over. Counted by the reader, and told after the run.
    enum Refusal: String, CaseIterable, Sendable, Error {
        case unreadable = "a record that does not read"
        case lineTooLong = "a line over 16 MiB"
        case elapsedOutOfRange = "an elapsed time outside the run"
        case durationMismatch = "a run length other than the scenario's"
        case devicesOutOfRange = "more devices than the fleet"
        case intervalLength = "an interval length other than the run's"
        case intervalsOutOfRange = "intervals past the run's end"
    }

    /// What the parent knows of the run its shards stream: a record that says otherwise is not
    /// the shard's (a broken or hostile stream) and is refused.
    struct Expectation: Sendable {
        var durationMicroseconds: Int64
        var devices: Int
        var intervalMicroseconds: Int64
        /// Intervals a record may reach: the run's and as many again for draining past its end.
        var maximumIntervals: Int

        init(durationMicroseconds: Int64, devices: Int) {
            self.durationMicroseconds = durationMicroseconds
            self.devices = devices
            intervalMicroseconds = Timeline.interval(forRunMicroseconds: durationMicroseconds)
            maximumIntervals = 2 * Int(durationMicroseconds / intervalMicroseconds + 1) + 60
        }
    }

    /// One shard's reader, shared by the pipe's handler and the parent, which reads its refusals
    /// once the shard has ended.
    final class SharedReader: Sendable {
        let reader: Mutex<Reader>

        init(expecting expectation: Expectation) {
            reader = Mutex(Reader(expecting: expectation))
        }
    }

    /// Reads records out of a shard's standard output, line by line, in time linear in what it
    /// reads and memory bounded by `maximumLineBytes`.
    struct Reader {
        /// A record's line holds the intervals since the last record: kilobytes. Past this, the
        /// line is skipped to its end (a stream without newlines once made the parent rescan its
        /// whole buffer on every read).
        static let maximumLineBytes = 16 << 20
        let expectation: Expectation
        private var pending: [UInt8] = []
        /// Where the search for the next newline goes on from (what was searched holds none).
        private var searched = 0
        private var skippingLongLine = false
        private var header: JSONObject?
        /// What was refused, by reason.
        private(set) var refused: [Refusal: Int] = [:]

        init(expecting expectation: Expectation) {
            self.expectation = expectation
        }

        /// The records that `bytes` completes. A line that is not part of a record is skipped;
        /// a record that does not read or holds figures outside the run is refused whole (the
        /// next one replaces it).
        mutating func feed(_ bytes: some Sequence<UInt8>) -> [Record] {
            pending.append(contentsOf: bytes)
            var records: [Record] = []
            var start = 0
            while let end = pending[searched...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(pending[start..<end])
                start = end + 1
                searched = start
                if skippingLongLine {
                    skippingLongLine = false
                    continue
                }
                if let header {
                    self.header = nil
                    switch Self.record(header: header, archive: line, expecting: expectation) {
                    case .success(let record): records.append(record)
                    case .failure(let refusal): refused[refusal, default: 0] += 1
                    }
                } else if case .object(let object)? = try? JSONParser.parse(line), Header.isHeader(object) {
                    header = object
                }
            }
            pending.removeSubrange(..<start)
            searched = pending.count
            if pending.count > Self.maximumLineBytes {
                if !skippingLongLine { refused[.lineTooLong, default: 0] += 1 }
                skippingLongLine = true
                header = nil
                pending.removeAll()
                searched = 0
            }
            return records
        }

        /// What was refused, as a sentence for the parent to print; nil when nothing was.
        var refusals: String? {
            guard !refused.isEmpty else { return nil }
            let total = refused.values.reduce(0, +)
            let reasons = Refusal.allCases.compactMap { reason in refused[reason].map { "\(reason.rawValue): \($0)" } }
            return "\(total) \(total == 1 ? "record" : "records") refused (\(reasons.joined(separator: "; ")))"
        }

        private static func record(header: JSONObject, archive: [UInt8], expecting expected: Expectation) -> Result<Record, Refusal> {
            guard let summary = try? SummaryArchive.read(String(decoding: archive, as: UTF8.self)), let read = Header(reading: header) else {
                return .failure(.unreadable)
            }
            let (elapsed, duration, devices, from) = (read.elapsedMicroseconds, read.durationMicroseconds, read.devices, read.fromInterval)
            guard Int64(duration) == expected.durationMicroseconds else { return .failure(.durationMismatch) }
            guard Int64(elapsed) <= expected.durationMicroseconds else { return .failure(.elapsedOutOfRange) }
            guard devices <= expected.devices else { return .failure(.devicesOutOfRange) }
            let timeline = summary.metrics.timeline
            guard timeline.intervalMicroseconds == expected.intervalMicroseconds else { return .failure(.intervalLength) }
            guard from <= expected.maximumIntervals, timeline.intervals.count <= expected.maximumIntervals - from else {
                return .failure(.intervalsOutOfRange)
            }
            var progress = RunProgress(elapsed: TimeSpan(microseconds: Int64(elapsed)), duration: TimeSpan(microseconds: Int64(duration)), metrics: summary.metrics, devices: devices)
            progress.openConnections = read.openConnections
            return .success(Record(progress: progress, fromInterval: from))
        }
    }

    /// The shards' latest progress, and the whole run's made of them.
    final class Board: Sendable {
        private struct Shard {
            var progress: RunProgress
            /// Every interval so far: the ones sent before and the latest record's.
            var intervals: [Timeline.Interval]
        }

        private let shards = Mutex<(latest: [Int: Shard], standings: [ShardStanding])>(([:], []))

        /// `count`: the shards started, numbered from 1.
        init(shards count: Int = 0) {
            shards.withLock { $0.standings = Array(repeating: .reporting, count: count) }
        }

        /// Takes shard `index`'s record; returns the whole run's progress with it.
        func update(shard index: Int, with record: Record) -> RunProgress {
            shards.withLock { shards in
                var intervals = shards.latest[index]?.intervals ?? []
                if intervals.count > record.fromInterval { intervals.removeSubrange(record.fromInterval...) }
                if intervals.count < record.fromInterval { intervals += repeatElement(Timeline.Interval(), count: record.fromInterval - intervals.count) }
                intervals += record.progress.metrics.timeline.intervals
                shards.latest[index] = Shard(progress: record.progress, intervals: intervals)
                return Self.whole(shards.latest.values, standings: shards.standings)
            }
        }

        /// Shard `index`'s process ended as `standing` says; returns the whole run's progress,
        /// which marks it (the live view and `/metrics` tell a stopped shard from a live one).
        func ended(shard index: Int, _ standing: ShardStanding) -> RunProgress {
            shards.withLock { shards in
                if shards.standings.indices.contains(index - 1) { shards.standings[index - 1] = standing }
                return Self.whole(shards.latest.values, standings: shards.standings)
            }
        }

        /// The run so far: counts and histograms added up (exact, as `merge` adds them), the
        /// timeline interval by interval, on the timeline of the shard furthest along.
        private static func whole(_ shards: some Collection<Shard>, standings: [ShardStanding]) -> RunProgress {
            var metrics = RunMetrics()
            var elapsed = TimeSpan.zero
            var duration = TimeSpan.zero
            var devices = 0
            var open: Int?
            for shard in shards {
                var shardMetrics = shard.progress.metrics
                shardMetrics.timeline.restore(shard.intervals)
                metrics.merge(shardMetrics)
                elapsed = max(elapsed, shard.progress.elapsed)
                duration = max(duration, shard.progress.duration)
                devices += shard.progress.devices
                if let shardOpen = shard.progress.openConnections { open = (open ?? 0) + shardOpen }
            }
            var progress = RunProgress(elapsed: elapsed, duration: duration, metrics: metrics, devices: devices)
            progress.openConnections = open
            progress.shards = standings.isEmpty ? nil : standings
            return progress
        }
    }
}
