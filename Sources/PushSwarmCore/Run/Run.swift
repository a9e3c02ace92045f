import Foundation
import PushSwarmMetrics

/// Runs a scenario: one discrete-event loop over one scheduler, the same in both clocks. Devices
/// are the same actors; only the transport differs (in-process mock in simulated time, sockets
/// in wall time). In simulated time the same scenario and seed give the same result.
///
/// Events are handled one at a time in (time, scheduling order), which is what makes the mock's
/// decisions (a rate limiter's, a fault's) reproducible in simulated time; a day of a
/// 10,000-device fleet takes seconds. In wall time an event is handed to its device with its
/// scheduled time as `now`, so a request's latency counts from when the device wanted it sent,
/// however late the loop got to it.
public final class Run {
    private enum Item {
        case device(Int, VirtualDevice.Event)
        case campaign(Int)
        case transportTimer(UInt64)
        /// The next open-model arrival of group number `group`.
        case arrival(group: Int)
        /// Wall time: wakes the loop each second to report progress while nothing else is due.
        case progressTick
    }

    private struct SocketKey: Hashable {
        var device: Int
        var socket: UInt64
    }

    private let scenario: Scenario
    private let fleet: Fleet
    private let transport: any RunTransport
    /// The built-in mocks (nil against a real target: no ledgers, no campaigns).
    private let mocks: MockFleet?
    private var queue = EventQueue<Item>()
    private var devices: [VirtualDevice] = []
    private var sources: [SourceAddress] = []
    private var platforms: [String] = []
    private var groupIndices: [Int] = []
    /// The part of the fleet this run holds (all of it unless it is a shard).
    private let shard: Shard?
    /// The fleet index of this run's device 0. Devices are numbered from 0 within the run;
    /// transports and randomness see fleet indices.
    private var firstDevice = 0
    private var deviceCount = 0
    /// Fleet indices of each group's devices, the whole fleet's (open-model arrivals go round robin
    /// over them; a shard skips the arrivals that land on other shards' devices).
    private var groupDevices: [[Int]] = []
    private var arrivalCursor: [Int] = []
    private var workloadRandom: SeededRandom
    /// Closed-model devices, their think time and their own draws of it.
    private var closedLoop: [Int: (think: Distribution, random: SeededRandom)] = [:]
    private var pushGateway: [String: Int] = [:]
    private var metrics = RunMetrics()
    private var confirmed = Set<LedgerKey>()
    /// Each receiving device's draws for push delivery (delay, reachability).
    private var deliveryRandom: [Int: SeededRandom] = [:]
    private var nextNotificationID: UInt64 = 0
    private var inFlight = 0
    /// Socket handshakes under way: their operation and intended start.
    private var opening: [SocketKey: (operation: String, sentAt: Instant)] = [:]
    private var openSockets = Set<SocketKey>()
    private var peakOpenSockets = 0
    /// The timeline interval each device last sent in (to count active devices per interval).
    private var lastActiveInterval: [Int32] = []

    /// Called about once a second of wall time with the run's progress (the live line, the
    /// metrics endpoint); set before `run()`.
    public var onProgress: ((RunProgress) -> Void)?
    private var nextProgressReport = Date.distantPast
    private var eventsSinceProgressCheck = 0

    /// An open-model arrival reached later than this, in wall time, is a missed start.
    static let maximumStartLag = TimeSpan.seconds(1)

    public init(scenario: Scenario, transport: any RunTransport, mocks: MockFleet?, shard: Shard? = nil) {
        self.scenario = scenario
        self.transport = transport
        self.mocks = mocks
        self.shard = shard
        fleet = Fleet(scenario: scenario)
        workloadRandom = SeededRandom(seed: scenario.seed, stream: .delivery, index: 1)
        metrics.timeline = Timeline(intervalMicroseconds: Timeline.interval(forRunMicroseconds: scenario.duration.microseconds))
    }

