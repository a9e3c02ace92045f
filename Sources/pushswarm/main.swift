import Foundation
import PushSwarmCLI

// The executable is this line: the commands, their options and their logic live in PushSwarmCLI,
// where tests call them in-process.
exit(await PushSwarmCommand.main(Array(CommandLine.arguments.dropFirst())).rawValue)
