import PushSwarmMetrics

/// Load shapes other than the lifecycle (open-model arrival streams, closed-model users) and
/// the ceiling on the requests devices hold waiting.
extension Partition {
    /// The address is over its share of the ceiling on waiting requests: the device that added
    /// to it drops its oldest waiting requests (not one in flight) until it is back, each counted
    /// as dropped (`waitingCeiling`). Memory stays within the run's estimate whatever a failing
    /// service or a scenario makes the devices keep.
    func shedOldest(of index: Int, at time: Instant, isDraining: Bool) {
        let device = slots[index].device
        var isOver = true
        while isOver {
            let before = device.pendingRequestsOnExecutor()
            guard let actions = device.assumeIsolated({ $0.dropOldestWaiting(reason: "waitingCeiling") }) else { return }
            execute(actions, device: index, now: time, isDraining: isDraining)
            isOver = ceiling.add(device.pendingRequestsOnExecutor() - before, device: index)
        }
    }

    /// Starts counting waiting requests against the ceiling (`WaitingCeiling`), for every
    /// workload, from what the devices' first events already queued.
    func startWaitingCeiling() {
        ceiling.start(pending: { slots[$0].device.pendingRequestsOnExecutor() }, devices: slots.count)
    }

    /// Schedules each group's load shape: the arrival streams of an open model, the first event
    /// of each closed-model user.
    func startWorkloads() {
        guard scenario.groups.contains(where: { $0.workload != .lifecycle }) else { return }
        groupMembers = Array(repeating: [], count: scenario.groups.count)
        for (index, slot) in slots.enumerated() { groupMembers[Int(slot.group)].append(Int32(index)) }
        for (number, group) in scenario.groups.enumerated() {
            let members = groupMembers[number]
            switch group.workload {
            case .lifecycle:
                break
            case .open(let workload):
                let clock = ArrivalClock(workload)
                let major = UInt16(number)
                guard !members.isEmpty else { continue }
                if !workload.isPoisson {
                    let pattern = ArrivalStream.Pattern.even(EvenTurns(members: positions.total[number], first: positions.before[number], count: members.count))
                    arrivalStreams.append(ArrivalStream(group: number, devices: 0..<members.count, rank: EventRank(major: major, minor: 0), clock: clock, pattern: pattern))
                    continue
                }
                // One stream per NAT address: its devices of the group are a run of `members`.
                var first = 0
                while first < members.count {
                    let address = slots[Int(members[first])].source
                    var last = first + 1
                    while last < members.count && slots[Int(members[last])].source == address { last += 1 }
                    let random = SeededRandom(seed: scenario.seed, stream: .arrivals, index: UInt64(number) << 32 | UInt64(address.index))
                    let scale = Double(positions.total[number]) / Double(last - first)
                    let pattern = ArrivalStream.Pattern.poisson(area: 0, scale: scale, random: random, turn: 0)
                    arrivalStreams.append(ArrivalStream(group: number, devices: first..<last, rank: EventRank(major: major, minor: address.index), clock: clock, pattern: pattern))
                    first = last
                }
            case .closed(let workload):
                // The group's first `concurrency` devices of the fleet are its users.
                for local in members.prefix(max(0, workload.concurrency - positions.before[number])) {
                    let index = Int(local)
                    let global = range.lowerBound + index
                    var random = SeededRandom(seed: scenario.seed, stream: .workload, index: UInt64(global))
                    // Users start spread over the first think time, not all in one microsecond.
                    let offset = workload.thinkTime.sampleSpan(using: &random)
                    closedLoop[index] = (workload.thinkTime, random)
                    schedule(.lifecycle(.workloadEvent), device: index, at: Instant.start + workload.start + TimeSpan(microseconds: offset.microseconds / 2))
                }
            }
        }
        for number in arrivalStreams.indices { scheduleNextArrival(number) }
    }

    /// Queues stream `number`'s next arrival, at its exact instant rounded to the microsecond,
    /// unless it falls after the end.
    func scheduleNextArrival(_ number: Int) {
        guard let seconds = arrivalStreams[number].advance() else { return }
        let microseconds = (seconds * 1_000_000).rounded()
        guard microseconds <= Double(end.microseconds) else { return }
        let at = Instant(microseconds: Int64(microseconds))
        let stream = arrivalStreams[number]
        queue.schedule(.arrival(stream: number), at: at, rank: stream.rank, hint: groupMembers[stream.group][stream.due])
    }
}