    /// A simulated-time run against the built-in mocks.
    public static func simulated(_ scenario: Scenario, shard: Shard? = nil) -> Run {
        let mocks = MockFleet(scenario: scenario)
        return Run(scenario: scenario, transport: SimulatedTransport(scenario: scenario, mocks: mocks), mocks: mocks, shard: shard)
    }

    /// This run's number for fleet device `global`, when the run holds it.
    private func localIndex(_ global: Int) -> Int? {
        let local = global - firstDevice
        return (0..<deviceCount).contains(local) ? local : nil
    }

    public func run() async -> RunResult {
        let wallStart = Date()
        let cpuClockStart = clock()
        var end = Instant.start + scenario.duration
        let range = shard?.devices(of: scenario.devices, devicesPerSource: scenario.network.devicesPerSourceAddress) ?? 0..<scenario.devices
        firstDevice = range.lowerBound
        deviceCount = range.count
        devices.reserveCapacity(deviceCount)
        lastActiveInterval = Array(repeating: -1, count: deviceCount)
        for index in 0..<deviceCount {
            let profile = fleet.profile(at: firstDevice + index)
            let device = fleet.makeDevice(profile)
            devices.append(device)
            sources.append(profile.source)
            platforms.append(profile.platform)
            groupIndices.append(profile.groupIndex)
            let (actions, known) = await device.start(now: .start)
            if let known, let mocks, let host = mocks.index(of: profile.platform) { mocks.knowDevice(platform: host, known) }
            execute(actions, device: index, now: .start, isDraining: false)
        }
        for (index, campaign) in scenario.campaigns.enumerated() {
            queue.schedule(.campaign(index), at: Instant.start + campaign.at)
        }
        startWorkloads()
        if onProgress != nil && scenario.clock == .wall { queue.schedule(.progressTick, at: Instant.start + .seconds(1)) }

        var now = Instant.start
        var interrupted = false
        while true {
            for arrival in transport.takeArrived() {
                let item: Item = switch arrival.payload {
                case .completion(let completion): .device(arrival.device - firstDevice, .completion(completion))
                case .socket(let event): .device(arrival.device - firstDevice, .socket(event))
                case .timer(let token): .transportTimer(token)
                }
                queue.schedule(item, at: max(arrival.at, now))
            }
            if !interrupted && transport.isInterrupted {
                interrupted = true
                end = min(end, now)
            }
            if inFlight == 0 && (queue.nextTime.map { $0 > end } ?? true) {
                // Nothing more to do in the run: wall time still runs to its end, and a service
                // may still say something on an open socket meanwhile.
                if now < end && !interrupted {
                    now = max(now, await transport.wait(until: end))
                    if now < end { continue }
                }
                break
            }
            guard let next = queue.nextTime else {
                now = max(now, await transport.wait(until: nil))
                continue
            }
            if next > now {
                now = max(now, await transport.wait(until: next))
                // Woken early by an arrival: take it first.
                if now < next { continue }
            }
            guard let (time, item) = queue.popNext() else { break }
            let isDraining = time > end
            if onProgress != nil { reportProgress(at: time, end: end) }
            // How late the generator starts what was due (wall time): the run's own saturation.
            let lag = scenario.clock == .wall && !isDraining ? transport.currentTime - time : .zero
            if scenario.clock == .wall && !isDraining {
                metrics.recordDuration("generatorLag", microseconds: UInt64(max(0, lag.microseconds)))
            }
            if isDraining && inFlight == 0 { break }
            switch item {
            case .device(let index, let event):
                switch event {
                case .completion(let completion):
                    inFlight -= 1
                    record(completion, at: time)
                case .socket(let socketEvent):
                    // Replies and closes still count after the end; they finish what was sent.
                    recordSocket(socketEvent, device: index, at: time)
                case .lifecycle, .clientTimer:
                    if isDraining { continue }
                }
                let actions = await devices[index].handle(event, now: time)
                execute(actions, device: index, now: time, isDraining: isDraining)
                if case .completion = event, !isDraining, var closed = closedLoop[index], await devices[index].pendingRequests == 0 {
                    // A closed-model user got every answer: think, then the next event.
                    let think = closed.think.sampleSpan(using: &closed.random)
                    closedLoop[index] = closed
                    queue.schedule(.device(index, .lifecycle(.workloadEvent)), at: time + think)
                }
            case .campaign(let index):
                guard !isDraining else { continue }
                launch(scenario.campaigns[index], now: time)
            case .transportTimer(let token):
                guard !isDraining else { continue }
                transport.timerFired(token, at: time)
            case .progressTick:
                if time + .seconds(1) <= end { queue.schedule(.progressTick, at: time + .seconds(1)) }
            case .arrival(let group):
                guard !isDraining, case .open(let workload) = scenario.groups[group].workload, !groupDevices[group].isEmpty else { continue }
                if let next = workload.nextArrival(after: time - .start, random: &workloadRandom), Instant.start + next <= end {
                    queue.schedule(.arrival(group: group), at: Instant.start + next)
                }
                let members = groupDevices[group]
                let global = members[arrivalCursor[group] % members.count]
                arrivalCursor[group] += 1
                // Another shard's device: that shard sends it.
                guard let index = localIndex(global) else { continue }
                // An arrival the generator reaches more than a second late did not start when it
                // should have: counted as missed, not sent late (as load testers drop iterations).
                if lag > Self.maximumStartLag {
                    metrics.increment("workload.missedStarts")
                    continue
                }
                metrics.increment("workload.arrivals")
                let actions = await devices[index].handle(.lifecycle(.workloadEvent), now: time)
                execute(actions, device: index, now: time, isDraining: false)
            }
        }
        transport.closeAllSockets()
        if peakOpenSockets > 0 { metrics.counters["sockets.peakOpen"] = UInt64(peakOpenSockets) }
        let interval = metrics.timeline.intervalMicroseconds
        metrics.timeline.fit(to: Int(max(1, ((end - .start).microseconds + interval - 1) / interval)))

        var pending = 0
        for device in devices { pending += await device.pendingRequests }
        if interrupted { metrics.increment("run.interrupted") }
        var cpuBusy: Double?
        if scenario.clock == .wall {
            let elapsed = Date().timeIntervalSince(wallStart)
            let cpuSeconds = Double(clock() - cpuClockStart) / Double(CLOCKS_PER_SEC)
            if elapsed > 0 { cpuBusy = cpuSeconds / elapsed / Double(ProcessInfo.processInfo.activeProcessorCount) }
        }
        var result = RunResult(
            scenario: scenario.name, seed: scenario.seed, clock: scenario.clock, devices: deviceCount,
            duration: end - .start, wallSeconds: Date().timeIntervalSince(wallStart), metrics: metrics,
            ledgers: mocks?.ledgers ?? [:], confirmedKeys: confirmed, pendingAtEnd: pending
        )
        result.cpuBusy = cpuBusy
        return result
    }

