import Foundation
import PushSwarmSystem
import Synchronization
import Testing
@testable import PushSwarmCore
import PushSwarmMetrics
@testable import PushSwarmPlatforms

/// A run is split into shared-nothing partitions that run concurrently, each on its own thread;
/// in simulated time the same scenario and seed give the same summary whatever their number.
@Suite struct PartitionTests {
    /// summary.json's text without what differs between any two runs (wall time, run id).
    func summaryText(_ scenario: Scenario, partitions: Int) async -> String {
        var summary = await Run.simulated(scenario, partitions: partitions).run().summary(runID: "test", version: "test")
        summary.wallSeconds = 0
        return summary.jsonText
    }

    /// Every platform (Smartico's WebSockets, so `sockets.peakOpen` too), campaigns, retries.
    @Test(arguments: ["quickstart", "all-platforms", "retry-storm", "smartico"])
    func theSameSummaryForOneTwoAndFourPartitions(name: String) async throws {
        let scenario = try loadScenario(name) { object in
            object["devices"] = 1_600
            if name == "all-platforms" || name == "quickstart" { object["duration"] = "20h" }
        }
        #expect(Run.partitionCount(for: scenario, requested: 4).count == 4)
        let one = await summaryText(scenario, partitions: 1)
        #expect(one.contains("\"sent\""))
        for partitions in [2, 4] {
            let text = await summaryText(scenario, partitions: partitions)
            #expect(text == one, "\(name): \(partitions) partitions")
        }
    }

    /// Three groups behind NAT addresses of 7, the spec's per-address limit answering 429s that
    /// are retried: evenly spaced arrivals, Poisson arrivals, and a closed model's users.
    static func mixedWorkloads() throws -> Scenario {
        try loadScenario("capacity-events") { object in
            object["devices"] = 1_400
            object["duration"] = "40s"
            object["network"] = ["devicesPerSourceIP": 7]
            object["groups"] = [
                ["name": "even", "share": 2, "platform": "smartapppush", "os": "android", "workload": ["model": "open", "rate": ["from": "100/s", "to": "600/s", "over": "30s"]]],
                ["name": "poisson", "share": 1, "platform": "smartapppush", "os": "ios", "workload": ["model": "open", "rate": "250/s", "arrivals": "poisson"]],
                ["name": "closed", "share": 1, "platform": "smartapppush", "os": "android", "workload": ["model": "closed", "concurrency": 150, "thinkTime": "500ms"]],
            ]
            object["platforms"] = ["smartapppush": ["mock": ["latency": "30ms"]]]
        }
    }

    /// Issue 34: each partition computes the arrivals of its own devices only (evenly spaced ones
    /// by their position in the group, Poisson ones per NAT address), and the run is the same.
    @Test func openAndClosedWorkloadsGiveTheSameSummaryForOneTwoAndFourPartitions() async throws {
        let scenario = try Self.mixedWorkloads()
        let one = await summaryText(scenario, partitions: 1)
        let summary = try JSONParser.parse(Array(one.utf8))
        #expect((summary["workload"]?["arrivals"]?.numberValue ?? 0) > 10_000, "\(one)")
        #expect((summary["requests"]?["byStatus"]?["429"]?.numberValue ?? 0) > 100, "the per-address limit answers 429s")
        for partitions in [2, 4] {
            let text = await summaryText(scenario, partitions: partitions)
            #expect(text == one, "\(partitions) partitions")
        }
    }


    func storage(_ text: String) -> UnsafeRawPointer? {
        guard text.utf8.count > 15 else { return nil }
        return text.utf8.withContiguousStorageIfAvailable { UnsafeRawPointer($0.baseAddress) } ?? nil
    }

