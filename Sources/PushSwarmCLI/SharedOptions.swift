import PushSwarmCore

/// Options more than one command takes, declared once.
enum SharedOptions {
    static let seed = TypedOption<UInt64>(
        "--seed", "N", "Seed for all randomness (default: the scenario's, else 1).\nThe same scenario and seed give the same summary.",
        problem: { "expected a whole number from 0, found \"\($0)\"" }, read: { UInt64($0) }
    )
    static let devices = TypedOption<Int>.wholeNumber("--devices", "N", "Number of devices, overriding the scenario.", in: 1...10_000_000)
    static let duration = TypedOption<TimeSpan>(
        "--duration", "D", "Run length: seconds, or with units (90s, 30m, 24h).",
        problem: { "expected a duration above zero and at most 366 days, such as 3600, 90s, 30m or 24h; found \"\($0)\"" },
        read: { duration($0, atMost: .days(366)) }
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

    /// An instant option (`--start`, `--start-at`): Unix seconds.
    static func instant(_ name: String, _ help: String) -> TypedOption<Int64> {
        TypedOption(name, "TIME", help, problem: { "expected an instant as RFC 3339 (2026-11-22T02:00:00Z) or Unix seconds, found \"\($0)\"" }, read: instantSeconds)
    }
    static let clock = TypedOption<Scenario.ClockKind>(
        "--clock", "KIND", "simulated (default): discrete-event time, no waiting.\nwall: real time over real sockets.",
        problem: { "expected simulated or wall, found \"\($0)\"" }, read: { Scenario.ClockKind(rawValue: $0) }
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
    static let maxWaiting = TypedOption<Int>.wholeNumber(
        "--max-waiting", "N",
        """
        The most requests (queued on devices or in flight) this process
        holds for an open workload; beyond it, arrivals are shed and
        counted (default: one per device, at least 100,000, about
        1 KB each; counted in the memory check).
        """,
        in: 1...1_000_000_000
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
