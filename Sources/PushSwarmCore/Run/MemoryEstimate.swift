import Foundation
import PushSwarmSystem

/// What a run will hold in memory, estimated before it starts, against what this process may
/// use: a run that cannot fit is refused with both figures (exit 2) instead of dying part way
/// with "failed to allocate" (10,000,000 devices under a 4 GiB address-space limit once did).
public struct MemoryEstimate: Sendable, Equatable {
    /// Bytes per device, a ceiling over what `Benchmarks/engine.sh` and per-platform runs
    /// measured: 1.3–1.7 KB per device added for 10 simulated minutes (1.41 to 1.68 by platform,
    /// 1.33 with all of them), and a day holds 1.2 × that.
    public static let bytesPerDevice = 2_048
    /// The process itself: code, the runtime, the scenario, report buffers.
    public static let baseBytes = 64 << 20
    /// Address space a process reserves beyond what it touches (thread stacks, malloc arenas):
    /// 250–450 MB measured; counted against an address-space limit (`ulimit -v`), not RAM.
    public static let reservedAddressSpace = 1 << 30

    /// Bytes per request waiting on a device or in flight under an open workload's overload (a
    /// queued event's body, its queue slot and its share of the queue's buffer): 0.87-1.0 KB
    /// measured (`Benchmarks/engine.sh`, overload).
    public static let bytesPerWaitingRequest = 1_024

    /// The waiting requests a process holds before open-model arrivals are shed, when the run does
    /// not say (`--max-waiting`): one per device, at least 100,000 (100 MiB).
    public static func defaultMaximumWaiting(devices: Int) -> Int { max(100_000, devices) }

    /// What a device may queue itself (retries, events kept for the next launch) before its
    /// address's oldest waiting requests go, when the run does not set `--max-waiting`: a storm's
    /// retries in a healthy run are then never cut (a 100,000-device day dropped 5,058 at one a
    /// device, none at eight).
    public static let deviceQueueFloor = 8

    /// The most requests a run's devices can hold waiting at once, in any workload: the ceiling
    /// `--max-waiting` sets, or by default the larger of `defaultMaximumWaiting` and
    /// `deviceQueueFloor` a device (each address holds the larger of its share of the one and
    /// its devices' floor, both in proportion to its devices, so the sum is the larger total).
    public static func waitingCeiling(_ scenario: Scenario, devices: Int) -> Int {
        scenario.maximumWaiting ?? max(defaultMaximumWaiting(devices: devices), deviceQueueFloor * devices)
    }

    public var devices: Int
    /// The waiting requests the run may hold (0 without an open workload).
    public var waiting: Int
    public var bytes: Int { Self.baseBytes + devices * Self.bytesPerDevice + waiting * Self.bytesPerWaitingRequest }

    public init(devices: Int, waiting: Int = 0) {
        self.devices = devices
        self.waiting = waiting
    }

    /// The estimate of a run of `scenario` holding `devices` of its devices in one process, at
    /// the most its devices can hold waiting (`waitingCeiling`): a failing service makes a
    /// lifecycle fleet queue up to it as surely as an overload fills an open workload's, so the
    /// estimate holds for every valid scenario, not for a healthy run only.
    public init(_ scenario: Scenario, devices: Int) {
        self.init(devices: devices, waiting: Self.waitingCeiling(scenario, devices: devices))
    }

    /// The limits this process runs under; nil where there is none.
    public struct Limits: Sendable, Equatable {
        /// `ulimit -v` (RLIMIT_AS).
        public var addressSpace: Int?
        /// The cgroup's `memory.max` (a container's limit).
        public var cgroup: Int?
        /// `MemAvailable` in /proc/meminfo: what the machine can give without swapping.
        public var available: Int?

        public init(addressSpace: Int? = nil, cgroup: Int? = nil, available: Int? = nil) {
            self.addressSpace = addressSpace
            self.cgroup = cgroup
            self.available = available
        }

        /// This process's limits, read from the system.
        public static func current() -> Limits {
            var limits = Limits()
            limits.addressSpace = SystemCalls.addressSpaceLimit()
            if let text = try? String(contentsOfFile: "/sys/fs/cgroup/memory.max", encoding: .utf8),
               let bytes = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                limits.cgroup = bytes
            }
            if let text = try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8),
               let line = text.split(separator: "\n").first(where: { $0.hasPrefix("MemAvailable:") }),
               let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }), kilobytes < Int.max / 1_024 {
                limits.available = kilobytes * 1_024
            }
            return limits
        }
    }

    /// Why the run cannot fit under `limits`, or nil when it can. `processes`: how many processes
    /// share the devices (`--workers`): each has its own address space, they share the machine.
    public func refusal(under limits: Limits, processes: Int = 1) -> String? {
        let perProcess = MemoryEstimate(devices: (devices + processes - 1) / max(1, processes), waiting: waiting)
        var problems: [String] = []
        if let space = limits.addressSpace, perProcess.bytes + Self.reservedAddressSpace > space {
            let who = processes > 1 ? "each of \(processes) processes" : "the process"
            problems.append("with what the runtime reserves, \(who) would take about \(Self.format(perProcess.bytes + Self.reservedAddressSpace)) of address space, over its limit of \(Self.format(space)) (ulimit -v)")
        }
        if let cgroup = limits.cgroup, bytes > cgroup {
            problems.append("the container's memory limit is \(Self.format(cgroup)) (cgroup memory.max)")
        }
        if let available = limits.available, bytes > available {
            problems.append("the machine has \(Self.format(available)) available (MemAvailable)")
        }
        guard !problems.isEmpty else { return nil }
        let waitingText = waiting > 0 ? " + \(waiting) waiting requests at \(Self.bytesPerWaitingRequest) bytes (--max-waiting)" : ""
        return "this run cannot fit in memory: \(devices) devices need about \(Self.format(bytes)) (\(Self.bytesPerDevice) bytes each + \(Self.format(Self.baseBytes))\(waitingText)), but "
            + problems.joined(separator: "; ")
            + ". Run fewer devices (--devices)\(waiting > 0 ? ", hold fewer waiting requests (--max-waiting N: the oldest past it are dropped and counted)" : ""), or split the fleet: --workers N (processes on this machine, each with its own address space) or --shard I/N on several machines."
    }

    public static func format(_ bytes: Int) -> String {
        let mebibytes = Double(bytes) / 1_048_576
        return mebibytes >= 1_024 ? String(format: "%.1f GiB", mebibytes / 1_024) : "\(Int(mebibytes.rounded(.up))) MiB"
    }
}
