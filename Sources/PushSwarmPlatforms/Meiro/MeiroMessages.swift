import Foundation
public import PushSwarmCore
import PushSwarmMetrics

/// Meiro's mobile-push wire vocabulary (spec 004, "Mobile Push: instructions for developers"):
/// one endpoint, two event types, and the keys both sides use to account for accepted events.
public enum MeiroMessages {
    public static let platformName = "meiro"

    /// "ME API Endpoint: POST /meiro_mobile".
    public static let path = "/meiro_mobile"

    public enum EventType {
        public static let registered = "fcm_registration_token_registered"
        public static let refreshed = "fcm_registration_token_refreshed"
    }

    public enum Operation {
        public static let registered = "meiro.token_registered"
        public static let refreshed = "meiro.token_refreshed"
        /// Either, as a log without bodies sees them.
        public static let endpoint = "meiro.mobile"
    }

    /// "version: "1.0.0", //required string, version of the event structure".
    public static let eventVersion = "1.0.0"

    /// The ledger key of one event: a second delivery of the same event is a duplicate. Sent
    /// once (its timestamp is in it).
    public static func eventKey(userID: String, eventType: String, timestamp: String, token: String) -> LedgerKey {
        LedgerKey("meiro_mobile", userID, eventType, timestamp, token).once
    }

    /// "session_id: … base64 session id (timestamp&user_id)".
    public static func sessionID(unixMilliseconds: Int64, userID: String) -> String {
        Data("\(unixMilliseconds)&\(userID)".utf8).base64EncodedString()
    }

}

extension MeiroSettings {
    /// Equal settings with storage of their own, for one partition (`String.partitionCopy`).
    func partitionCopy() -> MeiroSettings {
        var copy = self
        copy.appID = appID.partitionCopy()
        copy.appName = appName.partitionCopy()
        copy.projectID = projectID.partitionCopy()
        copy.mockBehaviour = mockBehaviour.partitionCopy()
        return copy
    }
}

/// A scenario's `platforms.meiro` section.
public struct MeiroSettings: Sendable {
    /// "ID of the Firebase project's application".
    public var appID = "1:353411649331:android:7ae86e76054a2720fa7695"
    public var appName = "PushSwarm Demo"
    public var projectID = "meiro-project"
    public var requestTimeout = TimeSpan.seconds(10)
    public var queueCapacity = 1_000
    /// "periodically sending the FCM Registration Token Refreshed event once a month, regardless
    /// of the application's running state".
    public var refreshInterval = TimeSpan.days(30)
    /// The spec gives no retry rules; these are PushSwarm's defaults for a mobile SDK: network
    /// errors back off 1, 2, 4 … s up to 60 s, 5 times, then wait for the next launch; 5xx and
    /// 429 three times, then drop.
    public var retryTable = RetryTable(
        networkError: RetryRule(initialDelay: .seconds(1), maximumDelay: .seconds(60), maximumRetries: 5, whenExhausted: .keepForNextLaunch),
        serverError: RetryRule(initialDelay: .seconds(1), maximumDelay: .seconds(4), maximumRetries: 3, whenExhausted: .drop),
        rateLimited: RetryRule(initialDelay: .seconds(1), maximumDelay: .seconds(4), maximumRetries: 3, whenExhausted: .drop)
    )
    public var mockBehaviour = MockBehaviour()

    public init() {}

    /// The offline queue's settings from these, to be made once and shared by a profile's clients.
    func makeQueuePolicy() -> OfflineQueue.Policy {
        OfflineQueue.Policy(retryTable: retryTable, timeout: requestTimeout, capacity: queueCapacity)
    }
}
