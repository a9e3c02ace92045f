import Testing
@testable import PushSwarmCore

/// The value types a partition keeps its accounting in.
@Suite struct WaitingCeilingTests {
    /// Addresses of 4 devices, the partition holding fleet indices 10..<20: its first address
    /// (8..<12) is cut short by the range, and so gets half the share of the others.
    @Test func sharesFollowEachAddresssDevices() {
        let ceiling = WaitingCeiling(maximumWaiting: 100, devicesPerSourceAddress: 4, devices: 10..<20, process: 0..<20)
        // 10..<12 (2 devices), 12..<16 (4), 16..<20 (4): 5 waiting requests a device.
        #expect(ceiling.shares == [10, 20, 20])
        #expect(ceiling.queueLimits == ceiling.shares, "with --max-waiting set, devices queue no more than the share")
        #expect(ceiling.place(of: 0) == 0 && ceiling.place(of: 1) == 0 && ceiling.place(of: 2) == 1 && ceiling.place(of: 9) == 2)
    }

    /// Without `--max-waiting`, what devices queue themselves is at least the floor of 8 a
    /// device (`MemoryEstimate.deviceQueueFloor`), the bound the memory check weighs.
    @Test func withoutMaxWaitingDevicesMayQueueTheFloor() {
        let ceiling = WaitingCeiling(maximumWaiting: nil, devicesPerSourceAddress: 5, devices: 0..<10, process: 0..<1_000_000)
        #expect(ceiling.shares == [5, 5], "one a device at a million devices")
        #expect(ceiling.queueLimits == [40, 40])
    }

    /// `--max-waiting` is strict whatever the number of addresses: the shares of every partition
    /// of the process add up to it exactly, in a shard whose fleet indices do not start at 0 too.
    /// Each address once had a share of at least 1: `--max-waiting 1000` over 4,000 addresses held
    /// 3,999.
    @Test(arguments: [(1_000, 4_000, 1), (1_000, 3, 7), (7, 50, 3), (100_000, 997, 13)])
    func theSharesAddUpToTheCeilingExactly(maximum: Int, addresses: Int, perSource: Int) {
        let shard = 4_000..<(4_000 + addresses * perSource - 1)
        let cut = shard.lowerBound + (addresses / 3) * perSource
        let partitions = [shard.lowerBound..<cut, cut..<shard.upperBound]
        let total = partitions.reduce(0) { sum, range in
            let ceiling = WaitingCeiling(maximumWaiting: maximum, devicesPerSourceAddress: perSource, devices: range, process: shard)
            #expect(ceiling.shares.allSatisfy { $0 >= 0 })
            return sum + ceiling.shares.reduce(0) { $0 + Int($1) }
        }
        #expect(total == maximum)
    }

    @Test func arrivalsStopAtTheShareAndQueuesPastTheLimitAreReported() {
        var ceiling = WaitingCeiling(maximumWaiting: 8, devicesPerSourceAddress: 2, devices: 0..<4, process: 0..<4)
        ceiling.start(pending: { $0 == 3 ? 1 : 0 }, devices: 4)
        #expect(ceiling.isCounting)
        #expect(ceiling.waiting == [0, 1])
        #expect(!ceiling.isAtShare(device: 2))
        let atFour = ceiling.add(3, device: 2)
        #expect(!atFour, "4 of 4 on the second address")
        #expect(ceiling.isAtShare(device: 3))
        #expect(!ceiling.isAtShare(device: 0), "the first address is apart")
        let atFive = ceiling.add(1, device: 3)
        #expect(atFive, "past its limit: the oldest must go")
        let atThree = ceiling.add(-2, device: 3)
        #expect(!atThree)
        #expect(ceiling.waiting == [0, 3])
    }

    @Test func anEmptyPartitionHasNoAddresses() {
        let ceiling = WaitingCeiling(maximumWaiting: nil, devicesPerSourceAddress: 5, devices: 10..<10, process: 0..<100)
        #expect(ceiling.shares.isEmpty && !ceiling.isCounting)
    }
}

@Suite struct SocketAccountingTests {
    @Test func handshakesOpenAndCloseOnceEach() throws {
        var sockets = SocketAccounting()
        let key = SocketKey(device: 3, socket: 7)
        let unknown = sockets.handshakeEnded(key, opened: true, at: Instant(microseconds: 5))
        #expect(unknown == nil, "a handshake never started")
        sockets.handshakeStarted(key, operation: "smartico.socket", at: Instant(microseconds: 10))
        let ended = sockets.handshakeEnded(key, opened: true, at: Instant(microseconds: 30))
        let started = try #require(ended)
        #expect(started.operation == "smartico.socket" && started.sentAt == Instant(microseconds: 10))
        let again = sockets.handshakeEnded(key, opened: true, at: Instant(microseconds: 31))
        #expect(again == nil, "ended once")
        let closed = sockets.closed(key, at: Instant(microseconds: 50))
        let closedAgain = sockets.closed(key, at: Instant(microseconds: 51))
        #expect(closed && !closedAgain, "closed once, by whichever side was first")
        #expect(sockets.changes == [60, 101])

        let failed = SocketKey(device: 4, socket: 1)
        sockets.handshakeStarted(failed, operation: "smartico.socket", at: Instant(microseconds: 60))
        let failedEnd = sockets.handshakeEnded(failed, opened: false, at: Instant(microseconds: 70))
        let failedClosed = sockets.closed(failed, at: Instant(microseconds: 80))
        #expect(failedEnd != nil && !failedClosed, "a failed handshake never opened")
        #expect(sockets.changes == [60, 101])
    }
}
