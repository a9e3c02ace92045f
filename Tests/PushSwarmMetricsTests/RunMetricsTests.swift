import Testing
@testable import PushSwarmMetrics

@Suite struct RunMetricsTests {
    @Test func everySentRequestEndsInExactlyOneOutcome() {
        var metrics = RunMetrics()
        for _ in 0..<5 { metrics.recordSent(operation: "p.events", retryNumber: 0) }
        metrics.recordSent(operation: "p.events", retryNumber: 1)
        metrics.recordResponse(operation: "p.events", status: 200, latencyMicroseconds: 40_000)
        metrics.recordResponse(operation: "p.events", status: 200, latencyMicroseconds: 50_000)
        metrics.recordResponse(operation: "p.events", status: 429, latencyMicroseconds: 10_000)
        metrics.recordTransportError(operation: "p.events", reason: "networkError")
        metrics.recordTimeout(operation: "p.events")
        #expect(metrics.sent == 6)
        #expect(metrics.operations["p.events"]?.completed == 5)
        metrics.recordResponse(operation: "p.events", status: 503, latencyMicroseconds: 1_000)
        #expect(metrics.sent == metrics.byStatus.values.reduce(0, +) + metrics.transportErrors + metrics.timeouts)
        #expect(metrics.retriesByAttempt == [1: 1])
    }

    @Test func mergingShardsAddsEverything() {
        var left = RunMetrics()
        left.recordSent(operation: "a", retryNumber: 0)
        left.recordResponse(operation: "a", status: 200, latencyMicroseconds: 5)
        left.recordDrop(reason: "http400")
        var right = RunMetrics()
        right.recordSent(operation: "a", retryNumber: 2)
        right.recordResponse(operation: "a", status: 200, latencyMicroseconds: 7)
        right.recordDrop(reason: "http400")
        right.increment("notifications.tapped")
        left.merge(right)
        #expect(left.sent == 2)
        #expect(left.byStatus == [200: 2])
        #expect(left.droppedByReason == ["http400": 2])
        #expect(left.retriesByAttempt == [2: 1])
        #expect(left.counters == ["notifications.tapped": 1])
        #expect(left.operations["a"]?.latency.totalCount == 2)
    }

    @Test func recorderIsSafeToShareAcrossTasks() async {
        let recorder = MetricsRecorder()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<1_000 { recorder.record { $0.recordSent(operation: "x", retryNumber: 0) } }
                }
            }
        }
        #expect(recorder.snapshot().sent == 8_000)
    }
}
