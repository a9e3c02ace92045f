import Foundation
import PushSwarmMetrics

/// The warm-up before a wall run against a real target: the installs from before the run
/// register, paced per NAT address and backing off 429s.
extension Partition {
    /// The warm-up: the partition's installs from before the run, each at its turn of the fleet's
    /// pace (fleet index / rate, so partitions together keep `rate`), send what registered them.
    /// Each address no faster than its per-address pace (`WarmUpSettings.perAddressRate`, or the
    /// scenario's own per-address limit), which a 429 slows further (`warmUpAnswered`).
    func startWarmUp(_ warmUp: WarmUpSettings) {
        warmUpStates = Array(repeating: .none, count: range.count)
        let perAddress = warmUp.perAddressRate ?? scenario.platforms.values.compactMap(\.perAddressRequestsPerSecond).min()
        // A tenth under the limit: two requests the loop sends a gap apart reach the service a
        // little closer or further apart, and a limiter without burst (nginx `limit_req`
        // `burst=0`) refuses one that comes a millisecond early.
        if let perAddress { warmUpGap = .seconds(1.1 / perAddress) }
        var turns: [Int: Int] = [:]
        makeDevices { index, profile, _ in
            guard profile.isInstalledAtStart else { return }
            warmUpStates[index] = .due
            var seconds = Double(profile.index) / warmUp.rate
            if let perAddress {
                let place = addressPlace(of: index)
                let turn = turns[place, default: 0]
                turns[place] = turn + 1
                seconds = max(seconds, Double(turn) / perAddress)
            }
            let at = Instant.start + TimeSpan(microseconds: Int64((seconds * 1_000_000).rounded(.down)))
            if at <= end { queue.schedule(.warmUp(index), at: at) }
        }
    }

    /// A warm-up request of device `index`: true when it is its address's turn (taken: the
    /// caller sends it now); else it waits behind the address's held requests for a turn
    /// (`sendHeldWarmUpRequest`). Turns are a gap apart, and a 429's pause moves the next one, so
    /// it holds back every request from the address: installs, their follow-ups, retries.
    func takeWarmUpTurn(_ outgoing: OutgoingRequest, device index: Int, now: Instant) -> Bool {
        let place = addressPlace(of: index)
        var gate = warmUpGates[place] ?? WarmUpGate(next: now, gap: warmUpGap)
        if heldSends[place, default: []].isEmpty && gate.next <= now {
            gate.next = now + gate.gap
            warmUpGates[place] = gate
            return true
        }
        warmUpGates[place] = gate
        if heldSends[place, default: []].isEmpty { queue.schedule(.warmUpTurn(place: place), at: gate.next) }
        heldSends[place, default: []].append((index, outgoing))
        return false
    }

    /// The address's turn came: its oldest held request goes (unless a 429 moved the turn later
    /// meanwhile), and the next turn is booked for the rest.
    func sendHeldWarmUpRequest(place: Int, at time: Instant) {
        guard var held = heldSends[place], !held.isEmpty, var gate = warmUpGates[place] else { return }
        guard time >= gate.next else { return queue.schedule(.warmUpTurn(place: place), at: gate.next) }
        let (index, outgoing) = held.removeFirst()
        heldSends[place] = held.isEmpty ? nil : held
        gate.next = time + gate.gap
        warmUpGates[place] = gate
        sendNow(outgoing, device: index, now: time)
        if !held.isEmpty { queue.schedule(.warmUpTurn(place: place), at: time + gate.gap) }
    }

    /// A warm-up's answer: a 429 pauses the device's address for its `Retry-After` (1 s without
    /// one) and doubles the gap between its requests (once a pause), so the warm-up backs off a
    /// service's limiter instead of filling it. Then each other answer wins back a tenth of the
    /// gap, down to the address's floor. A pace the scenario states (`perAddressRate`, the
    /// service's known limit) is its floor: a 429 there is a hiccup (two requests the machine's
    /// load brought closer), and the pace comes back. A pace assumed from the scenario's own mock
    /// (a spec's per-address limit) is corrected by the service: a 429 soon after the pace last
    /// changed (within `settledAnswers`) makes the floor half again that gap. A single hiccup once
    /// halved the rest of a warm-up's pace (200 installs in 89 s instead of 45 on a busy machine).
    func warmUpAnswered(_ completion: ExchangeCompletion, device index: Int, at time: Instant) {
        warmUpStates[index] = completion.isSuccess ? .going : .failing
        let place = addressPlace(of: index)
        guard case .response(let response) = completion.outcome, response.status == 429 else {
            if var gate = warmUpGates[place], time >= gate.pausedUntil {
                gate.answersSinceChange += 1
                let floor = max(warmUpGap, gate.floor)
                if gate.gap > floor {
                    gate.gap = max(floor, TimeSpan(microseconds: gate.gap.microseconds * 9 / 10))
                }
                warmUpGates[place] = gate
            }
            return
        }
        let pause = response.header("Retry-After").flatMap { RetryAfter.parse($0, unixNow: Int64(Date().timeIntervalSince1970)) } ?? .seconds(1)
        var gate = warmUpGates[place] ?? WarmUpGate(next: time, gap: warmUpGap)
        // One slow-down a pause: 429s to requests sent before it add none.
        let slows = time >= gate.pausedUntil
        if slows {
            if warmUp?.perAddressRate == nil, gate.answersSinceChange < Self.settledAnswers {
                gate.floor = max(gate.floor, TimeSpan(microseconds: gate.gap.microseconds * 3 / 2))
            }
            gate.gap = max(TimeSpan(microseconds: gate.gap.microseconds * 2), .milliseconds(100))
            gate.answersSinceChange = 0
        }
        // Every request from the address waits out the pause (the refused one's own retry, by
        // its SDK's rule, too), and the next goes a gap after it.
        let resume = time + min(pause, .seconds(60))
        if slows { gate.pausedUntil = resume }
        gate.next = max(gate.next, resume + gate.gap)
        warmUpGates[place] = gate
        if slows { metrics.increment(.warmUpSlowedOn429) }
    }

    /// Answers at one pace after which a 429 is taken for a hiccup, not for a pace too fast.
    static let settledAnswers = 10
}

/// One NAT address's warm-up pace: the earliest its next request may go, the gap between its
/// requests (doubled by a 429, once a pause), the end of its latest pause, the least gap it comes
/// back to, and the answers since its pace last slowed.
struct WarmUpGate {
    var next: Instant
    var gap: TimeSpan
    var pausedUntil = Instant.start
    var floor = TimeSpan.zero
    var answersSinceChange = 0
}
