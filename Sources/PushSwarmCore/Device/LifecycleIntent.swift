public import PushSwarmMetrics

/// Something an app did or that happened to it, in platform-neutral terms; a platform client
/// turns it into its own wire messages (or into nothing).
public enum LifecycleIntent: Sendable {
    /// The app was installed (not yet launched).
    case installed
    /// The app came to the foreground: from closed (`isColdStart`) or from the background.
    case appLaunched(isColdStart: Bool, source: LaunchSource, isFirstLaunch: Bool)
    case appBackgrounded
    case appClosed
    /// The user did something the app reports as an event.
    case userEvent(name: String, parameters: JSONObject)
    case loggedIn(userID: String, method: String)
    case loggedOut(userID: String)
    /// The push permission the app sees changed (the first prompt's answer, or a change made in
    /// the OS settings and noticed at launch).
    case pushPermissionChanged(isGranted: Bool)
    /// The push provider gave the app its first token.
    case pushTokenIssued(token: String)
    /// The push provider replaced the app's token.
    case pushTokenRotated(oldToken: String, newToken: String)
    case notificationDisplayed(PushNotification)
    /// A push reached the app but could not be shown (no permission): apps that see data
    /// messages report it (an `engagement_failed` event).
    case notificationNotDisplayed(PushNotification)
    case notificationTapped(PushNotification)
    case notificationDismissed(PushNotification)
}

/// Why the app came to the foreground.
public enum LaunchSource: String, Sendable {
    case organic
    case notification
}
