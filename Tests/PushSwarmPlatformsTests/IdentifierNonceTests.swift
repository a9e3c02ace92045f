import PushSwarmCore
import PushSwarmPlatforms
import Testing

/// Issue 35: ids PushSwarm makes as the push provider (tracking tokens, message ids, engagement
/// uids) repeated across wall runs of one seed, so a second nightly run against the same service
/// was de-duplicated there. A run's nonce is mixed into every id a campaign draws; simulated runs
/// (nonce 0) stay the same for a seed.
@Suite struct IdentifierNonceTests {
    func pushes(_ platform: any Platform, nonce: UInt64) throws -> [[String: String]] {
        var mock = try platform.configure(nil).makeMock()
        for user in 0..<3 {
            mock.knowDevice(KnownDevice(pushToken: "token-\(user)", userID: "user-\(user)", os: .android, pushPermissionGranted: true))
        }
        let campaign = Campaign(name: "sale", platform: platform.name, at: .zero, audience: 1)
        return mock.launchCampaign(campaign, at: .start + .hours(1), draws: CampaignDraws(seed: 42, campaign: "sale", identifierNonce: nonce)).map(\.data)
    }

    @Test(arguments: PlatformRegistry.all.map(\.name))
    func aCampaignsIdsChangeWithTheRunsNonceAndOnlyWithIt(platform name: String) throws {
        let platform = try #require(PlatformRegistry.all.first { $0.name == name })
        let plain = try pushes(platform, nonce: 0)
        #expect(plain.count == 3, "every known device gets the push")
        #expect(try pushes(platform, nonce: 0) == plain, "one seed, no nonce: the same pushes (simulated runs)")
        let first = try pushes(platform, nonce: 0x1234_5678_9ABC_DEF0)
        let second = try pushes(platform, nonce: 0x0FED_CBA9_8765_4321)
        // The ids: what the nonce changes. Each push has one, and it differs between the runs.
        for (index, (one, other)) in zip(first, second).enumerated() {
            let ids = one.keys.filter { one[$0] != plain[index][$0] }
            #expect(!ids.isEmpty, "\(name): no id in \(one)")
            for key in ids { #expect(one[key] != other[key], "\(name).\(key) repeats across runs") }
            #expect(Set(one.keys) == Set(plain[index].keys))
        }
    }
}
