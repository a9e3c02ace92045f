import Foundation
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmNet
import PushSwarmSystem

enum RunCommand: Command {
    // The options of `run` alone whose values it reads as more than text.
    static let shard = TypedOption<Shard>(
        "--shard", "I/N",
        """
        Run only shard I of N: the devices the whole run has at those
        indices (whole NAT addresses), for `pushswarm merge`, which
        judges the thresholds on the whole run.
        """,
        problem: { "expected I/N with 1 <= I <= N, such as 2/4; found \"\($0)\"" }, read: Shard.init(parsing:)
    )
    static let workers = TypedOption<Int>.wholeNumber(
        "--workers", "N",
        """
        Run the fleet as N shard processes on this machine and merge
        them (more sockets than one process may open; more cores).
        Each shard has its own built-in mock; see docs/distributed.md.
        """,
        in: 1...64
    )
    static let partitions = TypedOption<Int>.wholeNumber(
        "--partitions", "P",
        """
        Run the fleet as P shared-nothing partitions in this process,
        each on its own thread (an event loop in wall time) with its
        own devices, scheduler and share of the built-in mocks (default:
        one per core). Simulated results do not depend on P.
        """,
        in: 1...256
    )
    static let startAt = SharedOptions.instant(
        "--start-at",
        """
        Wait until TIME (RFC 3339 or Unix seconds) before starting:
        shards started one by one put their load on together.
        """
    )
    static let start = SharedOptions.instant(
        "--start",
        """
        The calendar the devices stamp their events with starts at TIME
        (RFC 3339 or Unix seconds), overriding the scenario's "start".
        Wall runs otherwise use the real time; simulated runs the
        scenario's start.
        """
    )
    static let metricsLinger = TypedOption<TimeSpan>(
        "--metrics-linger", "D",
        """
        With --metrics-listen: after the report, keep serving the run's
        final values for D (default 15s, one scrape interval; 0 for
        none; Ctrl-C ends it), so that the last scrape sees the end.
        """,
        problem: { "expected a duration from 0 to 1h, such as 15s; found \"\($0)\"" }, read: SharedOptions.linger
    )

    static let declaration = CommandDeclaration(
        synopsis: "pushswarm run FILE [options]",
        about: """
            Runs the scenario in FILE and writes its report into Reports/<run-id>/: summary.json,
            report.html (open it in a browser), timeseries.ndjson (one line per interval) and
            metrics.json (exact, for `pushswarm compare` and `pushswarm merge`).
            """,
        options: [
            SharedOptions.seed.shards(.forwarded), SharedOptions.devices.shards(.forwarded), SharedOptions.duration.shards(.forwarded),
            SharedOptions.clock.shards(.forwarded), SharedOptions.target.shards(.forwarded), SharedOptions.insecure.shards(.forwarded),
            SharedOptions.caFile.shards(.forwarded),
            // Each shard judges them too (its own report says so); the parent judges the merged run.
            SharedOptions.threshold.shards(.forwarded),
            SharedOptions.junit.shards(.parent("the parent writes the merged run's JUnit")),
            shard.shards(.refused("the parent runs the shards itself")),
            workers.shards(.parent("the parent starts the shards")),
            partitions.shards(.forwarded),
            SharedOptions.maxWaiting.shards(.forwarded),
            startAt.shards(.forwarded),
            start.shards(.forwarded),
            OptionDeclaration(
                "--metrics-listen", "A",
                """
                Wall clock: serve the run's measurements so far in Prometheus's
                text format at http://A/metrics (A such as 127.0.0.1:9464).
                With --workers, the whole run's, added up from the shards.
                """
            ).shards(.parent("the parent serves the whole run's metrics, added up from its shards")),
            metricsLinger.shards(.parent("the parent serves the whole run's metrics")),
            OptionDeclaration(
                "--run-id", "ID",
                """
                The run's id (letters, digits, '.', '_', '-'; at most 100): its
                report's directory under Reports/ and the run_id label of its
                metrics. Give every --shard process of one run the same one, so
                that Prometheus adds them up. Default: scenario, time and seed.
                """,
                check: { RunCommand.isRunID($0) ? nil : "expected 1 to 100 letters, digits, '.', '_' or '-', such as nightly-42; found \"\($0)\"" }
            ).shards(.parent("every shard gets the parent's run id")),
            OptionDeclaration(
                "--dashboard", "A",
                """
                Wall clock: serve a live page at http://A/ (A such as
                127.0.0.1:8089) with the report's charts, requests by status,
                429s, retries, latency, devices, sockets and generator lag,
                refreshed each second while the run goes (with --workers, the
                whole run's).
                """
            ).shards(.parent("the parent serves the whole run's page")),
            OptionDeclaration(
                "--push-listen", "A",
                """
                Wall clock: receive pushes for the devices at http://A, shaped
                like FCM's HTTP v1 API (POST /v1/projects/P/messages:send): a
                staging service sending there reaches the device whose token it
                names (404 UNREGISTERED for none), which shows, taps and reports
                it with its own data. See docs/push-listen.md.
                """
            ).shards(.refused("a push reaches one process's devices; give each --shard process its own port instead")),
            OptionDeclaration(
                "--progress-json", nil,
                """
                Write the run's progress to standard output once a second, for a
                program to read: a JSON header line, then the measurements so far
                as metrics.json writes them (one line). --workers reads its shards
                this way.
                """
            ).shards(.parent("the parent reads its shards' streams and writes the whole run's")),
            SharedOptions.warmUp.shards(.forwarded), SharedOptions.noWarmUp.shards(.forwarded),
            OptionDeclaration("--out", "DIR", "Write the report into DIR instead of Reports/<run-id>.").shards(.parent("each shard writes into the parent's directory, under shard-I")),
            SharedOptions.quiet.shards(.parent("shards are always quiet; the parent prints")),
        ]
    )

