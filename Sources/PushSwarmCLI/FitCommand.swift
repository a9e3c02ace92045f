import Foundation
import PushSwarmCore
import PushSwarmMetrics
import PushSwarmPlatforms
import PushSwarmReplay

/// `pushswarm fit LOG... [--out FILE] [--check]`: reads a push platform's access logs, prints
/// the load they recorded, writes the scenario fitted to them, and holds its simulated run
/// against the log.
enum FitCommand: Command {
    static let declaration = CommandDeclaration(
        synopsis: "pushswarm fit LOG... [--out FILE] [--check] [--report DIR] [--format combined|json|alb] [--nginx-format DEF] [--json-fields F=NAME,...]",
        about: """
            Reads access logs of a push platform's ingestion (gzip-compressed or plain) and prints the
            load they recorded: requests by operation of the five platforms and by status, 429s, the
            peak second and minute, the storm of 429s, requests per client address, and the paths no
            platform serves. A line that does not read is counted and the first few are shown; when
            most lines do not read, fit exits 2 naming the first. Several edge nodes' logs are read
            together, each node's clock offset from the first's measured and removed. With --out it
            writes the scenario fitted to the log (network, per-address limit, retry rule, campaigns,
            open workload), every number explained in its fit section; with --check it runs that
            scenario in simulated time and prints it side by side with the log, and exits 99 where it
            misses the log's figures. See docs/incident-replay.md.
            """,
        options: [
            OptionDeclaration("--out", "FILE", "Write the fitted scenario (JSON) to FILE."),
            OptionDeclaration(
                "--check", nil,
                """
                Run the fitted scenario in simulated time and print its requests, 429s, peaks, storm
                and attempts per request beside the log's; its report goes to Reports/ (--report DIR).
                Exits 99 where requests miss by over 5 %, the 429 share by 3 points, the busiest
                minute by 10 % or the drain by 20 %, naming what the fit could not see.
                """
            ),
            OptionDeclaration("--report", "DIR", "Where --check writes the simulated run's report (default Reports/fit-check-TIME)."),
            OptionDeclaration(
                "--format", "F",
                """
                combined (nginx's default format; the default), json (JSON lines) or alb
                (AWS Application Load Balancer).
                """,
                check: OptionDeclaration.oneOf(["combined", "json", "alb"])
            ),
            OptionDeclaration(
                "--nginx-format", "DEF",
                """
                The log's nginx log_format definition, such as
                '$remote_addr [$time_local] "$request" $status $request_time $msec'.
                """,
                check: { definition in
                    do {
                        _ = try NginxLogFormat(definition)
                        return nil
                    } catch { return "\(error)" }
                }
            ),
            OptionDeclaration(
                "--json-fields", "F=NAME,...",
                """
                JSON lines: the names of the fields time, address, request, method, path,
                status and duration, where they are not the usual ones.
                """,
                check: { text in
                    do {
                        _ = try JSONLogFields(parsing: text)
                        return nil
                    } catch { return "\(error)" }
                }
            ),
        ]
    )

