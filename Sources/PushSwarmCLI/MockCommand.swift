import Foundation
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmNet
import PushSwarmPlatforms
import PushSwarmSystem

enum MockCommand: Command {
    static let declaration = CommandDeclaration(
        synopsis: "pushswarm mock [FILE] [--listen ADDRESS:PORT] [--tls-cert FILE --tls-key FILE] [--seed N]",
        about: """
            Serves every built-in mock service on real sockets until Ctrl-C: the same services that
            answer in simulated time, validating requests against each platform's spec, rate-limiting,
            injecting the configured faults, and keeping a ledger of what they accepted. With FILE, the
            mocks are configured as that scenario configures them; without, with each platform's
            defaults.

            Paths: each platform's own endpoints (POST /events, …), or any of them under
            /<platform>/ when several platforms are served. Also:
              GET /metrics          Prometheus text: requests by operation and status, ledger counts,
                                    connections.
              GET /ledger           JSON: what each mock accepted (?keys=1 lists the items' keys).
              /_pushswarm/echo      WebSocket echo, for checking a client or a proxy.

            HTTP/2: with prior knowledge (h2c) on the same port as HTTP/1.1; over TLS (--tls-cert and
            --tls-key), ALPN agrees h2 with a client that offers it, as an ingestion edge does.
            """,
        options: [
            OptionDeclaration("--listen", "ADDRESS:PORT", "Where to listen (default 127.0.0.1:8080; [::1]:8080 for IPv6)."),
            OptionDeclaration("--tls-cert", "FILE", "Serve TLS with this certificate chain (PEM); needs --tls-key."),
            OptionDeclaration("--tls-key", "FILE", "The certificate's private key (PEM)."),
            SharedOptions.seed.help("Seed of the mocks' randomness (latency, faults).").declaration,
        ]
    )

    static func run(_ arguments: Arguments) async -> PushSwarmCommand.ExitCode {
        guard arguments.positionals.count <= 1 else {
            PushSwarmCommand.printError("mock takes at most one scenario file\n\n\(usage)")
            return .badInput
        }
        let listenText = arguments.value("--listen") ?? "127.0.0.1:8080"
        guard let address = SocketAddress(parsing: listenText) else {
            PushSwarmCommand.printError("--listen: expected ADDRESS:PORT with a literal IP address, such as 127.0.0.1:8080 or [::1]:8080; found \"\(listenText)\"")
            return .badInput
        }
        var seed: UInt64 = 1
        var configurations: [String: any PlatformConfiguration] = [:]
        if let path = arguments.positionals.first {
            guard let scenario = PushSwarmCommand.loadScenario(path) else { return .badInput }
            configurations = scenario.platforms
            seed = scenario.seed
        } else {
            for platform in PlatformRegistry.all {
                do {
                    configurations[platform.name] = try platform.configure(nil)
                } catch {
                    PushSwarmCommand.printError("\(platform.name): \(error)")
                    return .failure
                }
            }
        }
        if let value = arguments.value(SharedOptions.seed) { seed = value }
        var tls: TLSServerContext?
        switch (arguments.value("--tls-cert"), arguments.value("--tls-key")) {
        case (nil, nil): break
        case (let certificate?, let key?):
            do {
                tls = try TLSServerContext(certificateFile: certificate, keyFile: key)
            } catch {
                PushSwarmCommand.printError("--tls-cert, --tls-key: \(error.detail)")
                return .badInput
            }
        default:
            PushSwarmCommand.printError("--tls-cert and --tls-key go together: a certificate and its key")
            return .badInput
        }

        let group = EventLoopGroup()
        // One share of the mocks per loop, by source address, unless a mock keeps state across
        // addresses (a global limit): then one for all.
        let loops = group.loops.count
        let shared = Run.sharedMockState(platforms: configurations) != nil
        // The mock's instant zero is now: answers that tell the time (Smartico's ts) tell today's.
        let started = Int64(Date().timeIntervalSince1970)
        let fleets = (0..<(shared ? 1 : loops)).map { MockFleet(platforms: configurations.mapValues { $0.partitionCopy() }, seed: seed, partition: $0, calendarStartUnixSeconds: started) }
        let server = MockServer(mocks: fleets, group: group, clock: WallClock(), tls: tls) { source in Int(source.index % UInt32(fleets.count)) }
        do {
            try server.start(at: address)
        } catch {
            PushSwarmCommand.printError("cannot listen on \(address): \(error.detail)")
            return .failure
        }
        let base = "\(tls == nil ? "http" : "https")://\(address)"
        print("PushSwarm mock services on \(base) (\(configurations.keys.sorted().joined(separator: ", ")))")
        print("  \(base)/metrics  \(base)/ledger  \(tls == nil ? "ws" : "wss")://\(address)/_pushswarm/echo")
        print("Ctrl-C stops.")
        // The lines above say it listens: a script (or a test) starting the mock waits for them.
        SystemCalls.flushStandardOutput()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Signals.onInterrupt { continuation.resume() }
        }
        server.stop()
        group.shutdown()
        let ledgers = server.ledgers
        for (name, ledger) in ledgers.sorted(by: { $0.key < $1.key }) {
            print("\(name): accepted \(ledger.accepted), duplicates \(ledger.duplicates)")
        }
        print("stopped")
        return .success
    }
}