    static func run(_ arguments: Arguments) async -> PushSwarmCommand.ExitCode {
        guard var scenario = PushSwarmCommand.loadScenarioArgument(arguments, command: "run", usage: usage) else { return .badInput }
        // The file as it was read: a run records the scenario it ran, not one edited while it went
        // (`compare` judges two runs' loads by it).
        let scenarioText = arguments.positionals.first.flatMap { FileManager.default.contents(atPath: $0) }.map { String(decoding: $0, as: UTF8.self) }
        var shard: Shard?
        var workers: Int?
        var partitions: Int?
        // Checked as the words were parsed (RunCommand.declaration). A shard of --workers leaves
        // the notes to its parent, which printed them.
        let notes = applyOverrides(arguments, to: &scenario)
        if !arguments.flags.contains("--progress-json") {
            for note in notes { PushSwarmCommand.printError("note: \(note)") }
        }
        let startAt = arguments.value(Self.startAt).map { Date(timeIntervalSince1970: Double($0)) }
        do {
            scenario.thresholds += try PushSwarmCommand.thresholdArguments(arguments)
            shard = arguments.value(Self.shard)
            workers = arguments.value(Self.workers)
            partitions = arguments.value(Self.partitions)
            if workers != nil {
                for option in declaration.options where arguments.value(option.name) != nil || arguments.flags.contains(option.name) {
                    if case .refused(let why) = option.shards {
                        throw ScenarioError(path: option.name, message: "does not go with --workers: \(why)")
                    }
                }
            }
        } catch {
            PushSwarmCommand.printError("\(error)")
            return .badInput
        }
        guard let targetWords = PushSwarmCommand.targetArguments(arguments, clock: scenario.clock) else { return .badInput }
        let devicesHere = shard?.devices(of: scenario.devices, devicesPerSource: scenario.network.devicesPerSourceAddress).count ?? scenario.devices
        if let refusal = MemoryEstimate(scenario, devices: devicesHere).refusal(under: .current(), processes: workers ?? 1) {
            PushSwarmCommand.printError(refusal)
            return .badInput
        }
        // Listeners: real time only. With --workers this process serves the whole run's metrics
        // and dashboard (its shards stream it their progress); pushes reach one process's devices.
        for (option, why) in [
            ("--push-listen", "a service sends pushes in real time"), ("--metrics-listen", "a simulated run is over before anything could scrape it"),
            ("--dashboard", "a simulated run is over before a page could show it; open its report.html"),
        ]
        where arguments.value(option) != nil {
            guard scenario.clock == .wall else {
                PushSwarmCommand.printError("\(option) needs --clock wall (\(why))")
                return .badInput
            }
        }
        // The run's live listeners: each gets every progress snapshot.
        var listeners: [any LiveEndpoint] = []
        defer { for listener in listeners { listener.stop() } }
        let runID = arguments.value("--run-id") ?? makeRunID(scenario: scenario)
        let labels = MetricsEndpoint.RunLabels(scenario: scenario.name, runID: runID, shard: shard.map { "\($0.index)/\($0.count)" } ?? (workers == nil ? "1/1" : "all"))
        let offered: [(option: String, example: String, what: String, path: String, make: () -> any LiveEndpoint)] = [
            ("--metrics-listen", "127.0.0.1:9464", "metrics for Prometheus", "/metrics", { MetricsEndpoint(labels: labels) }),
            ("--dashboard", "127.0.0.1:8089", "live dashboard", "/", { Dashboard(scenario: scenario.name) }),
        ]
        for (option, example, what, path, make) in offered {
            guard let text = arguments.value(option) else { continue }
            guard let address = SocketAddress(parsing: text) else {
                PushSwarmCommand.printError("\(option): expected ADDRESS:PORT with a literal IP address, such as \(example); found \"\(text)\"")
                return .badInput
            }
            let listener = make()
            do {
                try listener.start(at: address)
            } catch {
                PushSwarmCommand.printError("\(option): cannot listen on \(text): \(error)")
                return .failure
            }
            listeners.append(listener)
            // With port 0 the system chose one: print the one it chose.
            let listening = SocketAddress(ip: address.ip, port: listener.port)
            if !arguments.flags.contains("--quiet") { print("\(what) at http://\(listening)\(path) while the run goes") }
        }
        // Each listener above listens now: a script reading the output through a pipe may go.
        SystemCalls.flushStandardOutput()
        let directory = arguments.value("--out") ?? "Reports/\(runID)"
        let line = arguments.flags.contains("--quiet") ? nil : ProgressLine()
        var onProgress: (@Sendable (RunProgress) -> Void)?
        let stream = arguments.flags.contains("--progress-json") ? LiveShards.Writer(scenario: scenario.name, clock: scenario.clock.rawValue) : nil
        if line != nil || !listeners.isEmpty || stream != nil {
            let live = listeners
            onProgress = { @Sendable progress in
                line?.update(progress)
                for listener in live { listener.publish(progress) }
                stream?.write(progress)
            }
        }
        if let workers {
            let code = await WorkersRun.main(scenario, workers: workers, runID: runID, directory: directory, arguments: arguments, onProgress: onProgress, listeners: listeners) { line?.finish() }
            await linger(listeners, arguments: arguments)
            return code
        }
        if let startAt, startAt > Date() {
            // Shards started one by one (by hand, by a scheduler) put their load on together.
            if !arguments.flags.contains("--quiet") { print("waiting until \(arguments.value(Self.startAt.name) ?? "") to start (\(Int(startAt.timeIntervalSinceNow.rounded(.up))) s)") }
            try? await Task.sleep(for: .seconds(startAt.timeIntervalSinceNow))
        }
        if let partitions, let note = Run.partitionCount(for: scenario, requested: partitions, usesBuiltInMocks: targetWords.isEmpty).note {
            PushSwarmCommand.printError("note: --partitions \(partitions): \(note)")
        }
        let result: RunResult
        if scenario.clock == .wall {
            guard let outcome = await runWall(scenario, arguments: arguments, targetWords: targetWords, shard: shard, partitions: partitions, onProgress: onProgress) else { return .badInput }
            result = outcome
        } else {
            let run = Run.simulated(scenario, shard: shard, partitions: partitions)
            run.onProgress = onProgress
            result = await run.run()
        }
        line?.finish()
        var summary = result.summary(runID: runID, version: PushSwarmCommand.version)
        summary.shard = shard.map { ($0.index, $0.count) }
        summary.thresholds = scenario.thresholds.map(\.text)
        summary.scenarioText = scenarioText
        publishFinal(summary, to: listeners)
        // A shard's part of the run is not the run: its thresholds are judged by `merge`.
        let code = report(summary, to: directory, thresholds: shard == nil ? scenario.thresholds : [], arguments: arguments)
        await linger(listeners, arguments: arguments)
        return code
    }

