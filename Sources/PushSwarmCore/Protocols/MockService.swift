/// The server side of one platform: validates what devices send, rate-limits, and accepts.
///
/// - Important: a value type with no I/O, `(state, request, now) -> response`. The same code answers
///   in-process in simulated time and behind the loopback server in wall-clock runs. Generic
///   concerns (latency, injected faults, the ledger) belong to `MockHost`, which wraps it.
public protocol MockService: Sendable {
    /// Answers one request from `source` at `now`.
    mutating func handle(_ request: Request, from source: SourceAddress, at now: Instant) -> MockReply

    /// The calendar the run's instants map to (instant zero is `startUnixSeconds`), for services
    /// that tell the time in their answers. Called once, before any request.
    mutating func setCalendar(startUnixSeconds: Int64)

    /// Whether `path` (without a query) is one of this service's endpoints; the loopback server
    /// routes requests by it when several platforms share one address.
    func serves(path: String) -> Bool

    /// Learns about an install that existed before the run started, as the real service would have.
    mutating func knowDevice(_ device: KnownDevice)

    /// Chooses the recipients of a campaign and builds each one's push payload, drawing for each
    /// recipient from `draws.random(for:)` with a key the device itself decides (its push token or
    /// account), never from the order the service met its devices: a shard's mock then picks
    /// exactly the recipients the whole fleet's mock would.
    mutating func launchCampaign(_ campaign: Campaign, at now: Instant, draws: CampaignDraws) -> [PushMessage]

    // MARK: WebSocket sessions (a service without any keeps the defaults)

    /// Whether a WebSocket handshake to `path` (without a query) is for this service.
    func servesSocket(path: String) -> Bool

    /// A device asks to open a socket at `path` (with its query); the session's number is the
    /// mock's handle for it from now on. Refusing answers the handshake with `reply.refusal`.
    mutating func socketOpened(session: UInt64, path: String, from source: SourceAddress, at now: Instant) -> SocketReply

    /// A text message arrived on an open session.
    mutating func socketMessage(session: UInt64, text: String, from source: SourceAddress, at now: Instant) -> SocketReply

    /// A timer the service asked for with `SocketReply.wake` is due (a server ping).
    mutating func socketTimer(session: UInt64, at now: Instant) -> SocketReply

    /// The session ended, whoever closed it.
    mutating func socketClosed(session: UInt64, at now: Instant)

    /// Messages a campaign sends on open sessions (a popup shown in the app while it is open).
    mutating func campaignSocketMessages(_ campaign: Campaign, at now: Instant) -> [SessionMessage]
}

/// A campaign's randomness, recipient by recipient: what one recipient draws depends on the run's
/// seed, the campaign and the recipient alone.
public struct CampaignDraws: Sendable {
    public let seed: UInt64
    public let campaign: String
    /// Mixed into the identifiers drawn (`SeededRandom.identifierNonce`): unique per wall run,
    /// so that a second run of one seed sends a real service no id it has seen.
    public let identifierNonce: UInt64

    public init(seed: UInt64, campaign: String, identifierNonce: UInt64 = 0) {
        self.seed = seed
        self.campaign = campaign
        self.identifierNonce = identifierNonce
    }

    public func random(for recipient: String) -> SeededRandom {
        // FNV-1a over the campaign and the recipient: a stable index for the recipient's stream.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in campaign.utf8 + [0] + recipient.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        var random = SeededRandom(seed: seed, stream: .campaign, index: hash)
        random.identifierNonce = identifierNonce
        return random
    }
}

extension MockService {
    public mutating func setCalendar(startUnixSeconds: Int64) {}

    public func servesSocket(path: String) -> Bool { false }

    public mutating func socketOpened(session: UInt64, path: String, from source: SourceAddress, at now: Instant) -> SocketReply {
        SocketReply(refusal: Response(status: 404, body: Array("no WebSocket here".utf8)), operation: "socket.unknown")
    }

    public mutating func socketMessage(session: UInt64, text: String, from source: SourceAddress, at now: Instant) -> SocketReply {
        SocketReply(close: (1008, "no WebSocket here"), operation: "socket.unknown")
    }

    public mutating func socketTimer(session: UInt64, at now: Instant) -> SocketReply { SocketReply(operation: "socket.timer") }

    public mutating func socketClosed(session: UInt64, at now: Instant) {}

    public mutating func campaignSocketMessages(_ campaign: Campaign, at now: Instant) -> [SessionMessage] { [] }
}

/// A mock's answer on a WebSocket session.
public struct SocketReply: Sendable {
    /// For an opening only: refuse the handshake with this response.
    public var refusal: Response?
    /// Text messages to send back, in order.
    public var messages: [String]
    /// Close the session after the messages, with this code and reason.
    public var close: (code: UInt16, reason: String)?
    /// Call `socketTimer` for this session after this long.
    public var wake: TimeSpan?
    /// An item the service accepted into its ledger.
    public var accepted: LedgerKey?
    /// The operation the message was for, as the service classified it.
    public var operation: String

    public init(
        refusal: Response? = nil, messages: [String] = [], close: (code: UInt16, reason: String)? = nil,
        wake: TimeSpan? = nil, accepted: LedgerKey? = nil, operation: String
    ) {
        self.refusal = refusal
        self.messages = messages
        self.close = close
        self.wake = wake
        self.accepted = accepted
        self.operation = operation
    }
}

/// A message a service sends on its own on an open session.
public struct SessionMessage: Sendable {
    public var session: UInt64
    public var text: String

    public init(session: UInt64, text: String) {
        self.session = session
        self.text = text
    }
}

/// A mock's answer: the response, and what it accepted into its ledger, if anything.
public struct MockReply: Sendable {
    public var response: Response
    public var accepted: LedgerKey?
    /// The operation the request was for, as the service classified it by method and path.
    public var operation: String

    public init(response: Response, accepted: LedgerKey? = nil, operation: String) {
        self.response = response
        self.accepted = accepted
        self.operation = operation
    }
}

/// An install the service knew before the run: its push address and consent.
public struct KnownDevice: Sendable {
    public var pushToken: String
    public var userID: String?
    public var os: OperatingSystem
    public var pushPermissionGranted: Bool

    public init(pushToken: String, userID: String?, os: OperatingSystem, pushPermissionGranted: Bool) {
        self.pushToken = pushToken
        self.userID = userID
        self.os = os
        self.pushPermissionGranted = pushPermissionGranted
    }
}

/// A push the service hands to the push provider for one device.
public struct PushMessage: Sendable {
    public var pushToken: String
    /// The platform's own data in the push (a tracking token, say).
    public var data: [String: String]
    /// A data-only message: the app's code must run to show it, so it does not reach an app the
    /// user force-stopped. A notification message is shown by the OS whatever the app's state.
    public var isDataOnly: Bool

    public init(pushToken: String, data: [String: String], isDataOnly: Bool = false) {
        self.pushToken = pushToken
        self.data = data
        self.isDataOnly = isDataOnly
    }
}
