import Testing
@testable import PushSwarmCore

/// A run is weighed before it starts: refused, with both figures, where it cannot fit.
@Suite struct MemoryEstimateTests {
    let gib = 1 << 30

    @Test func aFleetIsWeighedAgainstEachLimitItMeets() throws {
        let fleet = MemoryEstimate(devices: 10_000_000)
        #expect(fleet.bytes == 64 << 20 + 10_000_000 * 2_048)
        #expect(fleet.refusal(under: MemoryEstimate.Limits()) == nil, "no limit known: no refusal")
        #expect(fleet.refusal(under: MemoryEstimate.Limits(addressSpace: 64 * gib, cgroup: 64 * gib, available: 64 * gib)) == nil)

        let spaceRefusal = try #require(fleet.refusal(under: MemoryEstimate.Limits(addressSpace: 4 * gib)))
        #expect(spaceRefusal.contains("10000000 devices need about 19.1 GiB") && spaceRefusal.contains("limit of 4.0 GiB (ulimit -v)"), "\(spaceRefusal)")
        let machine = try #require(fleet.refusal(under: MemoryEstimate.Limits(cgroup: 8 * gib, available: 12 * gib)))
        #expect(machine.contains("memory limit is 8.0 GiB (cgroup memory.max)") && machine.contains("12.0 GiB available (MemAvailable)"), "\(machine)")

        // Eight processes: each has its own address space (2.4 GiB of devices + 1 GiB reserved
        // fits under 4 GiB), but they share the machine.
        #expect(fleet.refusal(under: MemoryEstimate.Limits(addressSpace: 4 * gib), processes: 8) == nil)
        #expect(fleet.refusal(under: MemoryEstimate.Limits(addressSpace: 4 * gib, available: 12 * gib), processes: 8)?.contains("MemAvailable") == true)
        #expect(MemoryEstimate(devices: 100_000).refusal(under: MemoryEstimate.Limits(addressSpace: 4 * gib, available: 2 * gib)) == nil)
    }

    @Test func theSystemsLimitsAreRead() {
        let limits = MemoryEstimate.Limits.current()
        #expect((limits.available ?? 0) > 0, "MemAvailable is in /proc/meminfo on Linux")
    }

    /// Issue 34: an open workload's waiting requests are weighed too, at their ceiling.
    @Test func anOpenWorkloadsCeilingOnWaitingRequestsIsWeighed() throws {
        let waiting = MemoryEstimate(devices: 20_000, waiting: 100_000)
        #expect(waiting.bytes == 64 << 20 + 20_000 * 2_048 + 100_000 * 1_024)
        let refusal = try #require(waiting.refusal(under: MemoryEstimate.Limits(available: 150 << 20)))
        #expect(refusal.contains("100000 waiting requests at 1024 bytes (--max-waiting)"), "\(refusal)")
        #expect(MemoryEstimate(devices: 20_000).refusal(under: MemoryEstimate.Limits(available: 150 << 20)) == nil)
        #expect(MemoryEstimate.defaultMaximumWaiting(devices: 20_000) == 100_000)
        #expect(MemoryEstimate.defaultMaximumWaiting(devices: 500_000) == 500_000)
    }

    /// Issue 35: a lifecycle fleet's queues grow against a failing service as surely as an open
    /// workload's under overload, so every run is weighed at the ceiling that holds for it: by
    /// default the larger of one a device (at least 100,000) and 8 a device; `--max-waiting`'s
    /// when set.
    @Test func everyRunIsWeighedAtItsWaitingCeiling() throws {
        var scenario = try ScenarioDecoder(platforms: [FakePlatform()]).decode(text: Array(#"""
            {"name": "s", "duration": "1h", "devices": 5, "groups": [{"name": "g", "platform": "fake", "os": "ios"}]}
            """#.utf8))
        #expect(MemoryEstimate(scenario, devices: 1_000).waiting == 100_000)
        #expect(MemoryEstimate(scenario, devices: 1_000_000).waiting == 8_000_000)
        #expect(MemoryEstimate(scenario, devices: 1_000_000).bytes == 64 << 20 + 1_000_000 * 2_048 + 8_000_000 * 1_024)
        scenario.maximumWaiting = 5_000
        #expect(MemoryEstimate(scenario, devices: 1_000).waiting == 5_000)
        #expect(MemoryEstimate(scenario, devices: 1_000_000).waiting == 5_000)
        let refusal = try #require(MemoryEstimate(devices: 1_000_000, waiting: 8_000_000).refusal(under: MemoryEstimate.Limits(addressSpace: 4 * gib)))
        #expect(refusal.contains("--max-waiting N"), "the refusal names the way to a smaller ceiling: \(refusal)")
    }
}