    /// The run's end for its live listeners: its final values (the last second's progress left
    /// out what came after it).
    static func publishFinal(_ summary: Summary, to listeners: [any LiveEndpoint]) {
        guard !listeners.isEmpty else { return }
        let elapsed = TimeSpan.seconds(summary.simulatedSeconds)
        let progress = RunProgress(elapsed: elapsed, duration: elapsed, metrics: summary.metrics, devices: summary.devices)
        for listener in listeners { listener.publish(progress) }
    }

    /// After the report, with `--metrics-listen`: serves the final values for `--metrics-linger`
    /// (15 s: a scrape interval), so that a scrape after the run's last second still comes; a
    /// Ctrl-C ends it, and a run stopped by one does not linger.
    static func linger(_ listeners: [any LiveEndpoint], arguments: Arguments) async {
        guard listeners.contains(where: { $0 is MetricsEndpoint }), Signals.interruptions == 0 else { return }
        let linger = arguments.value(metricsLinger) ?? .seconds(15)
        guard linger > .zero else { return }
        if !arguments.flags.contains("--quiet") {
            print("serving the final metrics for \(linger) (--metrics-linger; Ctrl-C ends it)")
        }
        // The report is printed and written: whoever reads the output through a pipe sees it now,
        // not when the linger ends.
        SystemCalls.flushStandardOutput()
        let end = Date().addingTimeInterval(linger.seconds)
        while Date() < end, Signals.interruptions == 0 {
            try? await Task.sleep(for: .milliseconds(min(100, max(1, Int(end.timeIntervalSinceNow * 1_000)))))
        }
    }

