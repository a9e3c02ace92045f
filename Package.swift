// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "PushSwarm",
    products: [
        .executable(name: "pushswarm", targets: ["pushswarm"])
    ],
    targets: [
        // The one place for byte-level fast paths and calls that take pointers (word loads and
        // stores over spans, the JSON writer's buffer, SHA-256 by libcrypto), each behind an API
        // that checks its bounds in release builds. Every other target builds under strict memory
        // safety (below): unsafe code there fails the warnings-as-errors build.
        .target(name: "PushSwarmSystem", dependencies: ["CPushSwarmShim"]),
        // Histograms, counters, the summary model and its renderers, and the JSON value they are
        // written in. The bottom layer: it depends on nothing of ours.
        .target(name: "PushSwarmMetrics", dependencies: ["PushSwarmSystem"]),
        // Clock, scheduler, randomness, scenario model, device lifecycle, retry policies, rate
        // limiters, the protocols platforms implement, and the run controller.
        .target(name: "PushSwarmCore", dependencies: ["PushSwarmSystem", "PushSwarmMetrics"]),
        // One folder per platform: wire messages, device-side client, mock service.
        .target(name: "PushSwarmPlatforms", dependencies: ["PushSwarmCore", "PushSwarmMetrics", "PushSwarmSystem"]),
        // Incident replay (`fit`): access-log formats, the limiter and retry fits, and the
        // scenario fitted to a log. Only the CLI uses it; what it knows of a platform it asks
        // the `Platform` (campaign traces, log operations), so it names none.
        .target(name: "PushSwarmReplay", dependencies: ["PushSwarmCore", "PushSwarmMetrics", "PushSwarmSystem"]),
        // epoll, accept4, eventfd, OpenSSL's libssl and libcrypto's SHA-1 and SHA-256, zlib's gzread,
        // wrapped for Swift (C; no logic).
        .target(
            name: "CPushSwarmShim",
            linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto"), .linkedLibrary("z")]
        ),
        // Sockets: event loops, HTTP/1.1 client and server, WebSocket, TLS, source-address pools,
        // the loopback mock server and the wall-clock transport.
        .target(name: "PushSwarmNet", dependencies: ["CPushSwarmShim", "PushSwarmCore", "PushSwarmMetrics", "PushSwarmSystem"]),
        // The commands: each option declared once (parsing, help and checks), and the logic of
        // run, capacity, mock, bench, merge, compare and validate, callable in-process by tests.
        .target(name: "PushSwarmCLI", dependencies: ["PushSwarmCore", "PushSwarmMetrics", "PushSwarmPlatforms", "PushSwarmNet", "PushSwarmReplay", "PushSwarmSystem"]),
        // The executable: one line that calls PushSwarmCLI.
        .executableTarget(
            name: "pushswarm",
            dependencies: ["PushSwarmCLI"],
            // A release build links the Swift runtime, the standard library and Foundation into
            // the binary (`swift build --static-swift-stdlib` does the same): one file to deploy,
            // and every retain, release and standard-library call a direct call rather than one
            // through the dynamic linker's tables, 7 % of a simulated request's CPU (measured
            // alternating builds of one commit). Debug builds and the tests link dynamically.
            linkerSettings: Context.environment["PUSHSWARM_FUZZ"] == nil ? [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))] : []
        ),
        // Helpers for tests: real peers (nginx, openssl, Python) on loopback ports, a value's stored
        // properties walked by Mirror.
        .target(name: "PushSwarmTestSupport", path: "Tests/PushSwarmTestSupport"),
        .testTarget(name: "PushSwarmSystemTests", dependencies: ["PushSwarmSystem"]),
        .testTarget(name: "PushSwarmMetricsTests", dependencies: ["PushSwarmMetrics"]),
        .testTarget(name: "PushSwarmCoreTests", dependencies: ["PushSwarmCore", "PushSwarmMetrics"]),
        .testTarget(
            name: "PushSwarmNetTests",
            dependencies: ["PushSwarmNet", "PushSwarmCore", "PushSwarmMetrics", "PushSwarmSystem", "PushSwarmTestSupport"]
        ),
        .testTarget(
            name: "PushSwarmPlatformsTests",
            dependencies: ["PushSwarmPlatforms", "PushSwarmCore", "PushSwarmMetrics", "PushSwarmSystem", "PushSwarmTestSupport"]
        ),
        .testTarget(
            name: "PushSwarmReplayTests",
            dependencies: ["PushSwarmReplay", "PushSwarmPlatforms", "PushSwarmCore", "PushSwarmMetrics"]
        ),
        // Runs the built `pushswarm` binary as a user would: exit codes, messages, files written.
        .testTarget(
            name: "PushSwarmCLITests",
            dependencies: ["pushswarm", "PushSwarmCLI", "PushSwarmCore", "PushSwarmMetrics", "PushSwarmNet", "PushSwarmPlatforms", "PushSwarmReplay", "PushSwarmTestSupport"]
        ),
    ]
)

// The libFuzzer targets (Fuzz/README.md): only when Fuzz/run.sh builds them, with the sanitizers,
// as libFuzzer's driver replaces the program's entry (and lld links what gold cannot).
if Context.environment["PUSHSWARM_FUZZ"] != nil {
    package.targets.append(.executableTarget(
        name: "PushSwarmFuzz",
        dependencies: ["PushSwarmCore", "PushSwarmMetrics", "PushSwarmPlatforms", "PushSwarmNet", "PushSwarmReplay"],
        path: "Fuzz/Sources/PushSwarmFuzz",
        swiftSettings: [.unsafeFlags(["-parse-as-library"])],
        linkerSettings: [.unsafeFlags(["-use-ld=lld"])]
    ))
    package.products.append(.executable(name: "pushswarm-fuzz", targets: ["PushSwarmFuzz"]))
}

/// Targets built under strict memory safety (SE-0458): an unsafe construct there is a warning,
/// which the warnings-as-errors build fails on. All but the fenced place and the C shim.
let strictlyMemorySafe: Set<String> = ["PushSwarmMetrics", "PushSwarmCore", "PushSwarmPlatforms", "PushSwarmReplay", "PushSwarmNet", "PushSwarmCLI", "pushswarm"]

for target in package.targets where target.name != "CPushSwarmShim" {
    var settings = target.swiftSettings ?? []
    if strictlyMemorySafe.contains(target.name) {
        settings.append(.unsafeFlags(["-strict-memory-safety"]))
    }
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    // Release builds leave out the run-time exclusivity checks (swift_beginAccess/endAccess on
    // every access to a class's stored property: 4 % of a simulated request's CPU, measured
    // alternating builds). Debug builds, which the tests run, keep them.
    settings.append(.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)))
    // Release builds link the Swift runtime and libraries statically (see the executable's
    // linker settings); compiled so, each module names the static libraries it needs. Not the
    // fuzzers' build, whose sanitizers link the runtime dynamically.
    if Context.environment["PUSHSWARM_FUZZ"] == nil {
        settings.append(.unsafeFlags(["-static-stdlib"], .when(configuration: .release)))
    }
    target.swiftSettings = settings
}
