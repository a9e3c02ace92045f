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
        .target(name: "PushSwarmCore", dependencies: ["PushSwarmMetrics"]),
        // One folder per platform: wire messages, device-side client, mock service.
        .target(name: "PushSwarmPlatforms", dependencies: ["PushSwarmCore", "PushSwarmMetrics"]),
        .executableTarget(
            name: "pushswarm",
            dependencies: ["PushSwarmCore", "PushSwarmMetrics", "PushSwarmPlatforms"]
        ),
        .testTarget(name: "PushSwarmMetricsTests", dependencies: ["PushSwarmMetrics"]),
        .testTarget(name: "PushSwarmCoreTests", dependencies: ["PushSwarmCore", "PushSwarmMetrics"]),
        .testTarget(
            name: "PushSwarmPlatformsTests",
            dependencies: ["PushSwarmPlatforms", "PushSwarmCore", "PushSwarmMetrics"]
        ),
        // Runs the built `pushswarm` binary as a user would: exit codes, messages, files written.
        .testTarget(
            name: "PushSwarmCLITests",
            dependencies: ["pushswarm", "PushSwarmMetrics"]
        ),
    ]
)

for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    target.swiftSettings = settings
}
