import PushSwarmMetrics

/// What a partition records of its requests and sockets as they go out and end.
extension Partition {
    func recordSent(operation: String, retryNumber: Int, device index: Int, at now: Instant) {
        let microseconds = (now - .start).microseconds
        metrics.recordSent(operation: operation, retryNumber: retryNumber, at: microseconds)
        let interval = metrics.timeline.index(at: microseconds)
        if slots[index].lastActiveInterval != Int32(interval) {
            slots[index].lastActiveInterval = Int32(interval)
            metrics.timeline.recordDeviceActive(interval: interval)
        }
    }

    func send(_ outgoing: OutgoingRequest, device index: Int, now: Instant) {
        // A warm-up paces every request per address (installs, their follow-ups, retries): one
        // that is not the address's turn waits for it.
        if warmUp != nil, warmUpGap > .zero, !takeWarmUpTurn(outgoing, device: index, now: now) { return }
        sendNow(outgoing, device: index, now: now)
    }

    func sendNow(_ outgoing: OutgoingRequest, device index: Int, now: Instant) {
        recordSent(operation: outgoing.operation, retryNumber: outgoing.retryNumber, device: index, at: now)
        inFlight += 1
        let slot = slots[index]
        if let (completion, at) = transport.send(outgoing, device: range.lowerBound + index, platform: groupPlatforms[Int(slot.group)], source: slot.source, at: now) {
            queue.schedule(.completion(index, slot: completions.insert(completion)), at: at, hint: Int32(index))
        }
    }

    func record(_ completion: ExchangeCompletion, at now: Instant) {
        let at = (now - .start).microseconds
        // Which HTTP carried it, where a socket says (wall time).
        if let http2 = completion.timings?.http2 { metrics.increment(http2 ? .requestsHTTP2 : .requestsHTTP1) }
        switch completion.outcome {
        case .response(let response):
            metrics.recordResponse(
                operation: completion.operation, status: response.status,
                latencyMicroseconds: UInt64(max(0, (now - completion.sentAt).microseconds)),
                serviceMicroseconds: completion.timings.map { UInt64(max(0, $0.service.microseconds)) },
                connectMicroseconds: completion.timings?.connect.map { UInt64(max(0, $0.microseconds)) },
                tlsMicroseconds: completion.timings?.tlsHandshake.map { UInt64(max(0, $0.microseconds)) },
                // Time to first byte is a socket's measure; simulated time has none.
                firstByteMicroseconds: isWall ? completion.timings.map { UInt64(max(0, $0.firstByte.microseconds)) } : nil,
                at: at
            )
        case .transportError(let reason):
            metrics.recordTransportError(operation: completion.operation, reason: reason, at: at)
        case .timeout:
            metrics.recordTimeout(operation: completion.operation, at: at)
        }
    }

    /// Accounts for a socket's handshake ending, and counts sockets open at once.
    func recordSocket(_ event: SocketEvent, device index: Int, at now: Instant) {
        let key = SocketKey(device: index, socket: event.socket)
        switch event {
        case .opened:
            guard let (operation, sentAt) = sockets.handshakeEnded(key, opened: true, at: now) else { return }
            inFlight -= 1
            // A handshake's answer is 101 Switching Protocols.
            record(ExchangeCompletion(requestID: event.socket, operation: operation, sentAt: sentAt, outcome: .response(Response(status: 101))), at: now)
            metrics.increment(.socketsOpened)
        case .failed(_, let outcome):
            guard let (operation, sentAt) = sockets.handshakeEnded(key, opened: false, at: now) else { return }
            inFlight -= 1
            record(ExchangeCompletion(requestID: event.socket, operation: operation, sentAt: sentAt, outcome: outcome), at: now)
        case .closed:
            if sockets.closed(key, at: now) { metrics.increment(.socketsClosedByPeer) }
        case .message:
            break
        }
    }
}
