public import PushSwarmCore
public import PushSwarmSystem

/// Which platform operation a logged request is: `/<platform>/…` first (the prefix the built-in
/// mock serves each platform under, as a gateway might), then each platform's own endpoints
/// (`Platform.logOperation`), in the registry's order.
public struct LogOperations: Sendable {
    private let platforms: [any Platform]

    public init(platforms: [any Platform]) { self.platforms = platforms }

    /// The operation, or nil for a path no platform serves.
    public func operation(method: String, path: String) -> String? {
        for platform in platforms {
            let prefix = "/" + platform.name
            if path == prefix || path.hasPrefix(prefix + "/") {
                let rest = String(path.dropFirst(prefix.count))
                return platform.logOperation(method: method, path: rest.isEmpty ? "/" : rest)
            }
        }
        for platform in platforms {
            if let operation = platform.logOperation(method: method, path: path) { return operation }
        }
        return nil
    }
}

/// A line that is not a record: where it is, why, and its start.
public struct UnreadLine: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var reason: AccessLogError
    public var text: String

    public var description: String { "\(file):\(line): \(reason): \(text)" }
}

/// Reads access logs line by line (gzip-compressed or plain) and hands each record to a consumer;
/// counts the lines that are not records and keeps the first few.
public struct AccessLogReader {
    public let format: AccessLogFormat
    /// Lines read, records among them, and the lines that were not (the first `keptUnread`).
    public private(set) var lines = 0
    public private(set) var records = 0
    public private(set) var unreadCount = 0
    public private(set) var unread: [UnreadLine] = []
    public let keptUnread = 5
    /// A line longer than this is not a record (and is not held whole).
    public static let maximumLineBytes = 64 * 1024

    public init(format: AccessLogFormat) { self.format = format }

    /// Reads every line of `path`, handing each record to `consume`. Throws when the file cannot
    /// be opened or its compressed stream is corrupt.
    public mutating func read(_ path: String, _ consume: (AccessLogRecord) -> Void) throws(CompressedFile.Failure) {
        try read(path) { record in
            consume(record)
            return true
        }
    }

    /// Reads the lines of `path`, handing each record to `consume`, until it returns false (then
    /// the rest of the chunk read is passed over and reading stops).
    public mutating func read(_ path: String, _ consume: (AccessLogRecord) -> Bool) throws(CompressedFile.Failure) {
        var goesOn = true
        let file = try CompressedFile(path: path)
        let longLine = AccessLogError.lineTooLong(maximumBytes: Self.maximumLineBytes)
        // The start of a line that has not ended in the chunks read so far; once it passes the
        // maximum, only its first bytes are kept (`tooLong`), for the message.
        var pending: [UInt8] = []
        var tooLong = false
        var lineNumber = 0
        func take(_ line: Span<UInt8>) {
            lineNumber += 1
            var line = line
            if !line.isEmpty, line[line.count - 1] == UInt8(ascii: "\r") { line = line.extracting(..<(line.count - 1)) }
            if line.isEmpty { return }
            lines += 1
            guard line.count <= Self.maximumLineBytes else {
                noteUnread(path, lineNumber, longLine, LogValues.excerpt(line))
                return
            }
            guard goesOn else { return }
            do {
                let record = try format.record(line)
                records += 1
                goesOn = consume(record)
            } catch {
                noteUnread(path, lineNumber, error, LogValues.excerpt(line))
            }
        }
        func finishPending() {
            if tooLong {
                lineNumber += 1
                lines += 1
                noteUnread(path, lineNumber, longLine, LogValues.excerpt(pending.span))
            } else {
                take(pending.span)
            }
            pending.removeAll(keepingCapacity: true)
            tooLong = false
        }
        while goesOn, try file.next({ chunk in
            var start = 0
            for index in 0..<chunk.count where chunk[index] == UInt8(ascii: "\n") {
                let piece = chunk.extracting(start..<index)
                if pending.isEmpty && !tooLong {
                    take(piece)
                } else {
                    if !tooLong { pending.append(piece) }
                    finishPending()
                }
                start = index + 1
            }
            if start < chunk.count, !tooLong {
                pending.append(chunk.extracting(start...))
                if pending.count > Self.maximumLineBytes {
                    tooLong = true
                    pending.removeSubrange(80...)
                }
            }
        }) {}
        if tooLong || !pending.isEmpty { finishPending() }
    }

    private mutating func noteUnread(_ file: String, _ line: Int, _ reason: AccessLogError, _ text: String) {
        unreadCount += 1
        if unread.count < keptUnread { unread.append(UnreadLine(file: file, line: line, reason: reason, text: text)) }
    }
}
