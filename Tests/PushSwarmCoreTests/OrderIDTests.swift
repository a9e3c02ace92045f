@testable import PushSwarmCore
import PushSwarmMetrics
import Testing

/// An order id a device makes is 64 bits with its run's nonce (six digits repeated within a run,
/// and every id repeated across wall runs of one seed).
@Suite struct OrderIDTests {
    @Test func orderIDsCarryTheRunsNonce() {
        var plain = SeededRandom(seed: 3, stream: .device, index: 1)
        var mixed = plain
        mixed.identifierNonce = 99
        let a = EventParameters.value(for: .orderID, random: &plain).stringValue ?? ""
        let b = EventParameters.value(for: .orderID, random: &mixed).stringValue ?? ""
        #expect(a != b && a.hasPrefix("ORD-") && b.hasPrefix("ORD-"))
        var many = SeededRandom(seed: 3, stream: .device, index: 2)
        let ids = (0..<10_000).map { _ in EventParameters.value(for: .orderID, random: &many).stringValue ?? "" }
        #expect(Set(ids).count == ids.count, "no order id repeats among 10,000")
    }
}
