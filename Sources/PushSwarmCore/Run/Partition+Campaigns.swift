import PushSwarmMetrics

/// Campaigns: launched at the built-in mock, or with PushSwarm standing in for the push provider
/// against a real target, and their pushes delivered to devices.
extension Partition {
    /// Device `index`'s push-delivery draws, where the last push to it left them (store the
    /// stream back after drawing).
    func deliveryStream(of index: Int) -> SeededRandom {
        deliveryRandom[index] ?? SeededRandom(seed: scenario.seed, stream: .pushDelivery, index: UInt64(range.lowerBound + index))
    }

    func launch(_ campaign: Campaign, now: Instant) {
        let source: MockFleet
        let host: Int
        let isLocal: Bool
        if let mocks, let index = mocks.index(of: campaign.platform) {
            (source, host, isLocal) = (mocks, index, false)
        } else {
            // Against a real target PushSwarm stands in for the push provider (FCM, APNs): the
            // platform's own campaign logic, run on what the devices are now (token, user,
            // permission), makes each push and its payload (tracking tokens, message ids, links),
            // and the devices display, tap and report it to the target as against the mock.
            let local = MockFleet(scenario: scenario, partition: number)
            guard let index = local.index(of: campaign.platform) else { return }
            for slot in slots where groupPlatforms[Int(slot.group)] == campaign.platform {
                if let known = slot.device.assumeIsolated({ $0.knownDevice() }) { local.knowDevice(platform: index, known) }
            }
            (source, host, isLocal) = (local, index, true)
        }
        let (messages, sessionMessages) = source.launchCampaign(platform: host, campaign, at: now)
        // One event for the whole run: counted once, however many partitions and shards.
        if countsRunEvents {
            metrics.increment(isLocal ? .campaignsLaunchedLocally : .campaignsLaunched)
            metrics.mark("campaign \(campaign.name)", at: (now - .start).microseconds)
        }
        if isLocal {
            // Messages a service sends on its own sockets (a platform's popups) are the real
            // service's to send: counted, not made up.
            if !sessionMessages.isEmpty { metrics.increment(.campaignsSocketMessagesLeftToTheService, by: UInt64(sessionMessages.count)) }
            metrics.increment(.notificationsDeliveredLocally, by: UInt64(messages.count))
        } else if !sessionMessages.isEmpty {
            metrics.increment(.campaignsSocketMessages, by: UInt64(sessionMessages.count))
            transport.deliverFromService(sessionMessages, platform: host, at: now)
        }
        for message in messages {
            metrics.increment(.notificationsSent)
            guard let index = pushGateway[message.pushToken] else {
                // The token is stale (rotated, never reported): the provider cannot deliver.
                metrics.increment(.notificationsUndeliverable)
                continue
            }
            nextNotificationID += 1
            var random = deliveryStream(of: index)
            defer { deliveryRandom[index] = random }
            let notification = PushNotification(
                id: nextNotificationID, campaign: campaign.name, data: message.data,
                tapRate: campaign.tapRate, timeToOpen: campaign.timeToOpen, isDataOnly: message.isDataOnly,
                fate: random.next()
            )
            var delay = campaign.deliveryDelay.sampleSpan(using: &random)
            let behaviour = scenario.groups[Int(slots[index].group)].behaviour
            if random.chance(behaviour.unreachableShare) {
                // Not connected to the provider: held until the device is back, within the push's time to live.
                let offline = behaviour.offlineDuration.sampleSpan(using: &random)
                guard offline <= campaign.timeToLive else {
                    metrics.increment(.notificationsExpired)
                    continue
                }
                metrics.increment(.notificationsHeldWhileUnreachable)
                delay = delay + offline
            }
            schedule(.lifecycle(.notificationDelivered(notification)), device: index, at: now + delay)
        }
    }
}
