import PushSwarmCore
import PushSwarmNet

enum ValidateCommand: Command {
    static let declaration = CommandDeclaration(
        synopsis: "pushswarm validate FILE [--print]",
        about: """
            Checks a scenario file (JSON; see docs/scenario.md) without running it. Prints what the
            scenario describes when it is valid; otherwise the JSON path of the first problem and what
            is wrong with it, and exits 2.
            """,
        options: [
            OptionDeclaration("--print", nil, """
                Print the scenario as PushSwarm reads it instead, every setting spelt out (defaults
                too): JSON that runs the same, to see what a default is or to pin one.
                """),
        ]
    )

    static func run(_ arguments: Arguments) -> PushSwarmCommand.ExitCode {
        guard let scenario = PushSwarmCommand.loadScenarioArgument(arguments, command: "validate", usage: usage) else { return .badInput }
        if arguments.flags.contains("--print") {
            print(ScenarioEncoder().text(scenario), terminator: "")
            return .success
        }
        let groups = scenario.groups.map { "\($0.name) (\($0.platform), \($0.os.rawValue))" }.joined(separator: ", ")
        let estimate = MemoryEstimate(scenario, devices: scenario.devices)
        if let refusal = estimate.refusal(under: .current()) {
            // What `run` would refuse, `validate` refuses too, with the same words.
            PushSwarmCommand.printError(refusal)
            return .badInput
        }
        print("\(arguments.positionals[0]): valid scenario \"\(scenario.name)\": \(scenario.devices) devices for \(scenario.duration), groups \(groups), \(scenario.campaigns.count) campaign(s), \(scenario.clock.rawValue) clock")
        let space = estimate.bytes + MemoryEstimate.reservedAddressSpace
        print("memory: about \(MemoryEstimate.format(estimate.bytes)) as one process (\(estimate.devices) devices at \(MemoryEstimate.bytesPerDevice) bytes, "
            + "up to \(estimate.waiting) waiting requests at \(MemoryEstimate.bytesPerWaitingRequest) bytes); \(MemoryEstimate.format(space)) of address space "
            + "with what the runtime reserves: it runs under ulimit -v \((space + 1_023) / 1_024) or more")
        print(sockets(scenario, plan: WallRun.plan(for: scenario, devices: scenario.devices, inProcessMock: true)))
        for overrun in scenario.perAddressOverruns {
            PushSwarmCommand.printError("warning: \(overrun.warning(devices: scenario.devices))")
        }
        return .success
    }

    /// What a wall run of it would hold open at most, against the process's file limit: fits,
    /// or how many processes (`--workers`, `--shard`) share it out.
    static func sockets(_ scenario: Scenario, plan: WallRun.SocketPlan) -> String {
        let whose = scenario.network.connections == .perDevice ? "one per install (network.connections: perDevice)" : "the address pools' (network.connections: perAddress)"
        let sockets = plan.webSockets > 0 ? " and \(plan.webSockets) WebSockets" : ""
        let head = "sockets in wall time: at most \(plan.clientConnections) HTTP connections, \(whose),\(sockets) at once; "
            + "with the built-in mock in the process (both ends) that is \(plan.needed) files of the \(plan.fileLimit) it may open (ulimit -n)"
        guard !plan.fits else { return head + ": fits" }
        let perProcess = max(1, plan.fileLimit - plan.reserved)
        let processes = (plan.needed - plan.reserved + perProcess - 1) / perProcess
        return head + ": OVER. A run caps its connections at \(plan.connectionBudget) (a device over the cap waits, and the wait counts in its latency). "
            + "To hold them all, run it as \(processes) or more processes, each with its own limit: --workers \(processes) on a machine with the cores, "
            + "or --shard I/\(processes) on as many machines; or start `pushswarm mock` as its own process and pass --target (one end each)."
    }
}