    static func run(_ arguments: Arguments) async -> PushSwarmCommand.ExitCode {
        let files = arguments.positionals
        guard !files.isEmpty else {
            PushSwarmCommand.printError("fit takes the access logs to read\n\(usage)")
            return .badInput
        }
        let format: AccessLogFormat
        do {
            if let definition = arguments.value("--nginx-format") {
                format = .nginx(try NginxLogFormat(definition))
            } else if let fields = arguments.value("--json-fields") {
                format = .jsonLines(try JSONLogFields(parsing: fields))
            } else {
                switch arguments.value("--format") ?? "combined" {
                case "json": format = .jsonLines(JSONLogFields())
                case "alb": format = .alb
                default: format = .combined
                }
            }
        } catch {
            PushSwarmCommand.printError("\(error)")
            return .badInput
        }
        let operations = LogOperations(platforms: PlatformRegistry.all)
        var reader = AccessLogReader(format: format)
        // One profile a file (an edge node's log each), merged on the first's clock below.
        var profiles: [LogProfile] = []
        let budget = memoryBudget(under: .current())
        var overBudget = false
        for file in files where !overBudget {
            var profile = LogProfile()
            let before = profiles.reduce(0) { $0 + $1.estimatedBytes }
            do {
                try reader.read(file) { (record: AccessLogRecord) -> Bool in
                    profile.add(record, operation: operations.operation(method: record.method, path: record.path))
                    // Weighed every 4,096 requests: the estimate is a few additions.
                    if profile.kept & 4_095 == 0, let budget, before + profile.estimatedBytes > budget.bytes { overBudget = true }
                    return !overBudget
                }
            } catch {
                PushSwarmCommand.printError("\(file): \(error)")
                return .badInput
            }
            profiles.append(profile)
        }
        if overBudget, let budget {
            let kept = profiles.reduce(0) { $0 + $1.kept }
            let addresses = TerminalReport.group(UInt64(profiles.reduce(into: Set<String>()) { $0.formUnion($1.byAddress.keys) }.count))
            PushSwarmCommand.printError(
                "the logs hold more than fit can keep in memory: \(TerminalReport.group(UInt64(kept))) requests from \(addresses) addresses, read so far, "
                    + "take about \(MemoryEstimate.format(profiles.reduce(0) { $0 + $1.estimatedBytes })), over the \(MemoryEstimate.format(budget.bytes)) it may use (\(budget.why)). "
                    + "Give it the incident's window alone (the minutes around the storm: a few million requests), or run it where more memory is free."
            )
            return .badInput
        }
        // Each node's requests in time order, then merged on the first's clock; taken out of the
        // array as they are, so that none is held twice.
        var profile = profiles.isEmpty ? LogProfile() : profiles.removeFirst()
        profile.sortByTime()
        var clocks: [String] = []
        for file in files.dropFirst() where !profiles.isEmpty {
            var other = profiles.removeFirst()
            other.sortByTime()
            let offset = ClockOffset.measure(other, against: profile)
            clocks.append(Self.describe(offset, of: file, against: files[0]))
            profile.merge(other, shiftedBy: offset?.microseconds ?? 0)
            profile.sortByTime()
        }
        if reader.records == 0 || reader.unreadCount * 2 > reader.lines {
            let first = reader.unread.first.map { "; the first: \($0)" } ?? ""
            PushSwarmCommand.printError("\(reader.unreadCount) of \(reader.lines) lines are not access log records in this format\(first)")
            return .badInput
        }
        let limiter = profile.fitLimiter()
        print(Self.render(profile, limiter: limiter, reader: reader, files: files))
        for line in clocks { print(line) }
        guard arguments.value("--out") != nil || arguments.flags.contains("--check") else { return .success }
        return await FitCheck.fitAndCheck(profile, limiter: limiter, reader: reader, files: files, arguments: arguments)
    }

    /// What the requests `fit` keeps may take: half of what the process may use (the fits and the
    /// simulated `--check` need room besides), by the tightest of `ulimit -v` (less what the
    /// runtime reserves), the container's limit and the memory available; nil when none is known.
    static func memoryBudget(under limits: MemoryEstimate.Limits) -> (bytes: Int, why: String)? {
        var candidates: [(Int, String)] = []
        if let space = limits.addressSpace { candidates.append((space - MemoryEstimate.reservedAddressSpace - MemoryEstimate.baseBytes, "ulimit -v \(space / 1_024)")) }
        if let cgroup = limits.cgroup { candidates.append((cgroup - MemoryEstimate.baseBytes, "the container's memory.max")) }
        if let available = limits.available { candidates.append((available - MemoryEstimate.baseBytes, "the machine's MemAvailable")) }
        guard let tightest = candidates.min(by: { $0.0 < $1.0 }) else { return nil }
        return (max(0, tightest.0) / 2, "half of what \(tightest.1) leaves")
    }

    /// What `fit` says of a node's clock: its offset from the first log's, removed, or why none is.
    static func describe(_ offset: ClockOffset?, of file: String, against reference: String) -> String {
        guard let offset else {
            return "clock of \(file): no offset measured against \(reference) (fewer than \(ClockOffset.fewestCrossings) 429s whose address went on in the other log); "
                + "none removed, and none matters where each address's requests are in one log (addresses pinned to a node, or one node's logs one after another)"
        }
        let milliseconds = String(format: "%+.0f", Double(offset.microseconds) / 1_000)
            + (offset.standardError.map { String(format: " ± %.0f", Double($0) / 1_000) } ?? "")
        return "clock of \(file): \(milliseconds) ms against \(reference)'s (from the retries of \(TerminalReport.group(UInt64(offset.crossings))) 429s whose address went on in the other log), removed from its times"
    }

