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
        if let perAddress { warmUpGap = .seconds(1 / perAddress) }
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

    /// A warm-up's answer: a 429 pauses the device's address for its `Retry-After` (1 s without
    /// one) and doubles the gap between its installs (once a pause), so the warm-up backs off a
    /// service's limiter instead of filling it.
    func warmUpAnswered(_ completion: ExchangeCompletion, device index: Int, at time: Instant) {
        warmUpStates[index] = completion.isSuccess ? .going : .failing
        guard case .response(let response) = completion.outcome, response.status == 429 else { return }
        let pause = response.header("Retry-After").flatMap { RetryAfter.parse($0, unixNow: Int64(Date().timeIntervalSince1970)) } ?? .seconds(1)
        let place = addressPlace(of: index)
        let gate = warmUpGates[place] ?? (next: time, gap: warmUpGap)
        // One slow-down a pause: 429s to requests sent before it add none.
        let slows = time >= gate.next
        let gap = slows ? max(TimeSpan(microseconds: gate.gap.microseconds * 2), .milliseconds(100)) : gate.gap
        // The refused install's own retry goes after about the pause (its SDK's rule); the
        // address's next install a gap after that, not beside it.
        warmUpGates[place] = (next: max(gate.next, time + min(pause, .seconds(60)) + gap), gap: gap)
        if slows { metrics.increment("warmUp.slowedOn429") }
    }
}
