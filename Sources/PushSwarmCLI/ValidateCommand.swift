import PushSwarmCore

enum ValidateCommand: Command {
    static let declaration = CommandDeclaration(
        synopsis: "pushswarm validate FILE",
        about: """
            Checks a scenario file (JSON; see docs/scenario.md) without running it. Prints what the
            scenario describes when it is valid; otherwise the JSON path of the first problem and what
            is wrong with it, and exits 2.
            """,
        options: []
    )

    static func run(_ arguments: Arguments) -> PushSwarmCommand.ExitCode {
        guard let scenario = PushSwarmCommand.loadScenarioArgument(arguments, command: "validate", usage: usage) else { return .badInput }
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
        for overrun in scenario.perAddressOverruns {
            PushSwarmCommand.printError("warning: \(overrun.warning(devices: scenario.devices))")
        }
        return .success
    }
}