    /// Each partition makes its devices and mocks from `Scenario.partitionCopy`: equal values
    /// whose objects and strings are its own, so that no reference count a device or mock changes
    /// on every event is another partition's (a cache line moved between cores on each retain).
    @Test func aPartitionsCopyOfTheScenarioIsEqualAndSharesNoStorage() throws {
        let scenario = try loadScenario("quickstart") { object in
            object["locales"] = [["country": "US", "language": "en", "timezone": "America/Los_Angeles", "share": 1]]
            object["platforms"] = ["smartapppush": [
                "tenantId": "a-tenant-of-many-bytes", "apiKey": "sap_an_api_key_of_many_bytes", "appId": "an-app-of-many-bytes",
            ]]
        }
        let copy = scenario.partitionCopy()
        #expect(copy.locales == scenario.locales)
        for (original, copied) in zip(scenario.locales, copy.locales) {
            #expect(original !== copied)
            #expect(storage(copied.timeZone) != nil && storage(copied.timeZone) != storage(original.timeZone))
        }
        #expect(copy.groups.count == scenario.groups.count && !copy.groups.isEmpty)
        for (original, copied) in zip(scenario.groups, copy.groups) {
            #expect(copied.behaviour == original.behaviour)
            let names = zip(original.behaviour.eventMix, copied.behaviour.eventMix).filter { storage($0.0.name) != nil }
            #expect(!names.isEmpty)
            for (a, b) in names { #expect(storage(a.name) != storage(b.name), "\(a.name)") }
            let profile = try #require(original.client as? SmartAppPushClientProfile)
            let copiedProfile = try #require(copied.client as? SmartAppPushClientProfile)
            #expect(copiedProfile.settings.tenantID == profile.settings.tenantID)
            #expect(copiedProfile.sharedSettings !== profile.sharedSettings)
            #expect(storage(copiedProfile.sharedSettings.value.apiKey) != storage(profile.sharedSettings.value.apiKey))
        }
        let configuration = try #require(scenario.platforms["smartapppush"] as? SmartAppPushConfiguration)
        let copiedConfiguration = try #require(copy.platforms["smartapppush"] as? SmartAppPushConfiguration)
        let apiKey = storage(copiedConfiguration.settings.apiKey)
        #expect(apiKey != nil && apiKey != storage(configuration.settings.apiKey))
    }

    @Test func partitionsTakeWholeSourceAddressesAndCoverTheFleetOnce() throws {
        var scenario = try loadScenario("quickstart") { $0["devices"] = 1_001 }
        scenario.network.devicesPerSourceAddress = 10
        for shard in [nil, Shard(index: 2, count: 3)] {
            let whole = shard?.devices(of: 1_001, devicesPerSource: 10) ?? 0..<1_001
            for count in [1, 2, 3, 7, 200] {
                let ranges = Run.ranges(scenario, shard: shard, partitions: count)
                #expect(ranges.flatMap { Array($0) } == Array(whole), "\(count) partitions of \(whole)")
                #expect(ranges.allSatisfy { $0.lowerBound % 10 == 0 && !$0.isEmpty })
                #expect(ranges.count == min(count, (whole.count + 9) / 10))
            }
        }
    }

    /// A limit keyed globally is one state for every address: such a scenario runs as one
    /// partition, and says why.
    @Test func aGlobalLimitKeepsTheRunInOnePartition() throws {
        let scenario = try loadScenario("capacity-events")
        let (count, note) = Run.partitionCount(for: scenario, requested: 4)
        #expect(count == 1)
        #expect(note?.contains("keyed globally") == true)
        #expect(Run.partitionCount(for: try loadScenario("quickstart"), requested: 4).count == 4)
    }

    /// Each partition's devices are actors on that partition's thread: the run reaches them there
    /// synchronously, and a caller elsewhere reaches them by hopping onto it.
    @Test func devicesRunOnTheirPartitionsThread() async throws {
        let scenario = try loadScenario("quickstart") { $0["devices"] = 10 }
        let thread = PartitionThread(name: "test-partition")
        defer { thread.stop() }
        let device = Fleet(scenario: scenario).makeDevice(Fleet(scenario: scenario).profile(at: 3), on: thread)
        let onThread = await device.isOnItsExecutor(thread)
        #expect(onThread)
        #expect(!thread.isCurrent)
    }

    /// Issue 36: P partitions run on P threads at once. Each partition's executor here is its own
    /// thread behind a meeting point: the work a run hands it waits there until every partition
    /// has arrived. A run that started its partitions one after another, or ran them on one
    /// thread, would leave the first waiting alone until the deadline (a guard against hanging,
    /// not a wait the passing run takes) and the test red.
    @Test func partitionsRunOnTheirOwnThreadsAtOnce() async throws {
        let scenario = try loadScenario("quickstart") { object in
            object["devices"] = 1_600
            object["duration"] = "20h"
        }
        let meeting = Meeting(expected: 4)
        var setups: [Run.PartitionSetup] = []
        var threads: [PartitionThread] = []
        for (number, range) in Run.ranges(scenario, shard: nil, partitions: 4).enumerated() {
            let thread = PartitionThread(name: "meeting-\(number)")
            threads.append(thread)
            let local = scenario.partitionCopy()
            let mocks = MockFleet(scenario: local)
            let executor = MeetingExecutor(thread: thread, meeting: meeting)
            setups.append(Run.PartitionSetup(executor: executor, transport: SimulatedTransport(scenario: local, mocks: mocks, devices: range), mocks: mocks, devices: range))
        }
        try #require(setups.count == 4)
        let result = await Run(scenario: scenario, partitions: setups, ownedThreads: threads).run()
        #expect(result.metrics.sent > 0)
        let (arrived, met, distinctThreads) = meeting.outcome
        #expect(arrived == 4 && met, "every partition's run started before any of them went on")
        #expect(distinctThreads == 4, "each on its own thread")
    }

    /// Issue 36: a device is reached synchronously only from its partition's thread, and that is
    /// checked in every build (`assumeIsolated` asks the executor), not promised: a call from
    /// another thread stops the process instead of racing the partition.
    @Test func aDeviceReachedOffItsPartitionsThreadStopsTheProcess() async throws {
        await #expect(processExitsWith: .failure) {
            let scenario = try loadScenario("quickstart") { $0["devices"] = 10 }
            let thread = PartitionThread(name: "elsewhere")
            let device = Fleet(scenario: scenario).makeDevice(Fleet(scenario: scenario).profile(at: 3), on: thread)
            _ = device.pendingRequestsOnExecutor()
        }
    }
}