    /// Reports progress when a second of wall time has passed since the last report (checking the
    /// clock every 256 events in simulated time, where events are cheap).
    private func reportProgress(at time: Instant, end: Instant) {
        eventsSinceProgressCheck += 1
        guard scenario.clock == .wall || eventsSinceProgressCheck >= 256 else { return }
        eventsSinceProgressCheck = 0
        let wallNow = Date()
        guard wallNow >= nextProgressReport, let onProgress else { return }
        nextProgressReport = wallNow.addingTimeInterval(1)
        onProgress(RunProgress(elapsed: min(time, end) - .start, duration: end - .start, metrics: metrics, devices: deviceCount))
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
            case .duration(let name, let span):
                metrics.recordDuration(name, microseconds: UInt64(max(0, span.microseconds)))
            case .drop(let reason):
                metrics.recordDrop(reason: reason)
            case .backoff(let delay, let retryNumber):
                metrics.recordBackoff(microseconds: UInt64(max(0, delay.microseconds)), retryNumber: retryNumber)
            case .confirmed(let key):
                confirmed.insert(key)
            case .pushAddress(let old, let new):
                if let old, pushGateway[old] == index { pushGateway[old] = nil }
                pushGateway[new] = index
            case .openSocket(let open):
                guard !isDraining else { continue }
                recordSent(operation: open.operation, retryNumber: 0, device: index, at: now)
                inFlight += 1
                opening[SocketKey(device: index, socket: open.id)] = (open.operation, now)
                transport.openSocket(open, device: firstDevice + index, platform: platforms[index], source: sources[index], at: now)
            case .sendOnSocket(let socket, let text, let operation):
                guard !isDraining else { continue }
                if let operation { recordSent(operation: operation, retryNumber: 0, device: index, at: now) }
                transport.sendOnSocket(socket, text: text, device: firstDevice + index, at: now)
            case .closeSocket(let socket):
                if openSockets.remove(SocketKey(device: index, socket: socket)) != nil { metrics.increment("sockets.closedByClient") }
                transport.closeSocket(socket, device: firstDevice + index, at: now)
            case .completed(let completion):
                record(completion, at: now)
            }
        }
    }

    /// Schedules each group's load shape: the first arrival of an open model, the first event of
    /// each closed-model user.
    private func startWorkloads() {
        groupDevices = Array(repeating: [], count: scenario.groups.count)
        arrivalCursor = Array(repeating: 0, count: scenario.groups.count)
        guard scenario.groups.contains(where: { $0.workload != .lifecycle }) else { return }
        if shard == nil {
            for (index, group) in groupIndices.enumerated() { groupDevices[group].append(index) }
        } else {
            // A shard needs the whole fleet's groups to know whose turn each arrival is.
            for global in 0..<scenario.devices { groupDevices[fleet.groupIndex(at: global)].append(global) }
        }
        for (number, group) in scenario.groups.enumerated() {
            switch group.workload {
            case .lifecycle:
                break
            case .open(let workload):
                if let first = workload.nextArrival(after: .zero, random: &workloadRandom) {
                    queue.schedule(.arrival(group: number), at: Instant.start + first)
                }
            case .closed(let workload):
                for global in groupDevices[number].prefix(workload.concurrency) {
                    guard let index = localIndex(global) else { continue }
                    var random = SeededRandom(seed: scenario.seed, stream: .workload, index: UInt64(global))
                    // Users start spread over the first think time, not all in one microsecond.
                    let offset = workload.thinkTime.sampleSpan(using: &random)
                    closedLoop[index] = (workload.thinkTime, random)
                    queue.schedule(.device(index, .lifecycle(.workloadEvent)), at: Instant.start + workload.start + TimeSpan(microseconds: offset.microseconds / 2))
                }
            }
        }
    }

    private func recordSent(operation: String, retryNumber: Int, device index: Int, at now: Instant) {
        let microseconds = (now - .start).microseconds
        metrics.recordSent(operation: operation, retryNumber: retryNumber, at: microseconds)
        let interval = metrics.timeline.index(at: microseconds)
        if lastActiveInterval[index] != Int32(interval) {
            lastActiveInterval[index] = Int32(interval)
            metrics.timeline.recordDeviceActive(interval: interval)
        }
    }

    private func send(_ outgoing: OutgoingRequest, device index: Int, now: Instant) {
        recordSent(operation: outgoing.operation, retryNumber: outgoing.retryNumber, device: index, at: now)
        inFlight += 1
        if let (completion, at) = transport.send(outgoing, device: firstDevice + index, platform: platforms[index], source: sources[index], at: now) {
            queue.schedule(.device(index, .completion(completion)), at: at)
        }
    }

    private func record(_ completion: ExchangeCompletion, at now: Instant) {
        let at = (now - .start).microseconds
        switch completion.outcome {
        case .response(let response):
            metrics.recordResponse(
                operation: completion.operation, status: response.status,
                latencyMicroseconds: UInt64(max(0, (now - completion.sentAt).microseconds)),
                serviceMicroseconds: completion.timings.map { UInt64(max(0, $0.service.microseconds)) },
                connectMicroseconds: completion.timings?.connect.map { UInt64(max(0, $0.microseconds)) },
                // Time to first byte is a socket's measure; simulated time has none.
                firstByteMicroseconds: scenario.clock == .wall ? completion.timings.map { UInt64(max(0, $0.firstByte.microseconds)) } : nil,
                at: at
            )
        case .transportError(let reason):
            metrics.recordTransportError(operation: completion.operation, reason: reason, at: at)
        case .timeout:
            metrics.recordTimeout(operation: completion.operation, at: at)
        }
    }

    /// Accounts for a socket's handshake ending, and counts sockets open at once.
    private func recordSocket(_ event: SocketEvent, device index: Int, at now: Instant) {
        let key = SocketKey(device: index, socket: event.socket)
        switch event {
        case .opened:
            guard let (operation, sentAt) = opening.removeValue(forKey: key) else { return }
            inFlight -= 1
            // A handshake's answer is 101 Switching Protocols.
            record(ExchangeCompletion(requestID: event.socket, operation: operation, sentAt: sentAt, outcome: .response(Response(status: 101))), at: now)
            openSockets.insert(key)
            metrics.increment("sockets.opened")
            peakOpenSockets = max(peakOpenSockets, openSockets.count)
        case .failed(_, let outcome):
            guard let (operation, sentAt) = opening.removeValue(forKey: key) else { return }
            inFlight -= 1
            record(ExchangeCompletion(requestID: event.socket, operation: operation, sentAt: sentAt, outcome: outcome), at: now)
        case .closed:
            if openSockets.remove(key) != nil { metrics.increment("sockets.closedByPeer") }
        case .message:
            break
        }
    }

    private func launch(_ campaign: Campaign, now: Instant) {
        guard let mocks, let host = mocks.index(of: campaign.platform) else {
            // Against a real target the platform, not PushSwarm, sends campaigns.
            metrics.increment("campaigns.notLaunchedExternalTarget")
            return
        }
        let (messages, sessionMessages) = mocks.launchCampaign(platform: host, campaign, at: now)
        // One event for the whole run: the first shard counts it, so merged shards count it once.
        if (shard?.index ?? 1) == 1 { metrics.increment("campaigns.launched") }
        if !sessionMessages.isEmpty {
            metrics.increment("campaigns.socketMessages", by: UInt64(sessionMessages.count))
            transport.deliverFromService(sessionMessages, platform: host, at: now)
        }
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
                tapRate: campaign.tapRate, timeToOpen: campaign.timeToOpen, isDataOnly: message.isDataOnly
            )
            var random = deliveryRandom[index] ?? SeededRandom(seed: scenario.seed, stream: .pushDelivery, index: UInt64(firstDevice + index))
            defer { deliveryRandom[index] = random }
            var delay = campaign.deliveryDelay.sampleSpan(using: &random)
            let behaviour = scenario.groups[groupIndices[index]].behaviour
            if random.chance(behaviour.unreachableShare) {
                // Not connected to the provider: held until the device is back, within the push's time to live.
                let offline = behaviour.offlineDuration.sampleSpan(using: &random)
                guard offline <= campaign.timeToLive else {
                    metrics.increment("notifications.expired")
                    continue
                }
                metrics.increment("notifications.heldWhileUnreachable")
                delay = delay + offline
            }
            queue.schedule(.device(index, .lifecycle(.notificationDelivered(notification))), at: now + delay)
        }
    }
}
