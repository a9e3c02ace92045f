import PushSwarmCore

/// Options more than one command takes, declared once.
enum SharedOptions {
    static let seed = OptionDeclaration(
        "--seed", "N", "Seed for all randomness (default: the scenario's, else 1).\nThe same scenario and seed give the same summary.",
        check: { UInt64($0) == nil ? "expected a whole number from 0, found \"\($0)\"" : nil }
    )
    static let devices = OptionDeclaration(
        "--devices", "N", "Number of devices, overriding the scenario.", check: OptionDeclaration.wholeNumber(1...10_000_000)
    )
    static let duration = OptionDeclaration(
        "--duration", "D", "Run length: seconds, or with units (90s, 30m, 24h).",
        check: { text in
            duration(text, atMost: .days(366)) == nil
                ? "expected a duration above zero and at most 366 days, such as 3600, 90s, 30m or 24h; found \"\(text)\"" : nil
        }
    )

    /// A duration above zero and at most `limit`, as `--duration` takes it.
    static func duration(_ text: String, atMost limit: TimeSpan) -> TimeSpan? {
        guard let duration = TimeSpan(parsing: text), duration > .zero, duration <= limit else { return nil }
        return duration
    }

    /// A duration from zero to an hour, as `--metrics-linger` takes it.
    static func linger(_ text: String) -> TimeSpan? {
        guard let duration = TimeSpan(parsing: text), duration >= .zero, duration <= .hours(1) else { return nil }
        return duration
    }

    /// An instant given as RFC 3339 (`2026-11-22T02:00:00Z`) or Unix seconds, in whole seconds.
    static func instantSeconds(_ text: String) -> Int64? {
        if let seconds = Double(text), seconds.isFinite, abs(seconds) < 1e12 { return Int64(seconds.rounded(.down)) }
        return RFC3339.parse(text).map { $0 / 1_000_000 }
    }

    /// The check of `--start` and `--start-at`.
    static let instantCheck = OptionDeclaration.parsed("an instant as RFC 3339 (2026-11-22T02:00:00Z) or Unix seconds", by: instantSeconds)
    static let clock = OptionDeclaration(
        "--clock", "KIND", "simulated (default): discrete-event time, no waiting.\nwall: real time over real sockets.",
        check: OptionDeclaration.oneOf(["simulated", "wall"])
    )
    static let target = OptionDeclaration(
        "--target", "URL",
        """
        Wall clock: send to URL (http:// or https://) instead of
        starting the built-in mocks on loopback. Request paths are
        appended to URL's path. PLATFORM=URL sets one platform's target;
        repeat for several.
        """
    )
    static let insecure = OptionDeclaration("--insecure", nil, "Wall clock: accept any TLS certificate (self-signed staging).")
    static let caFile = OptionDeclaration("--ca-file", "FILE", "Wall clock: trust the certificates in FILE (PEM) as well.")
    static let threshold = OptionDeclaration(
        "--threshold", "EXPR",
        """
        A condition the run must meet, besides the scenario's
        "thresholds"; repeat for several. Examples:
        'p99(smartapppush.events) < 200ms', 'rate(status=429) < 1%',
        'rate(errors) < 0.5%', 'ledger.lost == 0'. Any failing: exit 99.
        """
    )
    static let junit = OptionDeclaration("--junit", "FILE", "Write one JUnit test case per threshold to FILE.")
    static let maxWaiting = OptionDeclaration(
        "--max-waiting", "N",
        """
        The most requests (queued on devices or in flight) this process
        holds for an open workload; beyond it, arrivals are shed and
        counted (default: one per device, at least 100,000, about
        1 KB each; counted in the memory check).
        """,
        check: OptionDeclaration.wholeNumber(1...1_000_000_000)
    )
    static let warmUp = OptionDeclaration(
        "--warm-up", nil,
        """
        With --target: first have the installs from before the run
        register with the service (PushExpress instances, SmartAppPush's
        first event, Meiro and Smartico tokens), reported apart as
        "warmUp" (default: on with --target; scenario "warmUp").
        """
    )
    static let noWarmUp = OptionDeclaration("--no-warm-up", nil, "No warm-up, even with --target.")
    static let quiet = OptionDeclaration("--quiet", nil, "Print only the path of the summary.")
}
