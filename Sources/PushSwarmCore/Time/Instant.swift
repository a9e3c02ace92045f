/// A point on a run's timeline: microseconds since the run started.
///
/// Simulated and wall-clock runs share this type; only the clock that produces it differs.
/// Whole microseconds keep arithmetic exact, so a seeded simulated run is reproducible bit for bit.
public struct Instant: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var microseconds: Int64

    public init(microseconds: Int64) { self.microseconds = microseconds }

    public static let start = Instant(microseconds: 0)

    public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.microseconds < rhs.microseconds }

    public static func + (lhs: Instant, rhs: TimeSpan) -> Instant {
        Instant(microseconds: lhs.microseconds &+ rhs.microseconds)
    }

    public static func - (lhs: Instant, rhs: TimeSpan) -> Instant {
        Instant(microseconds: lhs.microseconds &- rhs.microseconds)
    }

    public static func - (lhs: Instant, rhs: Instant) -> TimeSpan {
        TimeSpan(microseconds: lhs.microseconds &- rhs.microseconds)
    }

    public var seconds: Double { Double(microseconds) / 1_000_000 }
    public var description: String { "t+\(TimeSpan(microseconds: microseconds))" }
}

/// A length of time in whole microseconds.
public struct TimeSpan: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var microseconds: Int64

    public init(microseconds: Int64) { self.microseconds = microseconds }

    public static let zero = TimeSpan(microseconds: 0)

    public static func seconds(_ value: Double) -> TimeSpan { TimeSpan(microseconds: clampedMicroseconds(value * 1_000_000)) }
    public static func milliseconds(_ value: Double) -> TimeSpan { TimeSpan(microseconds: clampedMicroseconds(value * 1_000)) }
    public static func minutes(_ value: Double) -> TimeSpan { seconds(value * 60) }
    public static func hours(_ value: Double) -> TimeSpan { seconds(value * 3_600) }
    public static func days(_ value: Double) -> TimeSpan { seconds(value * 86_400) }

    public static func < (lhs: TimeSpan, rhs: TimeSpan) -> Bool { lhs.microseconds < rhs.microseconds }
    public static func + (lhs: TimeSpan, rhs: TimeSpan) -> TimeSpan { TimeSpan(microseconds: lhs.microseconds &+ rhs.microseconds) }
    public static func - (lhs: TimeSpan, rhs: TimeSpan) -> TimeSpan { TimeSpan(microseconds: lhs.microseconds &- rhs.microseconds) }
    public static func * (lhs: TimeSpan, rhs: Double) -> TimeSpan { .seconds(lhs.seconds * rhs) }

    public var seconds: Double { Double(microseconds) / 1_000_000 }
    public var milliseconds: Double { Double(microseconds) / 1_000 }

    /// Rounds `value` to whole microseconds, saturating rather than trapping on absurd inputs
    /// (a distribution's far tail can produce them).
    private static func clampedMicroseconds(_ value: Double) -> Int64 {
        guard value.isFinite else { return value > 0 ? Int64.max / 4 : 0 }
        if value >= Double(Int64.max / 4) { return Int64.max / 4 }
        if value <= -Double(Int64.max / 4) { return -Int64.max / 4 }
        return Int64(value.rounded())
    }

    /// Compact human form: `250ms`, `7s`, `1h30m`.
    public var description: String {
        let micros = microseconds
        if micros == 0 { return "0s" }
        if micros % 1_000_000 != 0 || abs(micros) < 1_000_000 {
            if micros % 1_000 == 0 { return "\(micros / 1_000)ms" }
            return "\(Double(micros) / 1_000)ms"
        }
        var seconds = micros / 1_000_000
        var text = seconds < 0 ? "-" : ""
        seconds = abs(seconds)
        let days = seconds / 86_400
        let hours = seconds % 86_400 / 3_600
        let minutes = seconds % 3_600 / 60
        let rest = seconds % 60
        if days > 0 { text += "\(days)d" }
        if hours > 0 { text += "\(hours)h" }
        if minutes > 0 { text += "\(minutes)m" }
        if rest > 0 { text += "\(rest)s" }
        return text
    }

    /// Parses `250ms`, `90s`, `7m`, `24h`, `2d`, `1h30m`, `1.5s`, or a bare number of seconds.
    /// Nil for anything else, or a negative span.
    public init?(parsing text: String) {
        let trimmed = text.trimmingSpaces
        if let seconds = Double(trimmed) {
            guard seconds >= 0, seconds.isFinite else { return nil }
            self = .seconds(seconds)
            return
        }
        var total = 0.0
        var number = ""
        var unit = ""
        var sawPart = false
        func flush() -> Bool {
            guard let value = Double(number), value >= 0 else { return false }
            let scale: Double
            switch unit {
            case "us", "µs": scale = 1e-6
            case "ms": scale = 1e-3
            case "s": scale = 1
            case "m": scale = 60
            case "h": scale = 3_600
            case "d": scale = 86_400
            default: return false
            }
            total += value * scale
            number = ""
            unit = ""
            sawPart = true
            return true
        }
        for character in trimmed {
            if character.isNumber || character == "." {
                if !unit.isEmpty { guard flush() else { return nil } }
                number.append(character)
            } else if character.isLetter {
                guard !number.isEmpty else { return nil }
                unit.append(character)
            } else {
                return nil
            }
        }
        guard !number.isEmpty, flush(), sawPart else { return nil }
        self = .seconds(total)
    }
}

extension String {
    var trimmingSpaces: String {
        var scalars = Substring(self)
        while scalars.first?.isWhitespace == true { scalars.removeFirst() }
        while scalars.last?.isWhitespace == true { scalars.removeLast() }
        return String(scalars)
    }
}