/// Where the partitions of `partitionsRunOnTheirOwnThreadsAtOnce` meet: each arrives, then waits
/// (at most 60 s) until all `expected` have.
final class Meeting: @unchecked Sendable {
    private let condition = NSCondition()
    private let expected: Int
    /// Guarded by `condition`.
    private var arrived = 0
    private var allMet = true
    private var threads = Set<UInt>()

    init(expected: Int) { self.expected = expected }

    func arriveAndWait() {
        condition.lock()
        defer { condition.unlock() }
        arrived += 1
        threads.insert(UInt(pthread_self()))
        condition.broadcast()
        let deadline = Date().addingTimeInterval(60)
        while arrived < expected {
            if !condition.wait(until: deadline) { break }
        }
        if arrived < expected { allMet = false }
    }

    var outcome: (arrived: Int, met: Bool, distinctThreads: Int) {
        condition.lock()
        defer { condition.unlock() }
        return (arrived, allMet, threads.count)
    }
}

/// A partition's thread whose first hand-off of work meets the other partitions' first.
final class MeetingExecutor: PartitionExecutor, @unchecked Sendable {
    let thread: PartitionThread
    let meeting: Meeting

    init(thread: PartitionThread, meeting: Meeting) {
        self.thread = thread
        self.meeting = meeting
    }

    /// Whether the first hand-off is still to come (a simulated run starts as a job, a wall one
    /// as a closure).
    private let first = Mutex(true)

    func enqueue(_ job: consuming ExecutorJob) {
        meetFirst()
        thread.enqueue(job)
    }

    func execute(_ work: @escaping @Sendable () -> Void) {
        meetFirst()
        thread.execute(work)
    }

    /// Queues the meeting before the first work, on the partition's thread.
    private func meetFirst() {
        guard first.withLock({ isFirst in defer { isFirst = false }; return isFirst }) else { return }
        thread.execute { [meeting] in meeting.arriveAndWait() }
    }
    func checkIsolated() { thread.checkIsolated() }
    func isIsolatingCurrentContext() -> Bool? { thread.isCurrent }
}

extension VirtualDevice {
    /// For the test above: whether the actor's code runs on `thread`.
    fileprivate func isOnItsExecutor(_ thread: PartitionThread) -> Bool { thread.isCurrent }
}

/// Offered more than the target answers, an open workload sheds what its devices cannot start
/// instead of queueing it in them: the queues stay bounded and the report counts every arrival.
@Suite struct OverloadTests {
    @Test func arrivalsForBusyDevicesAreShedAndCountedNotQueued() async throws {
        // 20 devices, each busy half a second per request, offered 200 arrivals/s: about 40/s can
        // be sent; the rest queue on their device up to its backlog, then are shed.
        let scenario = try loadScenario("capacity-events") { object in
            object["devices"] = 20
            object["duration"] = "10s"
            object["network"] = ["devicesPerSourceIP": 20]
            object["groups"] = [["name": "load", "platform": "smartapppush", "os": "android", "workload": ["model": "open", "rate": "200/s"]]]
            object["platforms"] = ["smartapppush": ["retry": ["rateLimited": ["maxRetries": 0]], "mock": ["latency": "500ms"]]]
        }
        let summary = await Run.simulated(scenario, partitions: 1).run().summary(runID: "test", version: "test")
        let started = summary.metrics.counters["workload.arrivals"] ?? 0
        let backlog = Partition.maximumBacklog
        #expect(summary.shedArrivals > 1_000, "most arrivals find their device's backlog full")
        #expect(started > 300 && started <= 20 * (10 * 2 + backlog), "a device sends one request per half second, and queues at most its backlog")
        #expect(Int(summary.metrics.sent) + summary.pendingAtEnd == Int(started), "each started arrival is one request, sent or still queued")
        #expect(summary.pendingAtEnd <= 20 * backlog, "at most each device's backlog is left queued at the end")
        #expect(summary.isSaturated == true, "an arrival shed is load not put on")
        let workload = try #require(summary.json["workload"])
        #expect(workload["arrivals"] == .number(Double(started + summary.shedArrivals + summary.missedStarts)))
        #expect(workload["shed"] == .number(Double(summary.shedArrivals)))
    }