    /// A run id `--run-id` takes: what a directory name, a label value and a shell word can all
    /// hold as it is.
    static func isRunID(_ text: String) -> Bool {
        (1...100).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        } && text != "." && text != ".."
    }

    /// Writes the report files, prints the terminal report (or the summary's path with --quiet)
    /// and judges the thresholds: `run`'s and `merge`'s last step.
    static func report(_ summary: Summary, to directory: String, thresholds: [Threshold], arguments: Arguments) -> PushSwarmCommand.ExitCode {
        let summaryPath: String
        do {
            summaryPath = try ReportFiles.write(summary, to: directory)
        } catch {
            PushSwarmCommand.printError("cannot write the report to \(directory): \(error.localizedDescription)")
            print(TerminalReport.render(summary, reportPath: nil))
            return .failure
        }
        if arguments.flags.contains("--quiet") {
            print(summaryPath)
        } else {
            print(TerminalReport.render(summary, reportPath: summaryPath))
            print("HTML report written to \((directory as NSString).appendingPathComponent(ReportFiles.html))")
        }
        return judge(thresholds, summary: summary, junit: arguments.value("--junit"), quiet: arguments.flags.contains("--quiet"))
    }

    /// Prints each threshold's verdict, writes the JUnit file if asked: 99 when any failed.
    static func judge(_ thresholds: [Threshold], summary: Summary, junit: String?, quiet: Bool) -> PushSwarmCommand.ExitCode {
        if let junit {
            do {
                try Data(Threshold.junit(thresholds, summary: summary).utf8).write(to: URL(fileURLWithPath: junit))
            } catch {
                PushSwarmCommand.printError("cannot write \(junit): \(error.localizedDescription)")
                return .failure
            }
        }
        guard !thresholds.isEmpty else { return .success }
        var failed = 0
        if !quiet { print("\nThresholds") }
        for threshold in thresholds {
            let holds = threshold.holds(summary)
            if !holds { failed += 1 }
            if !quiet || !holds {
                print("  \(holds ? "ok  " : "FAIL") \(threshold.text)  (measured \(threshold.format(threshold.measure(summary))))")
            }
        }
        if failed > 0 {
            PushSwarmCommand.printError("\(failed) of \(thresholds.count) thresholds failed (exit 99)")
            return .thresholdsFailed
        }
        return .success
    }

    /// A wall-clock run: targets parsed, the socket plan checked, Ctrl-C wired to a clean stop.
    static func runWall(
        _ scenario: Scenario, arguments: Arguments, targetWords: [String], quiet: Bool = false, shard: Shard? = nil, partitions: Int? = nil,
        onProgress: (@Sendable (RunProgress) -> Void)? = nil
    ) async -> RunResult? {
        var targets: [String: TargetURL] = [:]
        for word in targetWords {
            var platform: String?
            var text = word
            if let equals = word.firstIndex(of: "="), !word[..<equals].contains(":") {
                platform = String(word[..<equals])
                text = String(word[word.index(after: equals)...])
            }
            guard let url = TargetURL(text), url.origin.scheme == "http" || url.origin.scheme == "https" else {
                PushSwarmCommand.printError("--target: expected an http:// or https:// URL, optionally as PLATFORM=URL; found \"\(word)\"")
                return nil
            }
            if let platform {
                guard scenario.platforms[platform] != nil else {
                    PushSwarmCommand.printError("--target: the scenario has no platform \"\(platform)\"; it has \(scenario.platforms.keys.sorted().joined(separator: ", "))")
                    return nil
                }
                targets[platform] = url
            } else {
                for name in scenario.platforms.keys where targets[name] == nil { targets[name] = url }
            }
        }
        var pushListen: SocketAddress?
        if let text = arguments.value("--push-listen") {
            guard let address = SocketAddress(parsing: text) else {
                PushSwarmCommand.printError("--push-listen: expected ADDRESS:PORT with a literal IP address, such as 127.0.0.1:9470; found \"\(text)\"")
                return nil
            }
            pushListen = address
        }
        let wall: WallRun
        do {
            var options = WallRun.Options(
                targets: targets, insecure: arguments.flags.contains("--insecure"), caFile: arguments.value("--ca-file"), shard: shard,
                partitions: partitions
            )
            options.pushListen = pushListen
            var warmUp = scenario.warmUp
            if arguments.flags.contains("--warm-up") { warmUp.enabled = true }
            if arguments.flags.contains("--no-warm-up") { warmUp.enabled = false }
            options.warmUp = warmUp.enabled ?? true ? warmUp : nil
            wall = try WallRun(scenario: scenario, options: options)
        } catch {
            PushSwarmCommand.printError(error.description)
            return nil
        }
        if !wall.plan.fits { PushSwarmCommand.printError("note: \(wall.plan.explanation)") }
        if !quiet && !arguments.flags.contains("--quiet") {
            let where_ = wall.mockServer.map { "the built-in mocks on 127.0.0.1:\($0.port)" } ?? targets.values.map(\.description).sorted().joined(separator: ", ")
            print("wall-clock run for \(scenario.duration) against \(where_); Ctrl-C stops early and still writes the report")
            if let receiver = wall.pushReceiver, let text = arguments.value("--push-listen") {
                print("pushes for the devices, FCM-shaped: POST http://\(text.hasSuffix(":0") ? String(text.dropLast(2)) + ":\(receiver.port)" : text)/v1/projects/PROJECT/messages:send")
            }
        }
        Signals.onInterrupt { wall.interrupt() }
        let talks = !quiet && !arguments.flags.contains("--quiet")
        let result = await wall.run(onProgress: onProgress) { warmUp in
            guard talks else { return }
            print("warm-up: installs from before the run register with the target, \(TerminalReport.format2(warmUp.rate)) a second, for at most \(warmUp.maxDuration) (--no-warm-up skips it)")
        }
        for (reason, detail) in wall.errorDetails.sorted(by: { $0.key < $1.key }) {
            var hint = ""
            if reason == "tlsVerification" { hint = " (for a self-signed staging host: --insecure, or --ca-file with its certificate)" }
            PushSwarmCommand.printError("transport error \(reason): \(detail)\(hint)")
        }
        return result
    }

    /// The options that override the scenario, read; their values were checked as the words were
    /// parsed (the declarations of `run` and `capacity`). Returns what a person should know: a
    /// `--duration` that ends the run before some of the scenario's campaigns leaves them out
    /// (a minute of a day's scenario is a fair thing to run; the campaign at 6 pm is not in it).
    static func applyOverrides(_ arguments: Arguments, to scenario: inout Scenario) -> [String] {
        var notes: [String] = []
        if let seed = arguments.value(SharedOptions.seed) { scenario.seed = seed }
        if let devices = arguments.value(SharedOptions.devices) { scenario.devices = devices }
        if let duration = arguments.value(SharedOptions.duration) {
            let after = scenario.campaigns.indices.filter { scenario.campaigns[$0].at > duration }
            if !after.isEmpty {
                let named = after.map { "\"\(scenario.campaigns[$0].name)\" at \(scenario.campaigns[$0].at) ($.campaigns[\($0)].at)" }
                notes.append("--duration \(arguments.value(SharedOptions.duration.name) ?? "") ends the run before \(after.count == 1 ? "a campaign" : "\(after.count) campaigns"), left out: \(named.joined(separator: ", "))")
            }
            scenario.duration = duration
        }
        if let clock = arguments.value(SharedOptions.clock) { scenario.clock = clock }
        if let seconds = arguments.value(start) {
            scenario.startUnixSeconds = seconds
            scenario.startIsExplicit = true
        }
        if let count = arguments.value(SharedOptions.maxWaiting) {
            scenario.maximumWaiting = count
            let perSource = max(1, scenario.network.devicesPerSourceAddress)
            let addresses = (scenario.devices + perSource - 1) / perSource
            if count < addresses {
                notes.append("--max-waiting \(count) is below the fleet's \(addresses) NAT addresses: \(addresses - count) of them hold no waiting request at a time, and their open-model arrivals are shed")
            }
        }
        return notes
    }

    /// `20261121-140502`: now, in UTC, for run ids.
    static func timestamp() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        return formatter.string(from: Date())
    }

    /// `quickstart-20261121-140502-s1`, made unique within Reports/ if two runs share a second.
    static func makeRunID(scenario: Scenario) -> String {
        let base = "\(scenario.name)-\(timestamp())-s\(scenario.seed)"
        var candidate = base
        var suffix = 2
        while FileManager.default.fileExists(atPath: "Reports/\(candidate)") {
            candidate = "\(base)-\(suffix)"
            suffix += 1
        }
        return candidate
    }
}
