import PushSwarmMetrics

/// Runs one platform's mock service with the concerns every platform shares: answer latency,
/// injected 503s, an injected "accepted but lost" bug, and the ledger of accepted items.
public struct MockHost: Sendable {
    public private(set) var service: any MockService
    public let behaviour: MockBehaviour
    public private(set) var ledger = Ledger()
    private let seed: UInt64
    /// Mixed into the identifiers a campaign makes (tracking tokens, message ids).
    private let identifierNonce: UInt64
    private var limiters: [RateLimiter]

    /// Draws (latency, faults) come from the caller with each request: see `MockFleet`.
    public init(service: any MockService, behaviour: MockBehaviour, seed: UInt64, identifierNonce: UInt64 = 0) {
        self.service = service
        self.behaviour = behaviour
        self.seed = seed
        self.identifierNonce = identifierNonce
        limiters = behaviour.rateLimits.map(RateLimiter.init(rule:))
    }

    public mutating func setCalendar(startUnixSeconds: Int64) {
        service.setCalendar(startUnixSeconds: startUnixSeconds)
    }

    /// A mock's answer to one request, and when it arrives.
    public struct Answer: Sendable {
        public var response: Response
        public var latency: TimeSpan
        /// The operation the service classified the request as (for its metrics).
        public var operation: String
        /// How the answer goes wrong on the wire, if a fault says so.
        public var fault: InjectedFault? = nil
    }

    /// Answers `request` and says how long the answer takes to arrive, drawing latency and faults
    /// from `random`.
    public mutating func exchange(_ request: Request, from source: SourceAddress, at now: Instant, random: inout SeededRandom) -> Answer {
        var latency = behaviour.latency.sampleSpan(using: &random)
        if !limiters.isEmpty {
            let path = request.pathWithoutQuery
            for index in limiters.indices where limiters[index].applies(to: path) {
                let key = limiters[index].key(for: request, path: path, from: source)
                switch limiters[index].check(key, at: now) {
                case .admit(let delay):
                    latency = latency + delay
                case .refuse(let retryAfter):
                    return Answer(response: limiters[index].refusal(retryAfter: retryAfter), latency: latency, operation: "rateLimited")
                }
            }
        }
        if random.chance(behaviour.http503Rate) {
            let body = JSONWriter.bytes(of: ["error": "service overloaded (injected fault)"])
            let response = Response(status: 503, headers: [Header("Content-Type", "application/json")], body: body)
            return Answer(response: response, latency: latency, operation: "injected503")
        }
        var wireFault: InjectedFault?
        for rule in behaviour.faults where rule.paths.isEmpty || rule.paths.contains(where: { request.path.hasPrefix($0) }) {
            let strikes: Bool
            var stallEnd: Instant?
            switch rule.when {
            case .rate(let chance): strikes = random.chance(chance)
            case .periodic:
                stallEnd = rule.windowEnd(containing: now)
                strikes = stallEnd != nil
            }
            guard strikes else { continue }
            switch rule.kind {
            case .serverError(let status):
                let body = JSONWriter.bytes(of: ["error": .string("injected fault: \(status)")])
                return Answer(response: Response(status: status, headers: [Header("Content-Type", "application/json")], body: body), latency: latency, operation: "injected\(status)")
            case .stall:
                // The answer waits for the end of the stall; the work is done on arrival.
                if let end = stallEnd { latency = latency + (end - now) }
            case .reset: wireFault = .reset
            case .truncated: wireFault = .truncated
            case .malformed: wireFault = .malformed
            case .slowBody(let rate): wireFault = .slowBody(bytesPerSecond: rate)
            case .goAway:
                // Drained before the service saw it: nothing is processed or recorded.
                return Answer(response: Response(status: 0), latency: latency, operation: "goAway", fault: .goAway)
            }
            break
        }
        let reply = service.handle(request, from: source, at: now)
        if let key = reply.accepted, !random.chance(behaviour.loseAcceptedRate) {
            ledger.record(key, operation: reply.operation, source: source, at: now)
        }
        if case .slowBody(let rate)? = wireFault {
            latency = latency + .seconds(Double(reply.response.body.count + 200) / Double(max(rate, 1)))
        }
        return Answer(response: reply.response, latency: latency, operation: reply.operation, fault: wireFault)
    }

    /// A mock's answer on a WebSocket session, and when it arrives.
    public struct SocketAnswer: Sendable {
        public var reply: SocketReply
        public var latency: TimeSpan
    }

    /// Opens session `session`; an injected 503 refuses the handshake.
    public mutating func openSocket(session: UInt64, path: String, from source: SourceAddress, at now: Instant, random: inout SeededRandom) -> SocketAnswer {
        let latency = behaviour.latency.sampleSpan(using: &random)
        if random.chance(behaviour.http503Rate) {
            let body = JSONWriter.bytes(of: ["error": "service overloaded (injected fault)"])
            let refusal = Response(status: 503, headers: [Header("Content-Type", "application/json")], body: body)
            return SocketAnswer(reply: SocketReply(refusal: refusal, operation: "injected503"), latency: latency)
        }
        return SocketAnswer(reply: record(service.socketOpened(session: session, path: path, from: source, at: now), source: source, at: now, random: &random), latency: latency)
    }

    public mutating func socketMessage(session: UInt64, text: String, from source: SourceAddress, at now: Instant, random: inout SeededRandom) -> SocketAnswer {
        let latency = behaviour.latency.sampleSpan(using: &random)
        return SocketAnswer(reply: record(service.socketMessage(session: session, text: text, from: source, at: now), source: source, at: now, random: &random), latency: latency)
    }

    public mutating func socketTimer(session: UInt64, at now: Instant) -> SocketReply {
        service.socketTimer(session: session, at: now)
    }

    public mutating func socketClosed(session: UInt64, at now: Instant) {
        service.socketClosed(session: session, at: now)
    }

    private mutating func record(_ reply: SocketReply, source: SourceAddress, at now: Instant, random: inout SeededRandom) -> SocketReply {
        if let key = reply.accepted, !random.chance(behaviour.loseAcceptedRate) {
            ledger.record(key, operation: reply.operation, source: source, at: now)
        }
        return reply
    }

    public mutating func knowDevice(_ device: KnownDevice) {
        service.knowDevice(device)
    }

    /// A device's confirmation of `key`'s item (`Ledger.confirm`).
    public mutating func confirm(_ key: LedgerKey, at now: Instant) -> Bool { ledger.confirm(key, at: now) }

    public mutating func launchCampaign(_ campaign: Campaign, at now: Instant) -> (pushes: [PushMessage], sessionMessages: [SessionMessage]) {
        let pushes = service.launchCampaign(campaign, at: now, draws: CampaignDraws(seed: seed, campaign: campaign.name, identifierNonce: identifierNonce))
        return (pushes, service.campaignSocketMessages(campaign, at: now))
    }
}