    /// Issue 34: a process holds at most `--max-waiting` requests for an open workload (each NAT
    /// address its share); beyond it, arrivals are shed and counted. Per address, so the same
    /// summary for any partition count.
    @Test func arrivalsBeyondTheProcesssCeilingOnWaitingRequestsAreShedTheSameForAnyPartitionCount() async throws {
        // 400 devices behind 10 addresses, each busy half a second per request, offered 2,000/s:
        // without a ceiling each device would hold its backlog of 8 (3,200 waiting).
        var scenario = try loadScenario("capacity-events") { object in
            object["devices"] = 400
            object["duration"] = "10s"
            object["network"] = ["devicesPerSourceIP": 40]
            object["groups"] = [["name": "load", "platform": "smartapppush", "os": "android", "workload": ["model": "open", "rate": "2000/s"]]]
            object["platforms"] = ["smartapppush": ["retry": ["rateLimited": ["maxRetries": 0]], "mock": ["latency": "500ms", "rateLimitPerSecond": 100000]]]
        }
        let free = await Run.simulated(scenario, partitions: 1).run().summary(runID: "test", version: "test")
        #expect(free.metrics.counters["workload.shedAtWaitingCeiling"] == nil, "the default ceiling (100,000) is far away")
        #expect(free.pendingAtEnd > 2_000)
        scenario.maximumWaiting = 1_000
        var texts: [String] = []
        for partitions in [1, 2, 4] {
            var summary = await Run.simulated(scenario, partitions: partitions).run().summary(runID: "test", version: "test")
            #expect((summary.metrics.counters["workload.shedAtWaitingCeiling"] ?? 0) > 1_000, "arrivals shed at the ceiling")
            // Queued at the end (those in flight were answered while the run drained): in flight
            // and queued are at most the ceiling, 100 an address, and nearly every device has
            // one in flight.
            #expect(summary.pendingAtEnd <= 1_000 - 300, "pending \(summary.pendingAtEnd)")
            #expect(summary.pendingAtEnd < free.pendingAtEnd / 2)
            summary.wallSeconds = 0
            texts.append(summary.jsonText)
        }
        #expect(texts[0] == texts[1] && texts[1] == texts[2], "the same summary for 1, 2 and 4 partitions")
    }

    /// Issue 35: SmartAppPush's mock answering 503 to everything, and the documented
    /// `whenExhausted: keepForNextLaunch`: the lifecycle's queues grew to 400 KB a device (832,070
    /// requests for 2,000 devices over 6 h) until the process died. Every workload's waiting
    /// requests are held under the ceiling: a device queueing past its address's share drops its
    /// oldest, counted as `waitingCeiling`; and a full device queue keeps the newest.
    @Test func queuesKeptForTheNextLaunchStayUnderTheCeilingForAnyPartitionCount() async throws {
        var scenario = try loadScenario("quickstart") { object in
            object["devices"] = 400
            object["duration"] = "24h"
            object["network"] = ["devicesPerSourceIP": 20]
            object["groups"] = [["name": "g", "platform": "smartapppush", "os": "android"]]
            object["campaigns"] = []
            object["platforms"] = ["smartapppush": [
                "retry": ["serverError": ["maxRetries": 1, "whenExhausted": "keepForNextLaunch"]],
                "mock": ["http503Rate": 1],
            ]]
        }
        let free = await Run.simulated(scenario, partitions: 1).run().summary(runID: "test", version: "test")
        #expect(free.pendingAtEnd > 1_000, "kept for the next launch, the queues grow: \(free.pendingAtEnd)")
        #expect(free.metrics.droppedByReason["waitingCeiling"] == nil, "the default ceiling (100,000) is far away")
        scenario.maximumWaiting = 400
        var texts: [String] = []
        for partitions in [1, 2, 4] {
            var summary = await Run.simulated(scenario, partitions: partitions).run().summary(runID: "test", version: "test")
            #expect((summary.metrics.droppedByReason["waitingCeiling"] ?? 0) > 100, "the oldest dropped at the ceiling")
            #expect(summary.pendingAtEnd <= 400, "queued and in flight: at most the ceiling, 20 an address (\(summary.pendingAtEnd))")
            let answered = summary.metrics.byStatus.values.reduce(0, +) + summary.metrics.transportErrors + summary.metrics.timeouts
            #expect(summary.metrics.sent == answered, "every request sent is answered")
            summary.wallSeconds = 0
            texts.append(summary.jsonText)
        }
        #expect(texts[0] == texts[1] && texts[1] == texts[2], "the same summary for 1, 2 and 4 partitions")
    }
}