    static func render(_ profile: LogProfile, limiter fitted: LimiterFit?, reader: AccessLogReader, files: [String]) -> String {
        var lines: [String] = []
        let group = { (value: Int) in TerminalReport.group(UInt64(value)) }
        lines.append("\(files.count == 1 ? files[0] : "\(files.count) files"): \(group(reader.lines)) lines, \(group(reader.records)) read, \(group(reader.unreadCount)) not")
        for unread in reader.unread { lines.append("  not read: \(unread)") }
        if let first = profile.first, let last = profile.last {
            let span = Double(last - first) / 1_000_000
            lines.append("from \(RFC3339.format(unixMicroseconds: first, offsetSeconds: 0, utcAsZ: true)) to \(RFC3339.format(unixMicroseconds: last, offsetSeconds: 0, utcAsZ: true)) (\(String(format: "%.0f", span)) s)")
        }
        lines.append("")
        let heading: [String] = ["operation".padding(toLength: 32, withPad: " ", startingAt: 0), "requests".leftPadded(10), "2xx".leftPadded(10), "429".leftPadded(8), "other".leftPadded(8)]
        lines.append(heading.joined())
        for (name, operation) in profile.operations.sorted(by: { $0.key < $1.key }) {
            let ok = operation.byStatus.filter { (200..<300).contains($0.key) }.values.reduce(0, +)
            let other = operation.requests - ok - operation.rateLimited
            let columns: [String] = [
                name.padding(toLength: 32, withPad: " ", startingAt: 0), group(operation.requests).leftPadded(10), group(ok).leftPadded(10),
                group(operation.rateLimited).leftPadded(8), group(other).leftPadded(8),
            ]
            lines.append(columns.joined())
        }
        lines.append("")
        let share = profile.requests > 0 ? Double(profile.rateLimited) / Double(profile.requests) * 100 : 0
        lines.append("requests \(group(profile.requests)) · 429s \(group(profile.rateLimited)) (\(String(format: "%.1f", share)) %)")
        if profile.http2Requests + profile.http1Requests > 0 {
            lines.append("protocols: HTTP/2 \(group(profile.http2Requests)) · HTTP/1.x \(group(profile.http1Requests))")
        }
        if let peak = profile.peakSecond { lines.append("peak second \(RFC3339.format(unixMicroseconds: peak.second * 1_000_000, offsetSeconds: 0, utcAsZ: true)): \(group(peak.requests)) requests") }
        if let peak = profile.peakMinute { lines.append("peak minute \(RFC3339.format(unixMicroseconds: peak.minute * 1_000_000, offsetSeconds: 0, utcAsZ: true)): \(group(peak.requests)) requests") }
        if let storm = profile.storm {
            lines.append("storm of 429s from \(RFC3339.format(unixMicroseconds: storm.start * 1_000_000, offsetSeconds: 0, utcAsZ: true)), \(storm.end - storm.start + 1) s to its last 429")
            let excerpt = profile.excerpt
            if let opening = excerpt.opening {
                lines.append("the log begins within the storm (its first seconds refused \(group(opening)) requests a second, its busiest \(group(excerpt.busiest))): its first requests' earlier attempts are not in it, and some of their retries are taken for first attempts")
            }
            if let closing = excerpt.closing {
                lines.append("the log ends within the storm (its last seconds refused \(group(closing)) requests a second, its busiest \(group(excerpt.busiest))): the storm's end, and the retries after the log's last line, are not in it")
            }
        }
        if let limit = fitted, limit.refusals < LimiterFit.fewestRefusals {
            lines.append("per-address limit: too few 429s to fit one (\(limit.refusals))")
        } else if let limit = fitted, limit.agreement < LimiterFit.convincingAgreement {
            let agreement = String(format: "%.1f", limit.agreement * 100)
            lines.append("per-address limit: the 429s do not follow one per-address leaky bucket (the best, \(Self.rate(limit.perSecond)) burst \(limit.burst), tells \(agreement) % of \(group(limit.requests)) requests)")
        } else if let limit = fitted {
            let mode = limit.nodelay.map { $0 ? ", nodelay" : ", delaying the excess (no nodelay)" } ?? ""
            let agreement = String(format: "%.1f", limit.agreement * 100)
            lines.append("per-address limit: \(Self.rate(limit.perSecond)), burst \(limit.burst)\(mode) (nginx limit_req; it tells \(agreement) % of \(group(limit.requests)) requests of the \(limit.addresses) addresses refused most)")
        } else if profile.rateLimited == 0 {
            lines.append("per-address limit: none reached (no 429)")
        }
        let counts = profile.perAddressCounts.sorted()
        if let most = counts.last {
            lines.append("client addresses \(group(counts.count)) · requests per address: median \(group(counts[counts.count / 2])), most \(group(most))")
        }
        if profile.unknownRequests > 0 {
            let top = profile.unknownPaths.sorted { $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key) }.prefix(5)
            lines.append("paths no platform serves: \(group(profile.unknownRequests)) requests (" + top.map { "\(LogValues.printable($0.key)) \(group($0.value))" }.joined(separator: ", ")
                + (profile.unknownPaths.count > 5 || profile.otherUnknownPaths > 0 ? ", …" : "") + ")")
        }
        return lines.joined(separator: "\n")
    }
}

extension FitCommand {
    /// A rate as nginx's configuration writes it (`8r/s`, `480r/m`), spaced: the scenario's.
    static func rate(_ perSecond: Double) -> String {
        ScenarioFit.rate(perSecond).replacingOccurrences(of: "/", with: " r/")
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String { count >= width ? self : String(repeating: " ", count: width - count) + self }
}
