import Foundation
import PushSwarmMetrics

/// Runs a scenario in simulated time: a discrete-event loop over one scheduler, devices answered
/// by in-process mock services, no real waiting. The same scenario and seed give the same result.
///
/// Events are handled one at a time in (time, scheduling order), which is what makes the mock's
/// decisions (a rate limiter's, a fault's) reproducible; a day of a 10,000-device fleet takes
/// seconds.
public final class SimulatedRun {
    private enum Item {
        case device(Int, VirtualDevice.Event)
        case campaign(Int)
    }

    private let scenario: Scenario
    private let fleet: Fleet
    private let clock = SimulatedClock()
    private var queue = EventQueue<Item>()
    private var devices: [VirtualDevice] = []
    private var sources: [SourceAddress] = []
    /// Each device's index into `hosts`.
    private var hostOfDevice: [Int] = []
    /// One mock per platform, in an array so that each is mutated in place: copying one out of a
    /// dictionary and back would copy its whole ledger on every request.
    private var hosts: [MockHost] = []
    private var hostIndex: [String: Int] = [:]
    private var pushGateway: [String: Int] = [:]
    private var metrics = RunMetrics()
    private var confirmed = Set<LedgerKey>()
    private var networkRandom: SeededRandom
    private var deliveryRandom: SeededRandom
    private var nextNotificationID: UInt64 = 0
    private var inFlight = 0

    public init(scenario: Scenario) {
        self.scenario = scenario
        fleet = Fleet(scenario: scenario)
        networkRandom = SeededRandom(seed: scenario.seed, stream: .network)
        deliveryRandom = SeededRandom(seed: scenario.seed, stream: .delivery)
        for name in scenario.platforms.keys.sorted() {
            guard let configuration = scenario.platforms[name] else { continue }
            hostIndex[name] = hosts.count
            hosts.append(MockHost(
                service: configuration.makeMock(), behaviour: configuration.mockBehaviour,
                random: SeededRandom(seed: scenario.seed, stream: .mock, index: UInt64(hosts.count))
            ))
        }
    }

    public func run() async -> RunResult {
        let wallStart = Date()
        let end = Instant.start + scenario.duration
        devices.reserveCapacity(scenario.devices)
        for index in 0..<scenario.devices {
            let profile = fleet.profile(at: index)
            let device = fleet.makeDevice(profile)
            devices.append(device)
            sources.append(profile.source)
            let host = hostIndex[profile.platform] ?? -1
            hostOfDevice.append(host)
            let (actions, known) = await device.start(now: .start)
            if let known, hosts.indices.contains(host) { hosts[host].knowDevice(known) }
            execute(actions, device: index, now: .start, isDraining: false)
        }
        for (index, campaign) in scenario.campaigns.enumerated() {
            queue.schedule(.campaign(index), at: Instant.start + campaign.at)
        }

        while let next = queue.nextTime {
            await clock.wait(until: next)
            guard let (now, item) = queue.popNext() else { break }
            let isDraining = now > end
            if isDraining && inFlight == 0 { break }
            switch item {
            case .device(let index, let event):
                if case .completion(let completion) = event {
                    inFlight -= 1
                    record(completion, now: now)
                } else if isDraining {
                    continue
                }
                let actions = await devices[index].handle(event, now: now)
                execute(actions, device: index, now: now, isDraining: isDraining)
            case .campaign(let index):
                guard !isDraining else { continue }
                launch(scenario.campaigns[index], now: now)
            }
        }

        var pending = 0
        for device in devices { pending += await device.pendingRequests }
        return RunResult(
            scenario: scenario.name, seed: scenario.seed, clock: .simulated, devices: scenario.devices,
            duration: scenario.duration, wallSeconds: Date().timeIntervalSince(wallStart), metrics: metrics,
            ledgers: hostIndex.mapValues { hosts[$0].ledger }, confirmedKeys: confirmed, pendingAtEnd: pending
        )
    }

    private func execute(_ actions: [VirtualDevice.Action], device index: Int, now: Instant, isDraining: Bool) {
        for action in actions {
            switch action {
            case .send(let outgoing):
                // After the end, requests are not started; they stay in the device's queue and are
                // reported as pending.
                guard !isDraining else { continue }
                send(outgoing, device: index, now: now)
            case .schedule(let event, let time):
                guard !isDraining else { continue }
                queue.schedule(.device(index, event), at: max(time, now))
            case .count(let name):
                metrics.increment(name)
            case .drop(let reason):
                metrics.recordDrop(reason: reason)
            case .backoff(let delay, _):
                metrics.recordBackoff(microseconds: UInt64(max(0, delay.microseconds)))
            case .confirmed(let key):
                confirmed.insert(key)
            case .pushAddress(let old, let new):
                if let old, pushGateway[old] == index { pushGateway[old] = nil }
                pushGateway[new] = index
            }
        }
    }

    private func send(_ outgoing: OutgoingRequest, device index: Int, now: Instant) {
        metrics.recordSent(operation: outgoing.operation, retryNumber: outgoing.retryNumber)
        inFlight += 1
        let outcome: ExchangeOutcome
        let completedAt: Instant
        if networkRandom.chance(scenario.network.errorRate) {
            // No route or a dropped connection: the client learns quickly, the service sees nothing.
            outcome = .transportError(reason: "networkError")
            completedAt = now + .milliseconds(200)
        } else if hosts.indices.contains(hostOfDevice[index]) {
            let (response, latency) = hosts[hostOfDevice[index]].exchange(outgoing.request, from: sources[index], at: now)
            if latency > outgoing.timeout {
                outcome = .timeout
                completedAt = now + outgoing.timeout
            } else {
                outcome = .response(response)
                completedAt = now + latency
            }
        } else {
            outcome = .transportError(reason: "noService")
            completedAt = now
        }
        let completion = ExchangeCompletion(requestID: outgoing.id, operation: outgoing.operation, sentAt: now, outcome: outcome)
        queue.schedule(.device(index, .completion(completion)), at: completedAt)
    }

    private func record(_ completion: ExchangeCompletion, now: Instant) {
        switch completion.outcome {
        case .response(let response):
            metrics.recordResponse(
                operation: completion.operation, status: response.status,
                latencyMicroseconds: UInt64(max(0, (now - completion.sentAt).microseconds))
            )
        case .transportError(let reason):
            metrics.recordTransportError(operation: completion.operation, reason: reason)
        case .timeout:
            metrics.recordTimeout(operation: completion.operation)
        }
    }

    private func launch(_ campaign: Campaign, now: Instant) {
        guard let host = hostIndex[campaign.platform] else { return }
        let messages = hosts[host].launchCampaign(campaign, at: now)
        metrics.increment("campaigns.launched")
        for message in messages {
            metrics.increment("notifications.sent")
            guard let index = pushGateway[message.pushToken] else {
                // The token is stale (rotated, never reported): the provider cannot deliver.
                metrics.increment("notifications.undeliverable")
                continue
            }
            nextNotificationID += 1
            let notification = PushNotification(
                id: nextNotificationID, campaign: campaign.name, data: message.data,
                tapRate: campaign.tapRate, timeToOpen: campaign.timeToOpen
            )
            let delay = campaign.deliveryDelay.sampleSpan(using: &deliveryRandom)
            queue.schedule(.device(index, .lifecycle(.notificationDelivered(notification))), at: now + delay)
        }
    }
}
