import Foundation
import PushSwarmMetrics

/// The files of one report directory, written together by `run` and `merge`:
///
/// - `summary.json`: the readable contract CI jobs and `compare` read;
/// - `metrics.json`: the same run exactly (histogram buckets, intervals), for `merge` and `compare`;
/// - `timeseries.ndjson`: one line per interval;
/// - `report.html`: the page a person opens.
enum ReportFiles {
    static let summary = "summary.json"
    static let metrics = "metrics.json"
    static let timeSeries = "timeseries.ndjson"
    static let html = "report.html"

    /// Writes every file; returns the summary's path.
    static func write(_ summary: Summary, to directory: String) throws -> String {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Each file appears whole (written aside, then renamed): a job that waits for
        // summary.json never reads half of one.
        func write(_ text: String, _ name: String) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: (directory as NSString).appendingPathComponent(name)), options: .atomic)
        }
        try write(summary.jsonText, Self.summary)
        let metricsPath = (directory as NSString).appendingPathComponent(Self.metrics)
        guard FileManager.default.createFile(atPath: metricsPath, contents: nil), let file = FileHandle(forWritingAtPath: metricsPath) else {
            throw ReportError(message: "cannot write \(metricsPath)")
        }
        defer { try? file.close() }
        try SummaryArchive.write(summary) { try file.write(contentsOf: Data($0)) }
        try write(summary.metrics.timeline.ndjson, Self.timeSeries)
        try write(HTMLReport.render(summary), Self.html)
        return (directory as NSString).appendingPathComponent(Self.summary)
    }

    /// A run read back from its directory (or from its metrics.json itself).
    static func read(_ path: String) throws -> Summary {
        // A directory (or a link to one) lists; a file does not.
        let isDirectory = (try? FileManager.default.contentsOfDirectory(atPath: path)) != nil
        let file = isDirectory ? (path as NSString).appendingPathComponent(Self.metrics) : path
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ReportError(message: FileManager.default.fileExists(atPath: file) ? "cannot read \(file)" : "no such report: \(path) (expected a report directory written by pushswarm run or merge, or its metrics.json)")
        }
        do {
            return try SummaryArchive.read(String(decoding: data, as: UTF8.self))
        } catch {
            throw ReportError(message: "\(file): \(error)")
        }
    }

    struct ReportError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}
