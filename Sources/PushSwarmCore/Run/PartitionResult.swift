import PushSwarmMetrics

/// What one partition produced, merged by `Run` into the run's result.
struct PartitionResult: Sendable {
    var metrics: RunMetrics
    var ledgers: [String: Ledger]
    var lost: Int
    var pending: Int
    var devices: Int
    var socketChanges: [Int64]
    var end: Instant
    var number = 0
    /// A warm-up's: what each install learnt, by fleet index, and the pushes it kept for the run.
    var memories: [Int: String] = [:]
    var heldPushes: [ExternalPush] = []
}

/// A push a real service sent for a token (`--push-listen`).
public struct ExternalPush: Sendable {
    public var token: String
    public var data: [String: String]
    public var isDataOnly: Bool
}
