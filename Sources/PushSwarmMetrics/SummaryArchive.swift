/// `metrics.json`: everything a summary is made from, exactly (every histogram bucket, every
/// interval), so that `pushswarm merge` can add shards as if one process had recorded them and
/// `pushswarm compare` can read any run again. `summary.json` is the readable contract; this is
/// the lossless one.
public enum SummaryArchive {
    public static let format = "pushswarm-metrics"
    public static let schemaVersion = 1

    public struct ReadError: Error, CustomStringConvertible {
        public var path: String
        public var message: String
        public var description: String { "\(path): \(message)" }
    }

    /// The archive's text (for tests and small runs; a report writes it with `write`).
    public static func text(of summary: Summary) -> String {
        var bytes: [UInt8] = []
        write(summary) { bytes.append(contentsOf: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Writes the archive's UTF-8 in pieces of about a megabyte to `output`, as it goes: the
    /// timeline (every interval's histogram buckets, the bulk of a long run's archive) is never
    /// held as a tree, nor the whole text at once, so writing the report does not set the run's
    /// peak memory (a day of 100,000 devices has a 7 MB archive; held whole, with the copies a
    /// `String` and a `Data` of it make, it took 30 MB at the run's end).
    public static func write(_ summary: Summary, to output: ([UInt8]) throws -> Void) rethrows {
        let (run, ledger, metrics) = parts(of: summary)
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("format"); writer.string(format)
        writer.key("schema"); writer.integer(schemaVersion)
        writer.key("run"); writer.write(run)
        writer.key("ledger"); writer.write(ledger)
        writer.key("metrics")
        writer.beginObject()
        for member in metrics.members {
            writer.key(member.key)
            writer.write(member.value)
        }
        let timeline = summary.metrics.timeline
        writer.key("timeline")
        writer.beginObject()
        writer.key("intervalMicroseconds"); writer.integer(Int(timeline.intervalMicroseconds))
        writer.key("intervals")
        writer.beginArray()
        // A long run has thousands of intervals: their names are made once, and counts are
        // written as integers (the text `number(Double(_:))` gave them, without the `String`s).
        let names = IntervalNames.shared
        for interval in timeline.intervals {
            writer.beginObject()
            writer.key(names.sent); writer.integer(interval.sent)
            writer.key(names.retries); writer.integer(interval.retries)
            writer.key(names.ok); writer.integer(interval.ok)
            writer.key(names.rateLimited); writer.integer(interval.rateLimited)
            writer.key(names.clientErrors); writer.integer(interval.clientErrors)
            writer.key(names.serverErrors); writer.integer(interval.serverErrors)
            writer.key(names.transportErrors); writer.integer(interval.transportErrors)
            writer.key(names.timeouts); writer.integer(interval.timeouts)
            writer.key(names.activeDevices); writer.integer(interval.activeDevices)
            writer.key(names.max); writer.integer(interval.latency.maximum)
            writer.key(names.buckets)
            writer.beginArray()
            for bucket in interval.latency.buckets {
                writer.beginArray()
                writer.integer(bucket.index)
                writer.integer(bucket.count)
                writer.endArray()
            }
            writer.endArray()
            writer.endObject()
            if writer.count >= 1 << 20 { try writer.flush(to: output) }
        }
        writer.endArray()
        // Ticks that are not empty, as [index, sent, retries, ok, rateLimited, failed, opened, closed].
        writer.key("tickMicroseconds"); writer.integer(Int(timeline.tickMicroseconds))
        writer.key("ticks")
        writer.beginArray()
        for (index, tick) in timeline.ticks.enumerated() where !tick.isEmpty {
            writer.beginArray()
            writer.integer(index)
            writer.integer(UInt64(tick.sent))
            writer.integer(UInt64(tick.retries))
            writer.integer(UInt64(tick.ok))
            writer.integer(UInt64(tick.rateLimited))
            writer.integer(UInt64(tick.failed))
            writer.integer(UInt64(tick.opened))
            writer.integer(UInt64(tick.closed))
            writer.endArray()
            if writer.count >= 1 << 20 { try writer.flush(to: output) }
        }
        writer.endArray()
        writer.endObject()
        writer.endObject()
        writer.endObject()
        writer.newlineAtEnd()
        try writer.flush(to: output)
    }

    private struct IntervalNames: Sendable {
        static let shared = IntervalNames()
        let sent = JSONWriter.Name("sent"), retries = JSONWriter.Name("retries"), ok = JSONWriter.Name("ok")
        let rateLimited = JSONWriter.Name("rateLimited"), clientErrors = JSONWriter.Name("clientErrors")
        let serverErrors = JSONWriter.Name("serverErrors"), transportErrors = JSONWriter.Name("transportErrors")
        let timeouts = JSONWriter.Name("timeouts"), activeDevices = JSONWriter.Name("activeDevices")
        let max = JSONWriter.Name("max"), buckets = JSONWriter.Name("buckets")
    }

    /// The archive's run, ledger and metrics sections, the timeline left out (`text` streams it).
    private static func parts(of summary: Summary) -> (run: JSONValue, ledger: JSONValue, metrics: JSONObject) {
        var run = JSONObject()
        run["scenario"] = .string(summary.scenario)
        run["seed"] = number(summary.seed)
        run["clock"] = .string(summary.clock)
        run["devices"] = .number(Double(summary.devices))
        run["simulatedSeconds"] = .number(summary.simulatedSeconds)
        run["wallSeconds"] = .number(summary.wallSeconds)
        if let cpuBusy = summary.cpuBusy { run["cpuBusy"] = .number(cpuBusy) }
        run["runId"] = .string(summary.runID)
        run["version"] = .string(summary.version)
        run["lost"] = .number(Double(summary.lost))
        run["pendingAtEnd"] = .number(Double(summary.pendingAtEnd))
        if let shard = summary.shard { run["shard"] = ["index": .number(Double(shard.index)), "count": .number(Double(shard.count))] }
        if summary.mergedFrom > 0 { run["mergedFrom"] = .number(Double(summary.mergedFrom)) }
        if !summary.thresholds.isEmpty { run["thresholds"] = .array(summary.thresholds.map(JSONValue.string)) }
        if let scenarioText = summary.scenarioText { run["scenarioText"] = .string(scenarioText) }
        if let warmUp = summary.warmUp { run["warmUp"] = warmUp.json }

        var ledger: JSONValue = .null
        if let operations = summary.ledger {
            ledger = .object(JSONObject(operations.sorted { $0.key < $1.key }.map { name, entry in
                (key: name, value: [
                    "accepted": number(entry.accepted), "duplicates": number(entry.duplicates),
                    "peakAcceptedPerSecondPerSource": .number(Double(entry.peakAcceptedPerSecondPerSource)),
                ])
            }))
        }

        let metrics = summary.metrics
        var object = JSONObject()
        object["operations"] = .object(JSONObject(metrics.operations.sorted { $0.key < $1.key }.map { name, operation in
            (key: name, value: [
                "sent": number(operation.sent), "retries": number(operation.retries),
                "byStatus": counts(operation.byStatus.map { (String($0.key), $0.value) }),
                "transportErrors": number(operation.transportErrors), "timeouts": number(operation.timeouts),
                "latency": histogram(operation.latency), "serviceTime": histogram(operation.serviceTime),
                "connectTime": histogram(operation.connectTime), "tlsHandshakeTime": histogram(operation.tlsHandshakeTime),
                "timeToFirstByte": histogram(operation.timeToFirstByte),
            ])
        }))
        object["retriesByAttempt"] = counts(metrics.retriesByAttempt.map { (String($0.key), $0.value) })
        object["backoffDelays"] = histogram(metrics.backoffDelays)
        object["backoffByRetry"] = .object(JSONObject(metrics.backoffByRetry.sorted { $0.key < $1.key }.map { (key: String($0.key), value: histogram($0.value)) }))
        object["droppedByReason"] = counts(metrics.droppedByReason.map { ($0.key, $0.value) })
        object["transportErrorsByReason"] = counts(metrics.transportErrorsByReason.map { ($0.key, $0.value) })
        object["counters"] = counts(metrics.counters.map { ($0.key, $0.value) })
        object["durations"] = .object(JSONObject(metrics.durations.sorted { $0.key < $1.key }.map { (key: $0.key, value: histogram($0.value)) }))
        object["marks"] = .array(metrics.marks.map { ["name": .string($0.name), "microseconds": .number(Double($0.microseconds))] })
        return (.object(run), ledger, object)
    }

    /// Reads a summary back from `metrics.json`'s text; errors name the JSON path.
    public static func read(_ text: String) throws(ReadError) -> Summary {
        let root: JSONValue
        do { root = try JSONParser.parse(text) } catch { throw ReadError(path: "$", message: "not JSON: \(error)") }
        var reader = Reader()
        return try reader.summary(root)
    }

    private static func number(_ value: UInt64) -> JSONValue { .number(Double(value)) }

    private static func counts(_ pairs: [(String, UInt64)]) -> JSONValue {
        .object(JSONObject(pairs.sorted { $0.0 < $1.0 }.map { (key: $0.0, value: number($0.1)) }))
    }

    private static func histogram(_ histogram: LatencyHistogram) -> JSONValue {
        guard !histogram.isEmpty else { return ["count": 0] }
        return [
            "count": number(histogram.totalCount), "min": number(histogram.minimum), "max": number(histogram.maximum),
            "sum": number(histogram.sum),
            "buckets": .array(histogram.savedBuckets.map { [.number(Double($0.index)), number($0.count)] }),
        ]
    }

    private struct Reader {
        func fail(_ path: String, _ message: String) -> ReadError { ReadError(path: path, message: message) }

        func object(_ value: JSONValue?, _ path: String) throws(ReadError) -> JSONObject {
            guard let object = value?.objectValue else { throw fail(path, "expected an object, found \(value?.kindName ?? "nothing")") }
            return object
        }

        func number(_ value: JSONValue?, _ path: String) throws(ReadError) -> Double {
            guard let number = value?.numberValue, number.isFinite else { throw fail(path, "expected a number, found \(value?.kindName ?? "nothing")") }
            return number
        }

        /// A length of time or a share: finite and not negative.
        func nonNegative(_ value: JSONValue?, _ path: String) throws(ReadError) -> Double {
            let value = try number(value, path)
            guard value >= 0 else { throw fail(path, "expected a number from 0, found \(value)") }
            return value
        }

        func count(_ value: JSONValue?, _ path: String) throws(ReadError) -> UInt64 {
            let value = try number(value, path)
            guard value >= 0, value <= 9_007_199_254_740_992, value == value.rounded() else { throw fail(path, "expected a whole number from 0, found \(value)") }
            return UInt64(value)
        }

        /// The whole-number member `key` of `object`, at `path`.
        func count(_ key: String, of object: JSONObject, at path: String) throws(ReadError) -> UInt64 {
            try count(object[key], "\(path).\(key)")
        }

        func string(_ value: JSONValue?, _ path: String) throws(ReadError) -> String {
            guard let string = value?.stringValue else { throw fail(path, "expected a string, found \(value?.kindName ?? "nothing")") }
            return string
        }

        func counts(_ value: JSONValue?, _ path: String) throws(ReadError) -> [String: UInt64] {
            var result: [String: UInt64] = [:]
            for (key, entry) in try object(value, path).members { result[key] = try count(entry, "\(path).\(key)") }
            return result
        }

        func intCounts(_ value: JSONValue?, _ path: String) throws(ReadError) -> [Int: UInt64] {
            var result: [Int: UInt64] = [:]
            for (key, entry) in try counts(value, path) {
                guard let number = Int(key) else { throw fail("\(path).\(key)", "expected a whole-number key") }
                result[number] = entry
            }
            return result
        }

        func buckets(_ value: JSONValue?, _ path: String) throws(ReadError) -> [(index: Int, count: UInt64)] {
            guard let array = value?.arrayValue else { throw fail(path, "expected an array of [index, count]") }
            var result: [(index: Int, count: UInt64)] = []
            result.reserveCapacity(array.count)
            for (position, pair) in array.enumerated() {
                guard let items = pair.arrayValue, items.count == 2 else { throw fail("\(path)[\(position)]", "expected [index, count]") }
                result.append((Int(try count(items[0], "\(path)[\(position)][0]")), try count(items[1], "\(path)[\(position)][1]")))
            }
            return result
        }

        func histogram(_ value: JSONValue?, _ path: String) throws(ReadError) -> LatencyHistogram {
            let object = try object(value, path)
            guard try count(object["count"], "\(path).count") > 0 else { return LatencyHistogram() }
            guard let restored = LatencyHistogram(
                restoring: try buckets(object["buckets"], "\(path).buckets"),
                minimum: try count(object["min"], "\(path).min"), maximum: try count(object["max"], "\(path).max"),
                sum: try count(object["sum"], "\(path).sum")
            ) else { throw fail("\(path).buckets", "a bucket index is outside the histogram") }
            return restored
        }

        func warmUp(_ value: JSONValue?, _ path: String) throws(ReadError) -> Summary.WarmUp {
            let object = try object(value, path)
            var warmUp = Summary.WarmUp()
            warmUp.installs = try count("installs", of: object, at: path)
            warmUp.seconds = try nonNegative(object["seconds"], "\(path).seconds")
            guard let complete = object["complete"]?.boolValue else { throw fail("\(path).complete", "expected true or false") }
            warmUp.complete = complete
            warmUp.sent = try count("sent", of: object, at: path)
            warmUp.byStatus = try intCounts(object["byStatus"], "\(path).byStatus")
            warmUp.transportErrors = try count("transportErrors", of: object, at: path)
            warmUp.timeouts = try count("timeouts", of: object, at: path)
            warmUp.retries = try count("retries", of: object, at: path)
            warmUp.pendingAtEnd = try count("pendingAtEnd", of: object, at: path)
            warmUp.byOperation = try counts(object["byOperation"], "\(path).byOperation")
            warmUp.droppedByReason = try counts(object["droppedByReason"], "\(path).droppedByReason")
            if object["notRegistered"] != nil { warmUp.notRegistered = try counts(object["notRegistered"], "\(path).notRegistered") }
            if object["settleSeconds"] != nil {
                warmUp.settleSeconds = try nonNegative(object["settleSeconds"], "\(path).settleSeconds")
            }
            return warmUp
        }

        func histograms(_ value: JSONValue?, _ path: String) throws(ReadError) -> [String: LatencyHistogram] {
            var result: [String: LatencyHistogram] = [:]
            for (key, entry) in try object(value, path).members { result[key] = try histogram(entry, "\(path).\(key)") }
            return result
        }

        mutating func summary(_ root: JSONValue) throws(ReadError) -> Summary {
            let top = try object(root, "$")
            guard top["format"]?.stringValue == SummaryArchive.format else {
                throw fail("$.format", "expected \"\(SummaryArchive.format)\": this is not a PushSwarm metrics.json")
            }
            guard try count(top["schema"], "$.schema") == UInt64(SummaryArchive.schemaVersion) else {
                throw fail("$.schema", "written by another version of PushSwarm (schema \(top["schema"]?.numberValue ?? 0), this one reads \(SummaryArchive.schemaVersion))")
            }
            let run = try object(top["run"], "$.run")
            var metrics = RunMetrics()
            let source = try object(top["metrics"], "$.metrics")
            for (name, value) in try object(source["operations"], "$.metrics.operations").members {
                let path = "$.metrics.operations.\(name)"
                let entry = try object(value, path)
                var operation = OperationMetrics()
                operation.sent = try count("sent", of: entry, at: path)
                operation.retries = try count("retries", of: entry, at: path)
                operation.byStatus = try intCounts(entry["byStatus"], "\(path).byStatus")
                operation.transportErrors = try count("transportErrors", of: entry, at: path)
                operation.timeouts = try count("timeouts", of: entry, at: path)
                operation.latency = try histogram(entry["latency"], "\(path).latency")
                operation.serviceTime = try histogram(entry["serviceTime"], "\(path).serviceTime")
                operation.connectTime = try histogram(entry["connectTime"], "\(path).connectTime")
                // The TLS handshake's time came later: an archive without it has none.
                if entry["tlsHandshakeTime"] != nil { operation.tlsHandshakeTime = try histogram(entry["tlsHandshakeTime"], "\(path).tlsHandshakeTime") }
                operation.timeToFirstByte = try histogram(entry["timeToFirstByte"], "\(path).timeToFirstByte")
                metrics.operations[name] = operation
            }
            metrics.retriesByAttempt = try intCounts(source["retriesByAttempt"], "$.metrics.retriesByAttempt")
            metrics.backoffDelays = try histogram(source["backoffDelays"], "$.metrics.backoffDelays")
            for (key, histogram) in try histograms(source["backoffByRetry"], "$.metrics.backoffByRetry") {
                guard let retry = Int(key) else { throw fail("$.metrics.backoffByRetry.\(key)", "expected a whole-number key") }
                metrics.backoffByRetry[retry] = histogram
            }
            metrics.droppedByReason = try counts(source["droppedByReason"], "$.metrics.droppedByReason")
            metrics.transportErrorsByReason = try counts(source["transportErrorsByReason"], "$.metrics.transportErrorsByReason")
            metrics.counters = try counts(source["counters"], "$.metrics.counters")
            metrics.durations = try histograms(source["durations"], "$.metrics.durations")
            let timelineObject = try object(source["timeline"], "$.metrics.timeline")
            let interval = try count(timelineObject["intervalMicroseconds"], "$.metrics.timeline.intervalMicroseconds")
            guard interval > 0 else { throw fail("$.metrics.timeline.intervalMicroseconds", "expected a length above zero") }
            var timeline = Timeline(intervalMicroseconds: Int64(interval))
            guard let intervals = timelineObject["intervals"]?.arrayValue else { throw fail("$.metrics.timeline.intervals", "expected an array") }
            var restored: [Timeline.Interval] = []
            for (position, value) in intervals.enumerated() {
                let path = "$.metrics.timeline.intervals[\(position)]"
                let entry = try object(value, path)
                var item = Timeline.Interval()
                item.sent = try count("sent", of: entry, at: path)
                item.retries = try count("retries", of: entry, at: path)
                item.ok = try count("ok", of: entry, at: path)
                item.rateLimited = try count("rateLimited", of: entry, at: path)
                item.clientErrors = try count("clientErrors", of: entry, at: path)
                item.serverErrors = try count("serverErrors", of: entry, at: path)
                item.transportErrors = try count("transportErrors", of: entry, at: path)
                item.timeouts = try count("timeouts", of: entry, at: path)
                item.activeDevices = try count("activeDevices", of: entry, at: path)
                guard let latency = SparseHistogram(buckets: try buckets(entry["buckets"], "\(path).buckets"), maximum: try count("max", of: entry, at: path))
                else { throw fail("\(path).buckets", "a bucket index is outside the histogram") }
                item.latency = latency
                restored.append(item)
            }
            timeline.restore(restored)
            // Ticks and marks came later: an archive without them reads as having none.
            if timelineObject["ticks"] != nil {
                let tick = try count(timelineObject["tickMicroseconds"], "$.metrics.timeline.tickMicroseconds")
                guard tick > 0 else { throw fail("$.metrics.timeline.tickMicroseconds", "expected a length above zero") }
                guard let rows = timelineObject["ticks"]?.arrayValue else { throw fail("$.metrics.timeline.ticks", "expected an array") }
                var saved: [(index: Int, tick: Timeline.Tick)] = []
                saved.reserveCapacity(rows.count)
                for (position, row) in rows.enumerated() {
                    let path = "$.metrics.timeline.ticks[\(position)]"
                    // `opened` and `closed` came later: a row of six has neither, of seven no `closed`.
                    guard let items = row.arrayValue, (6...8).contains(items.count) else {
                        throw fail(path, "expected [index, sent, retries, ok, rateLimited, failed, opened, closed]")
                    }
                    let index = try count(items[0], "\(path)[0]")
                    guard index < UInt64(Timeline.tickLimit) else { throw fail("\(path)[0]", "expected a tick index under \(Timeline.tickLimit), found \(index)") }
                    guard saved.last.map({ $0.index < Int(index) }) ?? true else { throw fail("\(path)[0]", "tick indices must ascend") }
                    var values: [UInt32] = []
                    for column in 1..<items.count {
                        let value = try count(items[column], "\(path)[\(column)]")
                        guard value <= UInt64(UInt32.max) else { throw fail("\(path)[\(column)]", "expected at most \(UInt32.max) in one tick, found \(value)") }
                        values.append(UInt32(value))
                    }
                    saved.append((Int(index), Timeline.Tick(
                        sent: values[0], retries: values[1], ok: values[2], rateLimited: values[3], failed: values[4],
                        opened: values.count > 5 ? values[5] : 0, closed: values.count > 6 ? values[6] : 0
                    )))
                }
                timeline.restoreTicks(microseconds: Int64(tick), saved)
            }
            metrics.timeline = timeline
            if let marks = source["marks"] {
                guard let array = marks.arrayValue else { throw fail("$.metrics.marks", "expected an array") }
                for (position, value) in array.enumerated() {
                    let path = "$.metrics.marks[\(position)]"
                    let entry = try object(value, path)
                    let at = try count(entry["microseconds"], "\(path).microseconds")
                    metrics.mark(try string(entry["name"], "\(path).name"), at: Int64(at))
                }
            }

            var ledger: [String: Summary.LedgerOperation]?
            if let ledgerValue = top["ledger"], ledgerValue != .null {
                var operations: [String: Summary.LedgerOperation] = [:]
                for (name, value) in try object(ledgerValue, "$.ledger").members {
                    let entry = try object(value, "$.ledger.\(name)")
                    operations[name] = Summary.LedgerOperation(
                        accepted: try count(entry["accepted"], "$.ledger.\(name).accepted"),
                        duplicates: try count(entry["duplicates"], "$.ledger.\(name).duplicates"),
                        peakAcceptedPerSecondPerSource: UInt32(min(try count(entry["peakAcceptedPerSecondPerSource"], "$.ledger.\(name).peakAcceptedPerSecondPerSource"), UInt64(UInt32.max)))
                    )
                }
                ledger = operations
            }
            var summary = Summary(
                scenario: try string(run["scenario"], "$.run.scenario"), seed: try count(run["seed"], "$.run.seed"),
                clock: try string(run["clock"], "$.run.clock"), devices: Int(try count(run["devices"], "$.run.devices")),
                simulatedSeconds: try nonNegative(run["simulatedSeconds"], "$.run.simulatedSeconds"),
                wallSeconds: try nonNegative(run["wallSeconds"], "$.run.wallSeconds"),
                runID: try string(run["runId"], "$.run.runId"), version: try string(run["version"], "$.run.version"),
                metrics: metrics, ledger: ledger, lost: Int(try count(run["lost"], "$.run.lost")),
                pendingAtEnd: Int(try count(run["pendingAtEnd"], "$.run.pendingAtEnd"))
            )
            if run["cpuBusy"] != nil { summary.cpuBusy = try nonNegative(run["cpuBusy"], "$.run.cpuBusy") }
            if run["shard"] != nil {
                let shard = try object(run["shard"], "$.run.shard")
                summary.shard = (Int(try count(shard["index"], "$.run.shard.index")), Int(try count(shard["count"], "$.run.shard.count")))
            }
            if run["mergedFrom"] != nil { summary.mergedFrom = Int(try count(run["mergedFrom"], "$.run.mergedFrom")) }
            if let thresholds = run["thresholds"]?.arrayValue {
                summary.thresholds = try thresholds.enumerated().map { (position, value) throws(ReadError) in try string(value, "$.run.thresholds[\(position)]") }
            }
            if run["scenarioText"] != nil { summary.scenarioText = try string(run["scenarioText"], "$.run.scenarioText") }
            if run["warmUp"] != nil { summary.warmUp = try warmUp(run["warmUp"], "$.run.warmUp") }
            return summary
        }
    }
}
