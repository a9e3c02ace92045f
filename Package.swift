// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "PushSwarm",
    products: [
        .executable(name: "pushswarm", targets: ["pushswarm"])
    ],
    targets: [
        // Histograms, counters, the summary model and its renderers, and the JSON value they are
        // written in. The bottom layer: it depends on nothing of ours.
        .target(name: "PushSwarmMetrics"),
        // Clock, scheduler, randomness, scenario model, device lifecycle, retry policies, rate
        // limiters, the protocols platforms implement, and the run controller.
        .target(name: "PushSwarmCore", dependencies: ["PushSwarmMetrics", "CPushSwarmShim"]),
        // One folder per platform: wire messages, device-side client, mock service.
        .target(name: "PushSwarmPlatforms", dependencies: ["PushSwarmCore", "PushSwarmMetrics"]),
        // epoll, accept4, eventfd, OpenSSL's libssl and libcrypto's SHA-1 and SHA-256, wrapped for Swift
        // (C; no logic).
        .target(
            name: "CPushSwarmShim",
            linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]
        ),
        // Sockets: event loops, HTTP/1.1 client and server, WebSocket, TLS, source-address pools,
        // the loopback mock server and the wall-clock transport.
        .target(name: "PushSwarmNet", dependencies: ["CPushSwarmShim", "PushSwarmCore", "PushSwarmMetrics"]),
        .executableTarget(
            name: "pushswarm",
            dependencies: ["PushSwarmCore", "PushSwarmMetrics", "PushSwarmPlatforms", "PushSwarmNet"],
            // Strict memory safety (SE-0458): no unsafe construct in the executable, and the
            // warnings-as-errors build fails on a new one. The library targets follow as their
            // byte-level fast paths move behind safe APIs (issue 36).
            swiftSettings: [.unsafeFlags(["-strict-memory-safety"])],
            // A release build links the Swift runtime, the standard library and Foundation into
            // the binary (`swift build --static-swift-stdlib` does the same): one file to deploy,
            // and every retain, release and standard-library call a direct call rather than one
            // through the dynamic linker's tables, 7 % of a simulated request's CPU (measured
            // alternating builds of one commit). Debug builds and the tests link dynamically.
            linkerSettings: Context.environment["PUSHSWARM_FUZZ"] == nil ? [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))] : []
        ),
        // Helpers for tests that start real peers (nginx, openssl, Python) on loopback ports.
        .target(name: "PushSwarmTestSupport", path: "Tests/PushSwarmTestSupport"),
        .testTarget(name: "PushSwarmMetricsTests", dependencies: ["PushSwarmMetrics"]),
        .testTarget(name: "PushSwarmCoreTests", dependencies: ["PushSwarmCore", "PushSwarmMetrics"]),
        .testTarget(
            name: "PushSwarmNetTests",
            dependencies: ["PushSwarmNet", "PushSwarmCore", "PushSwarmMetrics", "PushSwarmTestSupport"]
        ),
        .testTarget(
            name: "PushSwarmPlatformsTests",
            dependencies: ["PushSwarmPlatforms", "PushSwarmCore", "PushSwarmMetrics"]
        ),
        // Runs the built `pushswarm` binary as a user would: exit codes, messages, files written.
        .testTarget(
            name: "PushSwarmCLITests",
            dependencies: ["pushswarm", "PushSwarmMetrics", "PushSwarmTestSupport"]
        ),
    ]
)

// The libFuzzer targets (Fuzz/README.md): only when Fuzz/run.sh builds them, with the sanitizers,
// as libFuzzer's driver replaces the program's entry (and lld links what gold cannot).
if Context.environment["PUSHSWARM_FUZZ"] != nil {
    package.targets.append(.executableTarget(
        name: "PushSwarmFuzz",
        dependencies: ["PushSwarmCore", "PushSwarmMetrics", "PushSwarmPlatforms", "PushSwarmNet"],
        path: "Fuzz/Sources/PushSwarmFuzz",
        swiftSettings: [.unsafeFlags(["-parse-as-library"])],
        linkerSettings: [.unsafeFlags(["-use-ld=lld"])]
    ))
    package.products.append(.executable(name: "pushswarm-fuzz", targets: ["PushSwarmFuzz"]))
}

for target in package.targets where target.name != "CPushSwarmShim" {
    var settings = target.swiftSettings ?? []
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
