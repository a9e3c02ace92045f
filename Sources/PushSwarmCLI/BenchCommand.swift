import Foundation
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmNet

enum BenchCommand: Command {
    static let duration = TypedOption<TimeSpan>(
        "--duration", "D", "How long (default 10s).",
        problem: { "expected a duration above zero and at most 1h, such as 10s; found \"\($0)\"" }, read: { SharedOptions.duration($0, atMost: .hours(1)) }
    )
    static let declaration = CommandDeclaration(
        synopsis: "pushswarm bench URL [--scenario FILE] [--connections N] [--duration D] [--json]",
        about: """
            A closed-loop HTTP load in the manner of wrk, for comparing PushSwarm's network path with
            wrk against the same loopback server: N connections over one event loop per core, each
            sending its next request when the last answer arrives. Every request is one device's own,
            taken from the first requests the scenario's devices send (paths are appended to URL's
            path). URL must be on loopback (127.0.0.0/8): each connection binds its own source address.
            """,
        options: [
            OptionDeclaration("--scenario", "FILE", "Where the requests come from (default Scenarios/quickstart.json)."),
            OptionDeclaration("--connections", "N", "Connections (default 64).", check: OptionDeclaration.wholeNumber(1...10_000)),
            duration.declaration,
            OptionDeclaration("--loops", "N", "Event loops (threads; default one per core).", check: OptionDeclaration.wholeNumber(1...1_024)),
            OptionDeclaration("--json", nil, "Print one JSON line instead of text."),
        ]
    )

    static func run(_ arguments: Arguments) async -> PushSwarmCommand.ExitCode {
        guard arguments.positionals.count == 1, let url = TargetURL(arguments.positionals[0]), url.origin.scheme == "http",
              let ip = IPAddress(url.origin.host == "localhost" ? "127.0.0.1" : url.origin.host), ip.isLoopback
        else {
            PushSwarmCommand.printError("bench takes one http:// URL on loopback, such as http://127.0.0.1:8080\n\n\(usage)")
            return .badInput
        }
        // Checked as the words were parsed (BenchCommand.declaration).
        let connections = arguments.value("--connections").flatMap { Int($0) } ?? 64
        let duration = arguments.value(duration) ?? .seconds(10)
        guard let scenario = PushSwarmCommand.loadScenario(arguments.value("--scenario") ?? "Scenarios/quickstart.json") else { return .badInput }
        let requests = await RequestSampler.sample(scenario, count: 20_000)
        guard !requests.isEmpty else {
            PushSwarmCommand.printError("the scenario's devices sent no requests to replay")
            return .badInput
        }
        let group = EventLoopGroup(threads: arguments.value("--loops").flatMap { Int($0) })
        let bench = HTTPBench(group: group, base: url, requests: requests, connections: connections)
        let result = bench.run(seconds: duration.seconds)
        group.shutdown()
        let errors = result.errors.values.reduce(0, +) + result.timeouts
        if arguments.flags.contains("--json") {
            let json: JSONValue = [
                "requests": .number(Double(result.requests)), "seconds": .number(result.seconds),
                "requestsPerSecond": .number(result.requestsPerSecond.rounded()),
                "errors": .number(Double(errors)), "distinctBodies": .number(Double(Set(requests.map(\.body)).count)),
                "p50Ms": .number(Double(result.latency.value(atQuantile: 0.5) ?? 0) / 1000),
                "p99Ms": .number(Double(result.latency.value(atQuantile: 0.99) ?? 0) / 1000),
            ]
            print(String(decoding: JSONWriter.bytes(of: json), as: UTF8.self))
        } else {
            let statuses = result.byStatus.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
            print("\(connections) connections, \(group.loops.count) loops, \(Set(requests.map(\.body)).count) distinct request bodies")
            print("\(result.requests) requests in \(String(format: "%.2f", result.seconds)) s = \(Int(result.requestsPerSecond)) requests/s")
            print("statuses \(statuses.isEmpty ? "none" : statuses); errors \(errors)")
            let p50 = Double(result.latency.value(atQuantile: 0.5) ?? 0) / 1000
            let p99 = Double(result.latency.value(atQuantile: 0.99) ?? 0) / 1000
            print("service time p50 \(p50) ms, p99 \(p99) ms")
        }
        return errors > 0 && result.byStatus.isEmpty ? .failure : .success
    }
}
