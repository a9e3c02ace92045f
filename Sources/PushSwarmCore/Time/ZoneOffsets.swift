import PushSwarmSystem
import Foundation
import Synchronization

/// UTC offsets of the IANA time zones a run uses, precomputed over the run's span.
///
/// Devices stamp every event with local time; asking Foundation for each one would be slow and
/// is not safe to share across threads, so the offsets and daylight-saving transitions are read
/// once, up front, into an immutable table. A class: every client call's `DeviceSnapshot` copies
/// its device's calendar, and so retains one object here rather than each of the tables.
public final class ZoneOffsets: Sendable {
    private struct Segment: Sendable {
        var startUnixSeconds: Int64
        var offsetSeconds: Int
    }

    /// Every zone's segments, one zone after another, each zone's run starting at the place
    /// `places` gives for its name: a `TokenIndex` hashes the name's bytes without SipHash (a
    /// device looks its zone up for every event it stamps), and one flat array is read in place
    /// (a copy of a zone's own list retained and released it, for every event).
    private let segments: [Segment]
    private let places: TokenIndex

    /// - Parameters:
    ///   - zones: IANA identifiers; unknown ones are left out (see `contains`).
    ///   - from, through: the span covered, in Unix seconds.
    public init(zones: some Sequence<String>, from: Int64, through: Int64) {
        var segments: [Segment] = []
        var places = TokenIndex()
        for identifier in Set(zones) {
            guard let zone = TimeZone(identifier: identifier) else { continue }
            var date = Date(timeIntervalSince1970: TimeInterval(from))
            var list = [Segment(startUnixSeconds: Int64.min, offsetSeconds: zone.secondsFromGMT(for: date))]
            let end = Date(timeIntervalSince1970: TimeInterval(through))
            while let transition = zone.nextDaylightSavingTimeTransition(after: date), transition <= end {
                list.append(Segment(
                    startUnixSeconds: Int64(transition.timeIntervalSince1970.rounded()),
                    offsetSeconds: zone.secondsFromGMT(for: transition)
                ))
                date = transition
            }
            places[identifier] = segments.count
            segments += list
        }
        self.segments = segments
        self.places = places
    }

    public func contains(_ zone: String) -> Bool { places[zone] != nil }

    /// Seconds east of UTC in `zone` at `unixSeconds`; 0 for a zone not in the table.
    public func offsetSeconds(zone: String, atUnixSeconds unixSeconds: Int64) -> Int {
        guard let place = places[zone] else { return 0 }
        // The zone's run starts with its Int64.min segment; the next zone's starts the same way.
        var result = segments[place].offsetSeconds
        var index = place + 1
        while index < segments.count, segments[index].startUnixSeconds != Int64.min, segments[index].startUnixSeconds <= unixSeconds {
            result = segments[index].offsetSeconds
            index += 1
        }
        return result
    }

    /// Whether `identifier` names an IANA time zone. Foundation's list on Linux leaves out link
    /// names (`Asia/Kolkata` is missing; `Asia/Calcutta` is there), so anything the tz database
    /// resolves counts too; answers are remembered.
    public static func isKnown(_ identifier: String) -> Bool {
        if listedIdentifiers.contains(identifier) { return true }
        return resolvedIdentifiers.withLock { cache in
            if let known = cache[identifier] { return known }
            let known = identifier.contains("/") && TimeZone(identifier: identifier) != nil
            cache[identifier] = known
            return known
        }
    }

    private static let listedIdentifiers: Set<String> = Set(TimeZone.knownTimeZoneIdentifiers)
    private static let resolvedIdentifiers = Mutex<[String: Bool]>([:])
}

/// `ZoneOffsets.isKnown` for one partition's mock, which checks the zone of every event: a name
/// it has found valid before is answered from its own table, looked up by its UTF-8 (no
/// `String` made, no lock, nothing another partition writes); only a name it has not seen yet
/// asks `isKnown`, whose set and cache every partition shares. It keeps valid names only (a few
/// hundred exist), so a peer sending made-up zones does not grow it.
public struct KnownZones: Sendable {
    private var valid = TokenIndex()

    public init() {}

    public mutating func contains(utf8: Span<UInt8>) -> Bool {
        if valid.value(utf8: utf8) != nil { return true }
        let name = String(decodingUTF8: utf8)
        guard ZoneOffsets.isKnown(name) else { return false }
        valid[name] = 1
        return true
    }
}
