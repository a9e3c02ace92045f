/// What a partition knows of its devices' WebSockets: handshakes under way (a handshake is a
/// request, answered 101 or failed), sockets open, and each opening and closing in time, merged
/// across partitions into the peak held at once, whatever the partition count.
struct SocketAccounting {
    /// Handshakes under way: their operation and intended start.
    private var opening: [SocketKey: (operation: String, sentAt: Instant)] = [:]
    private var open = Set<SocketKey>()
    /// Sockets opening and closing, as `microseconds * 2 + (1 if closed)`.
    private(set) var changes: [Int64] = []

    /// A device asked for a socket at `now`.
    mutating func handshakeStarted(_ key: SocketKey, operation: String, at now: Instant) {
        opening[key] = (operation, now)
    }

    /// The handshake of `key` ended, the socket open if `opened`: its operation and intended
    /// start, nil for a handshake this partition did not start (or already ended).
    mutating func handshakeEnded(_ key: SocketKey, opened: Bool, at now: Instant) -> (operation: String, sentAt: Instant)? {
        guard let started = opening.removeValue(forKey: key) else { return nil }
        if opened {
            open.insert(key)
            changes.append(now.microseconds * 2)
        }
        return started
    }

    /// The socket closed (by either side); false if it was not open.
    mutating func closed(_ key: SocketKey, at now: Instant) -> Bool {
        guard open.remove(key) != nil else { return false }
        changes.append(now.microseconds * 2 + 1)
        return true
    }
}
